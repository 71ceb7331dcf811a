"""gen report: one self-contained page and its JSON from one model, checked in a real browser."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from generator.cli import run
from tests.helpers import EXAMPLES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _report(tmp_path, spec, *extra):
    out = tmp_path / "report.html"
    assert run(["report", str(spec), "-o", str(out), *extra]) == 0
    return out


def test_json_and_page_come_from_one_model(tmp_path, capsys):
    spec = EXAMPLES / "s1-16xh20-pd.yaml"
    assert run(["report", str(spec), "--format", "json"]) == 0
    model = json.loads(capsys.readouterr().out)
    assert model["summary"]["gpusUsed"] == 24 and model["summary"]["gpusAvailable"] == 24
    gpus = [g for role in model["topology"]["roles"] for n in role["nodes"]
            for p in n["pods"] for g in p["gpus"]]
    assert len(gpus) == 24
    assert [g["label"] for g in gpus[8:12]] == ["DP0", "DP1", "DP2", "DP3"]
    mem = {m["role"]: m for m in model["memory"]}
    assert mem["decode"]["kvTokensPerRank"] > 1_000_000 and mem["decode"]["fits"]
    page = _report(tmp_path, spec).read_text()
    assert mem["decode"]["kvTokensText"] in page and "http://" not in page.split("<svg")[0] \
        .replace("http://www.w3.org", "")
    assert "<script src" not in page and "<link" not in page   # self-contained


def test_rejected_spec_still_reports_findings(tmp_path, capsys):
    """The page is written (it shows why), and the exit code says the spec was rejected."""
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  model: {weights: bf16}\n")
    assert run(["report", str(EXAMPLES / "s2-32xh20-ep32-fp8.yaml"), "-f", str(overlay),
                "-o", str(tmp_path / "r.html")]) == 1
    page = (tmp_path / "r.html").read_text()
    assert "SIZ003" in page and "does not fit" in page and "rejected" in page


def test_large_topology_is_aggregated(tmp_path, capsys):
    assert run(["report", str(EXAMPLES / "s3-v4pro-pd-dp32.yaml"), "--format", "json"]) == 0
    model = json.loads(capsys.readouterr().out)
    decode = next(r for r in model["topology"]["roles"] if r["name"] == "decode")
    assert len(decode["nodes"]) == 4 and decode["more"] is None
    overlay = tmp_path / "big.yaml"
    # 192 ranks (384 experts / 192 = 2 per rank: SGLang needs EP to divide the experts, EP003).
    overlay.write_text("spec:\n  nodePools:\n    decode-h20: {nodes: 24}\n  roles:\n"
                       "    - name: decode\n      parallel: {data: 192}\n      sizing: {concurrency: 256}\n")
    assert run(["report", str(EXAMPLES / "s3-v4pro-pd-dp32.yaml"), "-f", str(overlay),
                "--format", "json"]) == 0
    model = json.loads(capsys.readouterr().out)
    decode = next(r for r in model["topology"]["roles"] if r["name"] == "decode")
    assert len(decode["nodes"]) == 8 and decode["more"]["label"] == "+16 more nodes"


def test_plan_request_report(tmp_path):
    page = _report(tmp_path, EXAMPLES / "plan" / "h20-16-seed000.yaml").read_text()
    assert 'id="plan"' in page and "prefill compute" in page


#: Measures what the browser laid out (injected into a copy of the page: the shipped page holds
#: no test code).
SELF_CHECK = """<script>
window.addEventListener("load", function () {
  var gpus = document.querySelectorAll("#topology g.gpu rect");
  var drawn = 0;
  gpus.forEach(function (r) { if (r.getBBox().width > 0) { drawn++; } });
  var bars = [];
  document.querySelectorAll(".membar").forEach(function (m) {
    var w = 0;
    m.querySelectorAll("rect.seg").forEach(function (r) { w += r.getBBox().width; });
    bars.push(m.dataset.role + ":" + Math.round(w));
  });
  document.body.setAttribute("data-gpus-drawn", String(drawn));
  document.body.setAttribute("data-bars", bars.join(","));
});
</script>
"""


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package "
                    "chromium; .ci/run installs it)")
@pytest.mark.parametrize("name,gpus", [("s1-16xh20-pd", 24), ("s3-v4pro-pd-dp16", 32)])
def test_page_renders_in_headless_chromium(tmp_path, name, gpus):
    shipped = _report(tmp_path, EXAMPLES / f"{name}.yaml")
    assert "<script" not in shipped.read_text()
    page = tmp_path / f"{name}-checked.html"
    page.write_text(shipped.read_text().replace("</body>", SELF_CHECK + "</body>"))
    profile = tmp_path / "profile"
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120, check=True)
    body = dom.stdout.split("<body", 1)[1].split(">", 1)[0]
    assert f'data-gpus-drawn="{gpus}"' in body, body       # every GPU cell laid out
    bars = dict(b.split(":") for b in body.split('data-bars="')[1].split('"')[0].split(","))
    assert bars and all(int(w) > 600 for w in bars.values()), bars  # stacked bars drawn
    shot = tmp_path / f"{name}.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}",
                    "--window-size=1500,1300", page.as_uri()], capture_output=True, timeout=120,
                   check=True)
    assert shot.stat().st_size > 20_000


def test_page_shows_placement_gangs_and_the_operational_objects(tmp_path, capsys):
    """#12 item 6: per role its domain, gang and scaling; the monitoring objects, dashboard,
    autoscalers and budgets rendered beside the engines."""
    golden = EXAMPLES.parent / "tests" / "golden"
    assert run(["report", str(EXAMPLES / "s1-16xh20-pd.yaml"),
                "-f", str(golden / "s1-kueue" / "kueue.yaml"), "--format", "json"]) == 0
    model = json.loads(capsys.readouterr().out)
    dec = next(p for p in model["placement"] if p["role"] == "decode")
    assert dec["nodes"] == 2 and "one Workload per group" in dec["gang"]
    assert "example.com/rack" in dec["domain"]
    spec = EXAMPLES / "s1-16xh20-pd.yaml"
    page = _report(tmp_path, spec, "-f", str(golden / "s1-autoscaling" / "autoscaling.yaml"),
                   "-f", str(golden / "s1-monitoring" / "monitoring.yaml")).read_text()
    assert 'id="placement"' in page and "KEDA 1-3 instances on waiting (target 8)" in page
    for kind in ("PodMonitor", "ServiceMonitor", "PrometheusRule", "ScaledObject",
                 "PodDisruptionBudget"):
        assert f"<td>{kind}</td>" in page
    assert "Grafana dashboard" in page and "CapacityQueue" in page

"""Runtime semantics across roles, pods and restarts: what makes a rendered deployment start,
serve and recover, beyond what the engines' parsers check (issue "Output that serves").

Each test names the engine behaviour it guards (engine file and release).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from generator.engines import vllm, vllm_ranks
from tests.helpers import EXAMPLES, ROOT, lws_templates, render_spec

S1 = EXAMPLES / "s1-16xh20-pd.yaml"
S3 = EXAMPLES / "s3-v4pro-pd-dp16.yaml"


def _launch(plan, role: str):
    return next(r for r in plan.roles if r.name == role).launch


def _doc(files: dict[str, str], name: str) -> dict:
    return yaml.safe_load(files[name])


def _opt(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


# --- cross-role: prefill carries decode's speculative config ---------------------------------

def test_prefill_carries_the_decode_speculative_config():
    """vLLM >= 0.28.0 hashes the EAGLE/MTP config into the NIXL handshake
    (nixl/metadata.py _get_speculative_compatibility_factors): S1's decode runs MTP, so its
    prefill must too, or every KV transfer is refused."""
    _, plan, _ = render_spec(S1)
    prefill, decode = _launch(plan, "prefill").argv(0), _launch(plan, "decode").argv(0)
    assert _opt(prefill, "--speculative-config") == _opt(decode, "--speculative-config") \
        == '{"method":"mtp","num_speculative_tokens":1}'


def test_first_vllm_release_hashing_the_speculative_config():
    """NIXL_CONNECTOR_VERSION 5 in 0.27.1, 7 in 0.28.0 (read from each release's sdist)."""
    assert vllm.dialect("0.33.0").nixl_hash_covers_speculative
    assert vllm.dialect("0.28.0").nixl_hash_covers_speculative
    assert not vllm.dialect("0.27.1").nixl_hash_covers_speculative


def test_sglang_prefill_sends_draft_hidden_states():
    """SGLang decode with EAGLE/MTP needs the draft hidden states a speculating prefill sends
    (python/sglang/srt/disaggregation/prefill.py): prefill gets the same EAGLE flags."""
    _, plan, _ = render_spec(S3)
    prefill, decode = _launch(plan, "prefill").argv(0), _launch(plan, "decode").argv(0)
    for flag in ("--speculative-algorithm", "--speculative-num-steps",
                 "--speculative-eagle-topk", "--speculative-num-draft-tokens"):
        assert _opt(prefill, flag) == _opt(decode, flag) is not None, flag


# --- lifecycle: router, rendezvous, probes ---------------------------------------------------

@pytest.mark.parametrize("spec,command", [(S1, ["vllm-router"]), (S3, ["smg", "launch"])])
def test_router_waits_for_the_engines(spec: Path, command: list[str]):
    """vllm-router and smg bind their port only once the workers are healthy
    (worker_startup_timeout_secs): the router waits the slowest role's whole startup budget, and
    its startup probe outlasts that, so the kubelet never kills a router that is waiting."""
    checked, plan, files = render_spec(spec)
    router = _doc(files, "router-deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert router["command"] == command
    args = router["args"]
    wait_s = int(args[args.index("--worker-startup-timeout-secs") + 1])
    budgets = []
    for role in ("prefill", "decode"):
        engine = lws_templates(_doc(files, f"{role}-lws.yaml"))["leader"]
        startup = engine["spec"]["containers"][0]["startupProbe"]
        budgets.append(startup["periodSeconds"] * startup["failureThreshold"])
    assert budgets == [h.startup_s for h in checked.host]
    assert wait_s == max(budgets) > 1500   # 20 min warm-up + 5 min rendezvous + the load
    probe = router["startupProbe"]
    assert probe["tcpSocket"] == {"port": "http"}
    assert probe["periodSeconds"] * probe["failureThreshold"] > wait_s


def _launcher(files: dict[str, str], name: str, template: str) -> str:
    lws = _doc(files, name)["spec"]["leaderWorkerTemplate"][template]
    return lws["spec"]["containers"][0]["command"][2]


def _run_launcher(script: str, tmp: Path, env: dict[str, str], sleep: str = "0.05",
                  no_dns: bool = False) -> subprocess.CompletedProcess:
    """Run a rendered launcher with stub ``vllm`` (records its argv) and a fast ``sleep``
    (``no_dns``: a ``getent`` that resolves nothing). The /dev/shm clean-up line is removed (it
    must not touch this machine's /dev/shm)."""
    cleanup = "find /dev/shm -mindepth 1 -delete 2>/dev/null || true"
    assert cleanup in script
    script = script.replace(cleanup, ":")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text(f'#!/bin/sh\necho "$@" > {tmp}/argv\n')
    (bin_dir / "sleep").write_text(f"#!/bin/sh\nexec /bin/sleep {sleep}\n")
    (bin_dir / "python3").symlink_to(sys.executable)
    stubs = ["vllm", "sleep"]
    if no_dns:
        (bin_dir / "getent").write_text("#!/bin/sh\nexit 2\n")
        stubs.append("getent")
    for f in stubs:
        (bin_dir / f).chmod(0o755)
    run_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", **env}
    return subprocess.run(["/bin/sh", "-c", script], env=run_env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_worker_waits_for_the_leader_rendezvous_port(tmp_path: Path):
    """A headless vLLM engine gives up 5 minutes after dialling a leader that is not listening
    (HANDSHAKE_TIMEOUT_MINS, vllm/v1/engine/core.py): the worker launcher waits, bounded, until
    the leader's DP RPC port accepts connections, then starts with the leader's IP."""
    _, plan, files = render_spec(S1)
    port = _launch(plan, "decode").rendezvous_port
    assert port == vllm_ranks.DP_RPC_PORT
    script = _launcher(files, "decode-lws.yaml", "workerTemplate")
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def open_later():
        time.sleep(0.5)   # the first attempts are refused
        listener.bind(("127.0.0.1", port))
        listener.listen(8)
    threading.Thread(target=open_later, daemon=True).start()
    try:
        res = _run_launcher(script, tmp_path, {"MOEGEN_POD_INDEX": "1", "MOEGEN_POD_IP": "127.0.0.2",
                                               "MOEGEN_LEADER_HOST": "127.0.0.1"})
    finally:
        listener.close()
    assert res.returncode == 0, res.stderr
    argv = (tmp_path / "argv").read_text().split()
    assert "--headless" in argv and _opt(argv, "--data-parallel-address") == "127.0.0.1"
    assert _opt(argv, "--data-parallel-start-rank") == "8"


def test_worker_never_starts_without_a_leader_address(tmp_path: Path):
    """An unresolvable leader ends in a non-zero exit after the bounded wait, never in an empty
    --data-parallel-address (shared field failure: `Invalid zmq path: tcp://:29550`)."""
    _, _, files = render_spec(S1)
    script = _launcher(files, "decode-lws.yaml", "workerTemplate")
    res = _run_launcher(script, tmp_path, {"MOEGEN_POD_INDEX": "1", "MOEGEN_POD_IP": "127.0.0.2",
                                           "MOEGEN_LEADER_HOST": "leader.invalid"},
                        sleep="0", no_dns=True)
    assert res.returncode != 0
    assert "did not accept connections on port 29550" in res.stderr
    assert not (tmp_path / "argv").exists()


def test_sglang_probes_outlast_the_health_generation():
    """SGLang's /health runs a one-token generation and waits up to SGLANG_HEALTH_CHECK_TIMEOUT
    (http_server.py health_generate): the value is pinned and every probe waits longer, so a
    busy engine is not restarted (five liveness failures recreate a whole LWS group)."""
    _, plan, files = render_spec(S3)
    env = dict(next(e for e in plan.env_files if e.role == "decode").items)
    health_s = int(env["SGLANG_HEALTH_CHECK_TIMEOUT"])
    leader = lws_templates(_doc(files, "decode-lws.yaml"))["leader"]
    container = leader["spec"]["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["timeoutSeconds"] > health_s, probe


def test_every_nixl_side_channel_port_is_declared():
    """vLLM opens VLLM_NIXL_SIDE_CHANNEL_PORT + DP rank per engine (nixl/base_scheduler.py):
    S1's decode worker pod hosts DP ranks 8-15 and runs with base 5592 (5600 - 8), so both
    templates declare what their engines bind, 5600-5607 (issue #20 item 8)."""
    _, _, files = render_spec(S1)
    lws = _doc(files, "decode-lws.yaml")["spec"]["leaderWorkerTemplate"]
    ports = {t: {p["containerPort"] for p in lws[t]["spec"]["containers"][0]["ports"]
                 if p["name"].startswith("nixl")}
             for t in ("leaderTemplate", "workerTemplate")}
    assert ports == {"leaderTemplate": set(range(5600, 5608)),
                     "workerTemplate": set(range(5600, 5608))}


def test_pod_per_rank_groups_restart_together():
    """One pod per DP rank is an LWS group (RecreateGroupOnPodRestart), never loose pods: the DP
    handshake happens only at start (vllm/v1/engine/utils.py), so one restarted rank could not
    rejoin a running group."""
    _, _, files = render_spec(S1, [ROOT / "tests/golden/s1-pod-per-rank/overlay.yaml"])
    lws = _doc(files, "decode-lws.yaml")
    assert lws["kind"] == "LeaderWorkerSet"
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 16
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert not any(name.endswith("statefulset.yaml") for name in files)


# --- env files -------------------------------------------------------------------------------

def test_network_env_override_is_one_key(tmp_path: Path):
    """A network.env key moegen also derives is written once, with the user's value (NET003
    warns); kustomize refuses an env file that sets a key twice."""
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  network:\n    env: {GLOO_SOCKET_IFNAME: bond0, EXTRA_FLAG: '1'}\n")
    _, plan, files = render_spec(S1, [overlay])
    lines = [ln for ln in files["env/decode.env"].splitlines() if ln and not ln.startswith("#")]
    keys = [ln.split("=", 1)[0] for ln in lines]
    assert len(keys) == len(set(keys))
    assert "GLOO_SOCKET_IFNAME=bond0" in lines and "EXTRA_FLAG=1" in lines
    assert keys.index("GLOO_SOCKET_IFNAME") == 0   # in the derived position
    if shutil.which("kubectl"):
        from generator.emit import write_tree
        write_tree(tmp_path / "base", files)
        built = subprocess.run(["kubectl", "kustomize", str(tmp_path / "base")],
                               capture_output=True, text=True, check=False,
                               env={**os.environ, "KUBECONFIG": os.devnull})
        assert built.returncode == 0, built.stderr

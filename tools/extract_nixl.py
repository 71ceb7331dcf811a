"""Extract which NIXL releases carry the fix of NIXL's UCX restart race, and which NIXL each vLLM
release's connector accepts, into ``generator/facts/data/nixl.json`` (the restart model,
generator/facts/restarts.py, keys its NIXL crash row on the NIXL inside the image).

The race (ai-dynamo/nixl#1986): UCX's error callback force-closes an endpoint
(``ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FORCE)`` in ``nixlUcxEp::err_cb``) while
``loadRemoteMD`` unpacks a remote key on it: the survivor of a peer restart segfaults. The fix,
ai-dynamo/nixl PR#1987 (commit 3e3e083, on main 2026-07-29), moves the close out of the callback
and checks the endpoint's state before the unpack; it removes the plugin's only call of
``ucp_ep_close_nb`` (the rest of the plugin uses ``ucp_ep_close_nbx``).

Sources:

* NIXL releases in the git mirror (``ai-dynamo+nixl``, tags 0.x and v1.x, branch release/1.4.1):
  fixed when the fix commit is an ancestor; the line that still calls ``ucp_ep_close_nb`` is
  cited for a release without it.
* NIXL releases after the mirror (1.5.x): the published wheels' UCX plugin
  (``libplugin_UCX.so``): fixed when its dynamic symbols import ``ucp_ep_close_nbx`` and not
  ``ucp_ep_close_nb`` (an inference from the fix's diff: a build from a tree without the fix
  still imports it, as the 1.4.0 wheel does). WHEELS lists the wheels read; the one the CPU
  runtime installs is re-read here when present, the others were read once (``nm -D``).
* vLLM releases installed here (the engines venv, the CPU runtime): the NIXL release the
  NIXL connector requires (``check_nixl_version("X")`` in
  vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py; the worker refuses to start
  below it): the image then runs NIXL >= X. A release without the check says nothing about the
  NIXL in its image.

``tests/test_data_drift.py`` re-runs the extraction when the mirror and the venvs are at hand.

Usage: python tools/extract_nixl.py [--mirrors DIR] [OUT_JSON]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "generator" / "facts" / "data" / "nixl.json"
sys.path.insert(0, str(ROOT / "tools"))
from extract_images import cli  # noqa: E402
from extract_tool_parsers import VENVS  # noqa: E402

FIX_COMMIT = "3e3e083c97550a1ddca5653389897cb4ebe5e86e"
FIX = "ai-dynamo/nixl PR#1987"
ISSUE = "ai-dynamo/nixl#1986"
UCX_UTILS = ("src/plugins/ucx/ucx_utils.cpp", "src/utils/ucx/ucx_utils.cpp")
#: NIXL releases not in the mirror, read from their published wheel (release, fixed, source).
WHEELS = (
    ("1.5.0", True, "https://pypi.org/project/nixl-cu12/1.5.0/ (nixl_cu12.libs/nixl/"
     "libplugin_UCX.so imports ucp_ep_close_nbx, not ucp_ep_close_nb; the 1.4.0 wheel's "
     "imports both)"),
    ("1.5.1", True, "https://pypi.org/project/nixl-cu12/1.5.1/ (nixl_cu12.libs/nixl/"
     "libplugin_UCX.so imports ucp_ep_close_nbx, not ucp_ep_close_nb)"),
)
CONNECTOR = "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py"
_CHECK = re.compile(r'check_nixl_version\("([0-9.]+)"\)')
_TAG = re.compile(r"^v?(\d+\.\d+\.\d+)$")


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


class NixlMirror:
    def __init__(self, mirrors: Path) -> None:
        self.git = mirrors / "ai-dynamo+nixl" / "repo"
        if not self.git.is_dir():
            raise FileNotFoundError(f"no git mirror {self.git}")

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["git", f"--git-dir={self.git}", *args], check=check,
                              capture_output=True, text=True)

    def refs(self) -> dict[str, str]:
        """release -> ref: every release tag, and release/X branches without a tag."""
        out = {}
        for tag in self.run("tag").stdout.split():
            hit = _TAG.match(tag)
            if hit:
                out[hit.group(1)] = tag
        for ref in self.run("for-each-ref", "--format=%(refname:short)",
                            "refs/heads/release/").stdout.split():
            release = ref.rsplit("/", 1)[-1]
            if _TAG.match(release) and release not in out:   # cited at its commit
                out[release] = self.run("rev-parse", "--short=7", ref).stdout.strip()
        return out

    def fixed(self, ref: str) -> bool:
        return self.run("merge-base", "--is-ancestor", FIX_COMMIT, ref, check=False) \
            .returncode == 0

    def unfixed_line(self, ref: str) -> str:
        """``owner/repo@ref:path:line`` of the callback's forced close at ``ref``."""
        for path in UCX_UTILS:
            found = self.run("grep", "-n", "ucp_ep_close_nb(", ref, "--", path, check=False)
            if found.returncode == 0:
                _, path_, line = found.stdout.splitlines()[0].split(":", 3)[:3]
                return f"ai-dynamo/nixl@{ref}:{path_}:{line}"
        raise LookupError(f"ai-dynamo/nixl@{ref}: no ucp_ep_close_nb call and no {FIX}")


def nixl_releases(m: NixlMirror) -> list[dict]:
    rows = []
    for release, ref in m.refs().items():
        if _key(release) < (0, 9, 0):
            continue
        if m.fixed(ref):
            rows.append({"release": release, "fixed": True,
                         "source": f"ai-dynamo/nixl@{ref} (has {FIX_COMMIT[:7]})"})
        else:
            rows.append({"release": release, "fixed": False,
                         "source": m.unfixed_line(ref) + " (the forced close in err_cb)"})
    for release, fixed, source in WHEELS:
        rows.append({"release": release, "fixed": fixed, "source": source})
    return sorted(rows, key=lambda r: _key(r["release"]))


def _site_packages() -> list[Path]:
    return [p for v in VENVS for p in sorted(v.glob("lib/python3*/site-packages"))]


def wheel_plugin_fixed(site: Path) -> tuple[str, bool] | None:
    """(release, fixed) of the NIXL wheel installed in ``site`` (its UCX plugin's symbols)."""
    for meta in sorted(site.glob("nixl_cu1*-*.dist-info")):
        release = meta.name.removesuffix(".dist-info").split("-")[1]
        plugin = site / f"{meta.name.split('-')[0]}.libs" / "nixl" / "libplugin_UCX.so"
        if plugin.is_file():
            data = plugin.read_bytes()
            return release, b"ucp_ep_close_nbx\0" in data and b"ucp_ep_close_nb\0" not in data
    return None


def vllm_floors(sites: list[Path]) -> list[dict]:
    rows = []
    for site in sites:
        path = site / CONNECTOR
        metas = list(site.glob("vllm-*.dist-info"))
        if not path.is_file() or not metas:
            continue
        release = metas[0].name[len("vllm-"):-len(".dist-info")].split("+")[0]
        floor, line = None, 0
        for n, text in enumerate(path.read_text().splitlines(), 1):
            hit = _CHECK.search(text)
            if hit:
                floor, line = hit.group(1), n
                break
        rows.append({"engine": "vllm", "release": release, "nixlMin": floor,
                     "source": f"vLLM {release} {CONNECTOR}:{line} (check_nixl_version)"
                     if floor else f"vLLM {release} {CONNECTOR} (no check_nixl_version: "
                     "the connector accepts any NIXL)"})
    return sorted(rows, key=lambda r: _key(r["release"]))


def render(mirrors: Path) -> str:
    """The JSON text of the table (sorted, deterministic)."""
    releases = nixl_releases(NixlMirror(mirrors))
    sites = _site_packages()
    for site in sites:
        read = wheel_plugin_fixed(site)
        if read is not None:
            row = next((r for r in releases if r["release"] == read[0]), None)
            if row is None or row["fixed"] != read[1]:
                raise LookupError(f"{site}: NIXL {read[0]}'s UCX plugin says fixed={read[1]}, "
                                  f"WHEELS says {row}")
    data = {
        "about": "NIXL releases with and without the fix of the UCX restart race, and the NIXL "
                 "each vLLM release's connector requires; read by tools/extract_nixl.py.",
        "fix": {"issue": ISSUE, "pr": FIX, "commit": FIX_COMMIT[:7]},
        "releases": releases,
        "engineFloors": vllm_floors(sites),
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    return cli(argv, DEFAULT_OUT, render)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

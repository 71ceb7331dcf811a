"""The routing components' per-release data (generator/engines/data/router-releases.json) stays
what tools/extract_routers.py reads from their tagged sources.

* With ``MOEGEN_ROUTER_SOURCES=<dir>`` (``llm-d-router.git``, ``gie.git``: git mirrors of
  llm-d/llm-d-router and kubernetes-sigs/gateway-api-inference-extension; ``vllm-router/``: the
  vllm-router sdists, ``smg/``: the smg wheels, as ``pip download`` leaves them) the extractor
  runs again and its output must equal the committed file byte for byte.
* Always: smg 1.13.0's options and defaults equal the parser dump in shared/reference (dumped from
  smg's own argparse), the extractor's readers work on small inputs, and the data holds together.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from generator.engines import router_releases as rr
from tests.helpers import ROOT, load_script, shared

DATA = ROOT / "generator" / "engines" / "data" / "router-releases.json"
TOOL = load_script("tools/extract_routers.py")


@pytest.mark.skipif(not os.environ.get("MOEGEN_ROUTER_SOURCES"),
                    reason="MOEGEN_ROUTER_SOURCES (mirrors and release archives) is not set")
def test_router_data_matches_the_sources():
    src = Path(os.environ["MOEGEN_ROUTER_SOURCES"])
    assert DATA.read_text() == TOOL.render(src / "llm-d-router.git", src / "gie.git",
                                           src / "vllm-router", src / "smg"), \
        "run: python tools/extract_routers.py (docs/routing.md, Releases)"


def test_smg_options_match_its_parser_dump():
    """Every option of smg 1.13.0 (less -h/--help; plus --router-disable-arg-fallback, which
    only the --router- prefixed embedding registers) with the default argparse gives it."""
    dump = json.loads(shared("reference", "engines", "smg-1.13.0-router-cli.json").read_text())
    flags = rr.facts("smg", "1.13.0")["flags"]
    dumped = {o: e for e in dump for o in e["opts"] if o not in ("-h", "--help")}
    assert set(flags) - set(dumped) == {"--router-disable-arg-fallback"}
    assert set(dumped) <= set(flags)
    wrong = {o: (flags[o]["default"], e["default"]) for o, e in dumped.items()
             if flags[o]["default"] != e["default"]}
    assert wrong == {}
    chosen = {o: (flags[o]["choices"], e["choices"]) for o, e in dumped.items()
              if flags[o]["choices"] is not None and flags[o]["choices"] != e["choices"]}
    assert chosen == {}


def test_argparse_reader_resolves_defaults():
    src = '''
import argparse, dataclasses, os
CHOICES = ["a", "b"]
MORE = [*CHOICES, "c"]
@dataclasses.dataclass
class RouterArgs:
    port: int = 30000
    size: int = 2**26
    urls: list = dataclasses.field(default_factory=list)
    def add_cli_args(parser, prefix=""):
        parser.add_argument(f"--{prefix}port", type=int, default=RouterArgs.port)
        parser.add_argument(f"--{prefix}size", default=RouterArgs.size)
        parser.add_argument("--policy", choices=MORE, default="a")
        parser.add_argument("--pool", default=int(os.getenv("POOL", 16)))
        parser.add_argument("--auth", default=os.getenv("AUTH", "").lower() in ("1", "true"))
        parser.add_argument("--x", "--y", action=argparse.BooleanOptionalAction, default=None)
        parser.add_argument("--flag", action="store_true")
'''
    flags = TOOL.router_args(src)
    assert {k: v["default"] for k, v in flags.items()} == {
        "--port": 30000, "--size": 67108864, "--policy": "a", "--pool": 16, "--auth": False,
        "--x": None, "--y": None, "--no-x": None, "--no-y": None, "--flag": False}
    assert flags["--policy"]["choices"] == ["a", "b", "c"]


def test_go_readers():
    text = 'plugin.Register(filter.ByLabelType, fwkplugin.StabilityBeta, f(a, b), "x,y") // c'
    args, _ = TOOL._call_args(text, text.index("("))
    assert args == ["filter.ByLabelType", "fwkplugin.StabilityBeta", "f(a, b)", '"x,y"']
    env = TOOL._makefile_vars("IMAGE_REGISTRY ?= ghcr.io/llm-d\nNAME ?= epp\n"
                              "export EPP_IMAGE ?= $(IMAGE_REGISTRY)/$(NAME):$(EPP_TAG)\n")
    assert TOOL._expand(env["EPP_IMAGE"].replace(":$(EPP_TAG)", ""), env) == "ghcr.io/llm-d/epp"
    assert TOOL._imports('import (\n\tfoo "a/b/c"\n\t"x/y"\n)\n') == {"foo": "a/b/c", "y": "x/y"}


def test_release_data_holds_together():
    """Each llm-d-router release: images at its tag, its config group accepted by its loader,
    plugin sources cited, strict parameters from v0.9.0 (llm-d-router#1134), the experimental
    flag from v0.10.0 (#2073), the pool CRD's 8 target ports; the defaults moegen renders are
    the newest of each component."""
    versions = rr.known("llm-d-router")
    assert versions == ["0.6.0", "0.7.0", "0.8.0", "0.9.0", "0.10.0"]
    for v in versions:
        f = rr.facts("llm-d-router", v)
        assert {i["tag"] for i in f["images"].values()} == {f"v{v}"}
        assert f["config"]["apiVersion"] in f["config"]["accepted"]
        assert all(":" in p["source"] for p in f["plugins"].values())
        assert f["strictParameters"] == (v in ("0.9.0", "0.10.0"))
        assert f["experimentalPluginsFlag"] == (v == "0.10.0")
        assert {"pool-name", "config-file", "kv-cache-usage-percentage-metric"} <= set(f["eppFlags"])
        assert rr.PickerRelease(v).pool_ports == {"minItems": 1, "maxItems": 8, "unique": True}
    assert rr.known("vllm-router") == ["0.1.15", "0.1.16", "0.1.17"]
    assert rr.known("smg") == ["1.9.0", "1.11.0", "1.12.0", "1.13.0"]
    assert rr.resolve("smg", None) == "1.13.0" and rr.resolve("vllm-router", "v0.1.16") == "0.1.16"

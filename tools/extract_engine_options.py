"""Extract every engine release's complete option list into package data.

``roles[].engineArgs`` flags are checked against the option list of the pinned release (rule
ENG004), and aliases are folded to one name to find flags moegen derives (rule ENG005).

Sources, dumped from the engines' own parsers (one list of option strings per argparse action):

* the current releases: ``vllm-0.33.0-cli.json`` and ``sglang-0.5.23-cli.json`` (the team's dumps);
* the other releases: ``tools/data/vllm-options-by-release.json`` and
  ``tools/data/sglang-options-by-release.json`` (``tools/extract_vllm_options.py`` and
  ``tools/extract_sglang_options.py``: each release's own parser built from its sources).

Writes ``generator/engines/data/engine-options.json``: per engine an alias table, the arity of
each option of the current release (options that take no value, a list, or an optional value:
how the manifest importer reads a command line), the values each option of the current release
takes (``values``: the argparse ``type`` when it is one moegen can apply, int, float or the
engines' human-readable int, and the ``choices``: rule ENG006), and the releases as a base list plus
per-release additions/removals; ``tests/test_data_drift.py`` fails when the
committed file drifts.

Usage: python tools/extract_engine_options.py [REFERENCE_DIR] [OUT_JSON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = ROOT.parent / "shared" / "reference" / "engines"
DEFAULT_OUT = ROOT / "generator" / "engines" / "data" / "engine-options.json"


def _key(v: str) -> tuple:
    parts = v.replace(".post", ".").split(".")
    return tuple(int(p) if p.isdigit() else -1 for p in parts)


def _aliases(actions: list[list[str]]) -> dict[str, str]:
    """Every option string of a multi-string action -> the action's first ``--`` string."""
    out = {}
    for opts in filter(None, actions):   # positionals have no option strings
        longs = [o for o in opts if o.startswith("--")]
        canonical = longs[0] if longs else opts[0]
        for o in opts:
            if o != canonical:
                out[o] = canonical
    return out


def _delta(releases: dict[str, list[str]]) -> dict:
    versions = sorted(releases, key=_key)
    out = {"base": versions[0], "order": versions,
           "releases": {versions[0]: {"options": sorted(releases[versions[0]])}}}
    prev = set(releases[versions[0]])
    for v in versions[1:]:
        cur = set(releases[v])
        out["releases"][v] = {"added": sorted(cur - prev), "removed": sorted(prev - cur)}
        prev = cur
    return out


def _groups(entries) -> list[list[str]]:
    """Action groups from a dump: a list of groups, or of plain option strings (one each)."""
    return [e if isinstance(e, list) else [e] for e in entries]


def _arity(dump: list[dict]) -> dict[str, list[str]]:
    """How many values each option of the current release's parser takes (argparse ``nargs``):
    ``flags`` take none (store_true/BooleanOptionalAction, ``nargs`` 0), ``lists`` one or more
    (``+``, ``*``), ``optional`` zero or one (``?``); every other option takes exactly one.
    Option strings of every action are listed, so aliases and ``--no-x`` negations are found."""
    kinds = {0: "flags", "+": "lists", "*": "lists", "?": "optional"}
    out: dict[str, set[str]] = {"flags": set(), "lists": set(), "optional": set()}
    for e in dump:
        kind = kinds.get(e.get("nargs"))
        if kind and e["opts"]:
            out[kind] |= set(e["opts"])
    return {k: sorted(v) for k, v in out.items()}


#: argparse ``type`` names of the dumps -> what ENG006 applies (others: the value is not checked):
#: int/float are Python's; ``human_readable_int`` (vLLM 0.33.0 vllm/engine/arg_utils.py, SGLang
#: 0.5.23 python/sglang/srt/server_args.py) also takes 25.6k / 1M, ``_or_auto`` also ``auto``;
#: vLLM's ``_optional_type`` reads ``None`` and the empty string as None.
_TYPES = {"int": "int", "float": "float", "human_readable_int": "human_int",
          "human_readable_int_or_auto": "human_int_or_auto"}
#: Types whose conversion is not a plain string (the choices are compared after it): skipped.
_OPAQUE = {"<lambda>", "parse_cuda_graph_backend_arg", "parse_reasoning_parser"}


def _values(dump: list[dict]) -> dict[str, dict]:
    """Each option string of the current release -> the type and choices ENG006 checks."""
    out: dict[str, dict] = {}
    for e in dump:
        entry: dict = {}
        if e.get("type") in _TYPES:
            entry["type"] = _TYPES[e["type"]]
        if e.get("choices") and e.get("type") not in _OPAQUE:
            entry["choices"] = [c for c in e["choices"] if c is not None]
            if None in e["choices"] or e.get("type") == "_optional_type":
                entry["none"] = True
        if entry and e["nargs"] != 0:
            for o in e["opts"]:
                out[o] = entry
    return dict(sorted(out.items()))


def _engine(current: str, dump: list[dict], by_release: Path) -> dict:
    releases = json.loads(by_release.read_text()) if by_release.is_file() else {}
    releases = {v: _groups(g) for v, g in releases.items()}
    releases[current] = [e["opts"] for e in dump]
    aliases: dict[str, str] = {}
    for v in sorted(releases, key=_key):
        aliases.update(_aliases(releases[v]))
    flat = {v: sorted({o for g in groups for o in g}) for v, groups in releases.items()}
    return {"aliases": dict(sorted(aliases.items())), "arity": _arity(dump),
            "current": current, "values": _values(dump), **_delta(flat)}


def extract(src: Path) -> dict:
    """The data file's content (see the module docstring)."""
    data = ROOT / "tools" / "data"
    return {
        "source": "the engines' own parsers: every action of vLLM's vllm serve and SGLang's "
                  "launch_server, per release; extracted by tools/extract_engine_options.py",
        "sglang": _engine("0.5.23", json.loads((src / "sglang-0.5.23-cli.json").read_text()),
                          data / "sglang-options-by-release.json"),
        "vllm": _engine("0.33.0", json.loads((src / "vllm-0.33.0-cli.json").read_text()),
                        data / "vllm-options-by-release.json"),
    }


def render(src: Path) -> str:
    """The exact text the committed data file must hold."""
    return json.dumps(extract(src), indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else DEFAULT_SRC
    out = Path(argv[2]) if len(argv) > 2 else DEFAULT_OUT
    out.write_text(render(src))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

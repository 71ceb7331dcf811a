#!/usr/bin/env python3
"""Extract the option strings of `vllm serve` for many vLLM releases, from each release's own parser.

moegen keeps the result as tools/data/vllm-options-by-release.json (``--moegen-data PATH``), the
input of tools/extract_engine_options.py (roles[].engineArgs are checked against it, rule ENG004).

Usage
-----
    python3 extract.py [VERSION ...] [--python PY] [--src-root DIR] [--sdist-dir DIR]
                       [--wheel-dir DIR] [--extra-site DIR] [--out-dir DIR]
                       [--dialects YAML] [--reference JSON]

Defaults: every release listed under `releases:` in --dialects (0.11.0 .. 0.33.0),
--python ~/.cache/moegen/engines-venv-v1/bin/python (a venv with vLLM 0.33.0 + torch CPU; it is only
used, never modified), --out-dir /tmp/vopts, --src-root <out-dir>/src, --sdist-dir /tmp/vsd,
--wheel-dir <out-dir>/dl, --extra-site <out-dir>/extra-site.

What it does, per release V:
  1. Sources: if <src-root>/V/vllm is missing, unpack only the `vllm/` package of
     <sdist-dir>/vllm-V.tar.gz, or (no sdist, e.g. 0.15.x) of <wheel-dir>/vllm-V-*.whl, skipping
     compiled files (*.so). Get a wheel with `pip download --no-deps vllm==V -d <wheel-dir>`.
  2. Runs `PY extract.py --worker` with PYTHONPATH=<src-root>/V:<extra-site>, so the release's own
     vllm shadows the venv's installed 0.33.0 and the venv supplies torch/transformers/... .
     <extra-site> holds real (not stubbed) runtime deps that older releases import but the 0.33.0 venv
     lacks; create it with
        PY -m pip install --no-deps --target <extra-site> setproctitle blake3 diskcache \
            lm-format-enforcer==0.11.3 interegular mistral_common==1.8.8 ijson jsonschema \
            jsonschema-specifications referencing rpds-py pydantic-extra-types pycountry tiktoken
     (--no-deps so nothing in it shadows the venv's own packages). VLLM_PLUGINS="" is set because the
     venv's entry points are 0.33.0's (LoRA resolver plugins; they don't touch the parser).
  3. The worker pretends a CUDA platform (as tests/conformance/vllm_parse.py does: no GPU here),
     imports make_arg_parser (vllm.entrypoints.common.cli_args >= 0.33, .launchers.cli_args 0.29-0.32,
     .openai.cli_args <= 0.28) and FlexibleArgumentParser, builds the top-level `vllm` parser with a
     `serve` sub-parser passed through make_arg_parser (as ServeSubcommand.subparser_init does) and
     dumps every action. Options that subparser_init adds itself after make_arg_parser (--grpc in
     0.18.x/0.19.x) are read statically from vllm/entrypoints/cli/serve.py (importing that module needs
     the GPU/HTTP stack) and reported separately.
  4. Checks len(actions) (incl. -h/--help and the model_tag positional) against
     releases.V.cli_option_count in --dialects, and for the reference release the option strings
     against --reference (vllm-0.33.0-cli.json).

Outputs in --out-dir:
  vllm-options-by-release.json        {"V": [sorted option strings of every make_arg_parser action]}
  vllm-serve-options-by-release.json  same plus the subparser_init-only options (--grpc 0.18/0.19)
  vllm-actions-by-release.json        per release: actions (opts, dest, nargs), counts, extras, deps
  REPORT.md                           per-release count check, deps used, failures
Only declared option strings are listed; FlexibleArgumentParser also accepts `--a_b` for `--a-b`,
`--x.y` dotted keys for config-typed options, and argparse unique-prefix abbreviations.
"""
from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import subprocess
import sys
import tarfile
import zipfile

HERE = os.path.abspath(__file__)


# --------------------------------------------------------------------------- worker (release python)
def _worker() -> int:
    real_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # keep anything vllm prints off the JSON channel
    sys.stdout = sys.stderr
    import importlib
    import warnings

    warnings.simplefilter("ignore")
    src = os.environ["VOPTS_SRC"]
    extra = os.environ.get("VOPTS_EXTRA_SITE", "")

    import vllm

    assert os.path.realpath(vllm.__file__).startswith(os.path.realpath(src)), vllm.__file__
    from vllm.platforms import current_platform

    platform_cls = type(current_platform).__name__
    current_platform.device_type = "cuda"
    current_platform.is_cuda = lambda: True  # type: ignore[method-assign]

    make = None
    mod_name = None
    for m in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args",
              "vllm.entrypoints.openai.cli_args"):
        if not os.path.exists(os.path.join(src, *m.split(".")) + ".py"):
            continue
        mod = importlib.import_module(m)
        if hasattr(mod, "make_arg_parser"):
            make, mod_name = mod.make_arg_parser, m
            break
    if make is None:
        raise RuntimeError("make_arg_parser not found")
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser  # <= 0.11.0

    top = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve = subparsers.add_parser("serve", usage="vllm serve [model_tag] [options]")
    serve = make(serve)

    actions = [{"opts": list(a.option_strings), "dest": a.dest,
                "nargs": a.nargs if isinstance(a.nargs, (int, str, type(None))) else str(a.nargs),
                "deprecated": getattr(a, "deprecated", None) or None}
               for a in serve._actions]
    extra_mods = sorted({n.split(".")[0] for n, m in list(sys.modules.items())
                         if extra and getattr(m, "__file__", None)
                         and os.path.realpath(m.__file__).startswith(os.path.realpath(extra))})
    json.dump({"version": getattr(vllm, "__version__", None), "make_arg_parser": mod_name,
               "platform_detected": platform_cls, "actions": actions,
               "extra_site_modules": extra_mods}, real_out)
    real_out.flush()
    return 0


# --------------------------------------------------------------------------- driver
def serve_subparser_extras(serve_py: str) -> list[str]:
    """Option strings added by ServeSubcommand.subparser_init itself (not by make_arg_parser)."""
    if not os.path.exists(serve_py):
        return []
    tree = ast.parse(open(serve_py).read())
    out: list[str] = []
    for cls in ast.walk(tree):
        if not (isinstance(cls, ast.ClassDef) and cls.name == "ServeSubcommand"):
            continue
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "subparser_init":
                for node in ast.walk(fn):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and node.func.attr == "add_argument"):
                        out += [a.value for a in node.args
                                if isinstance(a, ast.Constant) and isinstance(a.value, str)
                                and a.value.startswith("-")]
    return out


def ensure_sources(v: str, a) -> str:
    dest = os.path.join(a.src_root, v)
    origin = os.path.join(dest, ".origin")
    if os.path.isdir(os.path.join(dest, "vllm")):
        return open(origin).read().strip() if os.path.exists(origin) else "pre-extracted"
    os.makedirs(dest, exist_ok=True)
    sd = os.path.join(a.sdist_dir, f"vllm-{v}.tar.gz")
    if os.path.exists(sd):
        pre = f"vllm-{v}/vllm/"
        with tarfile.open(sd) as t:
            members = [m for m in t.getmembers() if m.name.startswith(pre) and not m.name.endswith(".so")]
            for m in members:
                m.name = m.name[len(f"vllm-{v}/"):]
            t.extractall(dest, members=members)
        open(origin, "w").write(f"sdist {os.path.basename(sd)}\n")
        return f"sdist {os.path.basename(sd)}"
    whl = sorted(glob.glob(os.path.join(a.wheel_dir, f"vllm-{v}-*.whl")))
    if whl:
        with zipfile.ZipFile(whl[0]) as z:
            z.extractall(dest, [n for n in z.namelist() if n.startswith("vllm/") and ".so" not in n])
        open(origin, "w").write(f"wheel {os.path.basename(whl[0])}\n")
        return f"wheel {os.path.basename(whl[0])}"
    raise FileNotFoundError(f"no sdist or wheel for {v}")


def main() -> int:
    if "--worker" in sys.argv:
        return _worker()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("versions", nargs="*")
    p.add_argument("--python", default=os.path.expanduser("~/.cache/moegen/engines-venv-v1/bin/python"))
    p.add_argument("--out-dir", default="/tmp/vopts")
    p.add_argument("--src-root")
    p.add_argument("--sdist-dir", default="/tmp/vsd")
    p.add_argument("--wheel-dir")
    p.add_argument("--extra-site")
    p.add_argument("--dialects", default="/work/shared/reference/engines/vllm-dialects.yaml")
    p.add_argument("--reference", default="/work/shared/reference/engines/vllm-0.33.0-cli.json")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--moegen-data", help="also write moegen's tools/data/vllm-options-by-release.json")
    a = p.parse_args()
    a.src_root = a.src_root or os.path.join(a.out_dir, "src")
    a.wheel_dir = a.wheel_dir or os.path.join(a.out_dir, "dl")
    a.extra_site = a.extra_site or os.path.join(a.out_dir, "extra-site")

    # the dialects YAML is read with the venv's PyYAML (the driver may run under any python3)
    expected = json.loads(subprocess.run(
        [a.python, "-c", "import yaml,json,sys; d=yaml.safe_load(open(sys.argv[1]));"
         "print(json.dumps({str(k): (r or {}).get('cli_option_count') for k, r in d['releases'].items()}))",
         a.dialects], check=True, capture_output=True, text=True).stdout)
    versions = a.versions or list(expected)
    ref = json.load(open(a.reference)) if os.path.exists(a.reference) else None
    ref_version = os.path.basename(a.reference).split("-")[1] if ref else None

    results: dict[str, dict] = {}
    for v in versions:
        r: dict = {"expected_count": expected.get(v)}
        results[v] = r
        try:
            r["source"] = ensure_sources(v, a)
        except Exception as e:  # noqa: BLE001
            r["error"] = f"sources: {e}"
            print(f"{v}: FAILED {r['error']}", file=sys.stderr)
            continue
        src = os.path.join(a.src_root, v)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, a.extra_site]), VOPTS_SRC=src,
                   VOPTS_EXTRA_SITE=a.extra_site, VLLM_PLUGINS="", VLLM_LOGGING_LEVEL="ERROR",
                   VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", HF_HUB_OFFLINE="1")
        proc = subprocess.run([a.python, HERE, "--worker"], env=env, capture_output=True, text=True,
                              timeout=a.timeout, cwd="/tmp")
        if proc.returncode != 0 or not proc.stdout.strip():
            r["error"] = "worker: " + "\n".join(proc.stderr.strip().splitlines()[-5:])
            print(f"{v}: FAILED {r['error']}", file=sys.stderr)
            continue
        w = json.loads(proc.stdout)
        r.update(w)
        r["count"] = len(w["actions"])
        r["options"] = sorted({o for act in w["actions"] for o in act["opts"]})
        r["serve_extras"] = [o for o in serve_subparser_extras(
            os.path.join(src, "vllm", "entrypoints", "cli", "serve.py")) if o not in r["options"]]
        r["count_ok"] = r["count"] == r["expected_count"]
        if w.get("version") != v:
            r["version_mismatch"] = w.get("version")
        if ref is not None and v == ref_version:
            ref_opts = sorted({o for e in ref for o in e["opts"]})
            r["reference_ok"] = (ref_opts == r["options"] and len(ref) == r["count"]
                                 and [e["opts"] for e in ref] == [x["opts"] for x in w["actions"]])
        print(f"{v}: {r['count']} actions (expected {r['expected_count']}) "
              f"{'OK' if r['count_ok'] else 'MISMATCH'} extras={r['serve_extras']} "
              f"deps={w['extra_site_modules']}", file=sys.stderr)

    ok = {v: r for v, r in results.items() if "options" in r}
    os.makedirs(a.out_dir, exist_ok=True)

    def dump(name, obj):
        with open(os.path.join(a.out_dir, name), "w") as f:
            json.dump(obj, f, indent=1)
            f.write("\n")

    dump("vllm-options-by-release.json", {v: r["options"] for v, r in ok.items()})
    dump("vllm-serve-options-by-release.json",
         {v: sorted(set(r["options"]) | set(r["serve_extras"])) for v, r in ok.items()})
    dump("vllm-actions-by-release.json", results)

    lines = ["# vLLM `vllm serve` option extraction", "",
             f"Generated by `extract.py` (see its docstring for the method). Interpreter: `{a.python}`.",
             "Parser: top-level `vllm` FlexibleArgumentParser + `serve` sub-parser through the release's "
             "own `make_arg_parser`, CUDA platform pretended (`device_type='cuda'`, `is_cuda=True`).",
             "", "| release | source | make_arg_parser module | actions | cli_option_count | match | "
             "option strings | serve-only extras (subparser_init) | extra real deps imported |",
             "|---|---|---|---|---|---|---|---|---|"]
    for v, r in results.items():
        if "error" in r:
            lines.append(f"| {v} | {r.get('source', '-')} | - | - | {r['expected_count']} | FAILED | - | - | "
                         f"{r['error'].splitlines()[-1][:120]} |")
            continue
        mark = "yes" if r["count_ok"] else "**NO**"
        if "reference_ok" in r:
            mark += f" (vs reference json: {'identical' if r['reference_ok'] else '**DIFFERS**'})"
        lines.append(f"| {v} | {r['source']} | {r['make_arg_parser']} | {r['count']} | {r['expected_count']} | "
                     f"{mark} | {len(r['options'])} | {' '.join(r['serve_extras']) or '-'} | "
                     f"{', '.join(r['extra_site_modules']) or '-'} |")
    failed = [v for v, r in results.items() if "error" in r or not r.get("count_ok")]
    lines += ["", f"Releases covered: {len(ok)}/{len(results)}; failed or mismatched: {failed or 'none'}."]
    with open(os.path.join(a.out_dir, "REPORT.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if a.moegen_data and not failed:
        write_moegen_data(results, a.moegen_data)
    return 1 if failed else 0


def write_moegen_data(results: dict, path: str) -> None:
    """``tools/data/vllm-options-by-release.json``: per release, the option strings of each
    action (``vllm serve``'s own extras such as ``--grpc`` included), the input of
    tools/extract_engine_options.py."""
    out = {}
    for v, r in results.items():
        groups = [act["opts"] for act in r["actions"] if act["opts"]]
        groups += [[o] for o in r["serve_extras"]]
        out[v] = groups
    with open(path, "w") as f:
        f.write(json.dumps(out, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())

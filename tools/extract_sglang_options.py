#!/usr/bin/env python3
"""Extract the option strings of SGLang's ``python -m sglang.launch_server`` parser, per release.

moegen keeps OUT/sglang-options-by-release.json as tools/data/sglang-options-by-release.json, the
input of tools/extract_engine_options.py (roles[].engineArgs are checked against it, rule ENG004).

For each release, a child process of the engines venv python imports *that release's*
``sglang.srt.server_args`` (its sources shadow the installed sglang via PYTHONPATH), builds
``argparse.ArgumentParser()``, calls ``ServerArgs.add_cli_args(parser)`` and dumps
``[a.option_strings for a in parser._actions]`` -- one list per argparse action, parser order.

Usage
-----
    # 1. unpack the sglang/*.py sources of every wheel into SRC/<version>/sglang/...
    python3 extract.py unpack [--wheels /tmp/sgl] [--src /tmp/sgopts/src]

    # 2. extract every version found under SRC, plus "installed" (the venv's own sglang,
    #    validated against the reference JSON); writes OUT/sglang-options-by-release.json,
    #    OUT/REPORT.md and OUT/raw/<version>.json
    python3 extract.py all [--python ~/.cache/moegen/engines-venv-v1/bin/python]
                           [--src /tmp/sgopts/src] [--out /tmp/sgopts]
                           [--reference /work/shared/reference/engines/sglang-0.5.23-cli.json]
                           [--only 0.5.3,0.5.9]

    # (internal) one version; run under the engines venv python with
    #  PYTHONPATH=SRC/<version> (or no PYTHONPATH for the installed sglang):
    python extract.py child <version> <expected-sglang-dir-or-"installed">

The driver itself needs only the standard library (any python3). The child never writes to the
source trees or the venv.

Shims -- none by default. A child that fails is re-run (new process) with one more shim,
chosen from its error; each version records the shims it needed and that were really hit:

* ``missing-module:<name>`` (child raised ModuleNotFoundError for a non-sglang module) -- a
  fallback import hook appended to the END of sys.meta_path serves a permissive stub module for
  exactly that name and its submodules, only when the real import fails. In practice: the
  venv has no torchvision (transformers is imported first so it still sees it absent).
* ``missing-attr:<module>.<name>`` (``cannot import name N from M``, M outside sglang) -- a
  stub attribute is set on the installed dependency M. (Not needed for 0.5.1 .. 0.5.23.)
* ``autoconfig-exist-ok`` (``'X' is already used by a Transformers config``: the release
  registers a config that transformers 5.x now ships, e.g. qwen3_asr) --
  ``transformers.AutoConfig.register`` is wrapped to pass ``exist_ok=True``.
No CUDA / GPU is faked: add_cli_args has no platform-conditional add_argument in any release
(checked with AST); the environment only changes some choices/defaults, not option strings.

Cross-check: ``static_options()`` predicts every release's option strings from the source alone
(add_argument literals, BooleanOptionalAction ``--no-`` twins, and the Annotated ``A[...]``
fields used from 0.5.14 on); differences vs the dynamic extraction are reported.
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import re
import subprocess
import sys
import time
import zipfile

DEFAULT_PY = os.path.expanduser("~/.cache/moegen/engines-venv-v1/bin/python")
DEFAULT_REF = "/work/shared/reference/engines/sglang-0.5.23-cli.json"
INSTALLED_VERSION = "0.5.23"

# --------------------------------------------------------------------------------------------
# child
# --------------------------------------------------------------------------------------------

def _child(version: str, expected: str, shims: list[str]) -> int:
    import importlib.abc
    import importlib.machinery
    import types
    import warnings

    warnings.simplefilter("ignore")
    real_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything sglang prints goes to stderr
    sys.stdout = sys.stderr
    used: list[str] = []

    class Anything:
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return Anything()

        def __call__(self, *a, **k):
            return a[0] if len(a) == 1 and callable(a[0]) and not k else Anything()

        def __mro_entries__(self, bases):
            return (object,)

    class StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return Anything()

    class Fallback(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            if any(name == p or name.startswith(p + ".") for p in stub_mods):
                tag = "missing-module:" + name
                if tag not in used:
                    used.append(tag)
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            m = StubModule(spec.name)
            m.__path__ = []
            return m

        def exec_module(self, module):
            pass

    # transformers decides "torchvision available?" at import: let it see the truth first.
    try:
        import transformers  # noqa: F401
        import transformers.image_utils  # noqa: F401
    except Exception:  # noqa: BLE001
        pass
    stub_mods = [t.split(":", 1)[1] for t in shims if t.startswith("module:")]
    sys.meta_path.append(Fallback())

    import importlib
    for tag in shims:
        kind, _, rest = tag.partition(":")
        if kind == "attr":  # "attr:module:name"
            mod, attr = rest.split(":", 1)
            setattr(importlib.import_module(mod), attr, Anything())
            used.append(f"missing-attr:{mod}.{attr}")
        elif kind == "autoconfig-exist-ok":
            from transformers import AutoConfig
            orig = AutoConfig.register

            def register(model_type, config, exist_ok=False, _orig=orig):
                return _orig(model_type, config, exist_ok=True)
            AutoConfig.register = staticmethod(register)
            used.append("autoconfig-exist-ok")

    result = {"version": version, "ok": False, "error": None, "shims": used}
    try:
        import sglang
        from sglang.srt import server_args as sa
        result["sglang_file"] = sglang.__file__
        result["server_args_file"] = sa.__file__
        if expected != "installed":
            exp = os.path.realpath(expected)
            for f in (sglang.__file__, sa.__file__):
                if not os.path.realpath(f).startswith(exp + os.sep):
                    raise RuntimeError(f"imported {f}, expected under {exp}")
        result["sglang_version"] = getattr(sglang, "__version__", None)
        parser = argparse.ArgumentParser()
        sa.ServerArgs.add_cli_args(parser)
        result["actions"] = [list(a.option_strings) for a in parser._actions]
        result["ok"] = True
    except BaseException as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        result["error"] = f"{type(e).__name__}: {e}"[:2000]
        msg = str(e)
        mt = re.match(r"cannot import name '(\w+)' from '([\w.]+)'", msg)
        if isinstance(e, ModuleNotFoundError) and e.name and not e.name.startswith("sglang"):
            result["want_shim"] = "module:" + e.name
        elif isinstance(e, ImportError) and mt and not mt.group(2).startswith("sglang"):
            result["want_shim"] = f"attr:{mt.group(2)}:{mt.group(1)}"
        elif isinstance(e, ValueError) and "is already used by a Transformers config" in msg:
            result["want_shim"] = "autoconfig-exist-ok"
    json.dump(result, real_out)
    real_out.write("\n")
    real_out.flush()
    return 0


# --------------------------------------------------------------------------------------------
# static cross-check
# --------------------------------------------------------------------------------------------

def _literal_opts(call: ast.Call) -> list[str]:
    return [a.value for a in call.args
            if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]


def _is_bool_optional(call: ast.Call) -> bool:
    return any(k.arg == "action" and "BooleanOptionalAction" in ast.unparse(k.value)
               for k in call.keywords)


def _with_no(opts: list[str]) -> list[str]:
    return opts + ["--no-" + o[2:] for o in opts if o.startswith("--")]


def static_options(server_args_py: str) -> set[str]:
    """Option strings predicted from the source alone (no import):

    * string literals starting with "-" passed to ``add_argument`` in server_args.py (plus the
      ``--no-X`` twin when ``action=argparse.BooleanOptionalAction``);
    * 0.5.14+: fields of ``class ServerArgs`` (and its base classes, and from 0.5.20 the
      ``_INPUT_NAMESPACES`` classes, defined in server_args.py or arg_groups/**.py) annotated ``A[T, "help"]`` / ``A[T, Arg(...)]`` -- ``--field-name`` or
      ``Arg(cli_name=...)``, plus ``aliases``; ``no_cli=True`` skipped (add_cli_args_from_dataclass).
    """
    tree = ast.parse(open(server_args_py).read())
    opts: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "add_argument":
            lits = _literal_opts(node)
            opts.update(_with_no(lits) if _is_bool_optional(node) else lits)
    files = [server_args_py] + sorted(glob.glob(os.path.join(
        os.path.dirname(server_args_py), "arg_groups", "**", "*.py"), recursive=True))
    classes = {}
    for f in files:
        for node in ast.walk(ast.parse(open(f).read())):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, node)
    todo = ["ServerArgs"]
    for node in tree.body:  # 0.5.20+: ServerArgs = the fields of the _INPUT_NAMESPACES classes
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and "_INPUT_NAMESPACES" in \
                ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target) \
                and isinstance(node.value, (ast.List, ast.Tuple)):
            todo += [ast.unparse(e).split(".")[-1] for e in node.value.elts]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in classes:
            continue
        seen.add(name)
        cls = classes[name]
        todo += [ast.unparse(b).split(".")[-1] for b in cls.bases]
        for st in cls.body:
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                continue
            ann = st.annotation
            if not (isinstance(ann, ast.Subscript) and ast.unparse(ann.value).split(".")[-1]
                    in ("A", "Annotated") and isinstance(ann.slice, ast.Tuple)):
                continue
            meta = [e for e in ann.slice.elts[1:]
                    if (isinstance(e, ast.Constant) and isinstance(e.value, str))
                    or (isinstance(e, ast.Call) and ast.unparse(e.func).split(".")[-1] == "Arg")]
            if not meta:
                continue
            m = meta[0]
            kw = {k.arg: k.value for k in m.keywords} if isinstance(m, ast.Call) else {}
            if "no_cli" in kw and isinstance(kw["no_cli"], ast.Constant) and kw["no_cli"].value:
                continue
            names = ["--" + st.target.id.replace("_", "-")]
            if isinstance(kw.get("cli_name"), ast.Constant):
                names = [kw["cli_name"].value]
            if isinstance(kw.get("aliases"), (ast.List, ast.Tuple)):
                names += [e.value for e in kw["aliases"].elts if isinstance(e, ast.Constant)]
            if "action" in kw and "BooleanOptionalAction" in ast.unparse(kw["action"]):
                names = _with_no(names)
            opts.update(names)
    return opts


# --------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------

def vkey(v: str):
    m = re.match(r"(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?$", v)
    return tuple(int(x) if x else 0 for x in m.groups()) if m else (999,)


def unpack(wheels: str, src: str) -> None:
    for whl in sorted(glob.glob(os.path.join(wheels, "sglang-*.whl"))):
        m = re.match(r"sglang-(\d+\.\d+\.\d+(?:\.post\d+)?)[-.]", os.path.basename(whl))
        if not m:
            print("skip", whl)
            continue
        dest = os.path.join(src, m.group(1))
        with zipfile.ZipFile(whl) as z:
            names = [n for n in z.namelist() if n.startswith("sglang/") and n.endswith(".py")]
            z.extractall(dest, names)
        print(m.group(1), len(names), "files ->", dest)


def run_one(py: str, version: str, srcdir: str | None, log_dir: str) -> dict:
    shims: list[str] = []
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if srcdir:
        env["PYTHONPATH"] = srcdir
    env["PYTHONWARNINGS"] = "ignore"
    env.setdefault("HF_HUB_OFFLINE", "1")
    for _ in range(40):
        cmd = [py, os.path.abspath(__file__), "child", version, srcdir or "installed", *shims]
        t = time.time()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900,
                           cwd="/tmp")
        with open(os.path.join(log_dir, f"{version}.stderr.txt"), "w") as f:
            f.write(p.stderr)
        try:
            res = json.loads(p.stdout.strip().splitlines()[-1])
        except Exception:  # noqa: BLE001
            return {"version": version, "ok": False, "shims": [],
                    "error": f"child rc={p.returncode}: {p.stderr[-1500:]}"}
        res["seconds"] = round(time.time() - t, 1)
        want = res.get("want_shim")
        if res["ok"] or not want or want in shims:
            return res
        shims.append(want)
    return res


def main_all(a) -> None:
    os.makedirs(os.path.join(a.out, "raw"), exist_ok=True)
    versions = sorted((os.path.basename(d) for d in glob.glob(os.path.join(a.src, "*"))
                       if os.path.isdir(os.path.join(d, "sglang"))), key=vkey)
    if a.only:
        versions = [v for v in versions if v in a.only.split(",")]
    jobs = [(v, os.path.join(os.path.abspath(a.src), v)) for v in versions]
    if not a.only or INSTALLED_VERSION in a.only.split(","):
        jobs.append((INSTALLED_VERSION, None))
    results = {}
    for v, d in jobs:
        r = run_one(a.python, v, d, os.path.join(a.out, "raw"))
        if r.get("ok"):
            sf = r["server_args_file"]
            dyn = {o for acts in r["actions"] for o in acts}
            st = static_options(sf)
            r["static_only"] = sorted(st - dyn)
            r["dynamic_only"] = sorted(dyn - st - {"-h", "--help"})
        with open(os.path.join(a.out, "raw", f"{v}.json"), "w") as f:
            json.dump(r, f, indent=1)
        results[v] = r
        print(v, "OK" if r.get("ok") else "FAIL", len(r.get("actions", [])),
              r.get("shims"), r.get("error") or "", flush=True)

    ref_ok = None
    if INSTALLED_VERSION in results and results[INSTALLED_VERSION].get("ok") and os.path.exists(a.reference):
        ref = [x["opts"] for x in json.load(open(a.reference))]
        mine = results[INSTALLED_VERSION]["actions"]
        ref_ok = {"same_set": {tuple(x) for x in ref} == {tuple(x) for x in mine},
                  "same_order": ref == mine, "n_ref": len(ref), "n_mine": len(mine)}

    out_json = os.path.join(a.out, "sglang-options-by-release.json")
    merged = {}
    if a.only and os.path.exists(out_json):
        merged = json.load(open(out_json))
    merged.update({v: r["actions"] for v, r in results.items() if r.get("ok")})
    merged = dict(sorted(merged.items(), key=lambda kv: vkey(kv[0])))
    with open(out_json, "w") as f:
        json.dump(merged, f, indent=1)
    write_report(a, merged, ref_ok)


def write_report(a, merged: dict, ref_ok) -> None:
    raws = {}
    for f in glob.glob(os.path.join(a.out, "raw", "*.json")):
        r = json.load(open(f))
        raws[r["version"]] = r
    lines = ["# SGLang launch_server option strings per release", "",
             "Generated by `/tmp/sgopts/extract.py all` (see its docstring). Each release's own",
             "`ServerArgs.add_cli_args` (sources unpacked from the wheel to `src/<version>/`,",
             "shadowing the installed sglang via PYTHONPATH; 0.5.23 = the engines venv's installed",
             "package), dumped as `[a.option_strings for a in parser._actions]` (incl. `-h/--help`).",
             ""]
    if ref_ok is not None:
        lines += [f"**0.5.23 validation vs `{a.reference}`**: same set of opts groups = "
                  f"{ref_ok['same_set']}, same order = {ref_ok['same_order']} "
                  f"({ref_ok['n_mine']} actions vs {ref_ok['n_ref']} in reference).", ""]
    lines += ["| release | actions | option strings | shims used | static cross-check | sglang.__file__ | failure |",
              "|---|---|---|---|---|---|---|"]
    for v in sorted(raws, key=vkey):
        r = raws[v]
        acts = r.get("actions") or []
        xc = ""
        if r.get("ok"):
            xc = "match" if not r["static_only"] and not r["dynamic_only"] else \
                f"static-only {r['static_only']}; dynamic-only {r['dynamic_only']}"
        lines.append(f"| {v} | {len(acts) if r.get('ok') else '-'} | "
                     f"{sum(len(x) for x in acts) if r.get('ok') else '-'} | "
                     f"{', '.join(s.replace('missing-module:', 'stub ') for s in r.get('shims', [])) or 'none'} | "
                     f"{xc} | `{r.get('sglang_file', '')}` | {r.get('error') or ''} |")
    lines += ["", "Shim legend: `stub X` = module X is not installed in the CPU venv and was served by",
              "a permissive stub module (fallback import hook, only when the real import fails);",
              "`missing-attr:M.N` = installed dependency M lacks N, which the old release imports; a",
              "stub attribute was set; `autoconfig-exist-ok` = transformers.AutoConfig.register",
              "wrapped with exist_ok=True (the release registers a model type transformers 5.x ships).",
              "Shims are added one at a time, only after a failure that needs them.",
              "",
              "Static cross-check = option strings predicted from the release's source without",
              "importing it (add_argument literals + BooleanOptionalAction `--no-` twins + the",
              "`A[T, ...]` dataclass fields used from 0.5.14, incl. the 0.5.20+ `_INPUT_NAMESPACES`",
              "classes) vs the dynamic extraction; `match` = identical sets. `add_cli_args` contains",
              "no platform-conditional add_argument in any release, so no GPU faking is needed.", ""]
    open(os.path.join(a.out, "REPORT.md"), "w").write("\n".join(lines))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        return _child(sys.argv[2], sys.argv[3], [s for s in sys.argv[4:]])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("unpack")
    u.add_argument("--wheels", default="/tmp/sgl")
    u.add_argument("--src", default="/tmp/sgopts/src")
    al = sub.add_parser("all")
    al.add_argument("--python", default=DEFAULT_PY)
    al.add_argument("--src", default="/tmp/sgopts/src")
    al.add_argument("--out", default="/tmp/sgopts")
    al.add_argument("--reference", default=DEFAULT_REF)
    al.add_argument("--only", default="")
    a = ap.parse_args()
    if a.cmd == "unpack":
        unpack(a.wheels, a.src)
    else:
        main_all(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())

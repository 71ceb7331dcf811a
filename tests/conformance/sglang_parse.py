"""Check rendered SGLang server and router command lines with their own argument parsers.

Runs under the engines venv's python (see .ci/engines-venv.sh), never under the project's.

stdin:  {"commands": [{"id": "<str>", "argv": [...]}]}
stdout: {"engine": "sglang", "version": "<sglang.__version__>",
         "versions": {"sglang": ..., "smg": ..., "sglang-router": ...},
         "results": [{"id": ..., "engine": "sglang" | "smg" | "sglang_router", "ok": bool,
                      "error": "<message or ''>"}]}

Accepted argv forms (argv[0] is compared by basename):
  sglang server   python|python3 -m sglang.launch_server FLAGS...
                  sglang serve [MODEL] [--model-type auto|llm] FLAGS...
                  -> argparse.ArgumentParser(); ServerArgs.add_cli_args(p); parse_args;
                     ServerArgs.from_cli_args(args)   (sglang.srt.server_args.prepare_server_args,
                     minus logging setup; the later resolve_once step needs torchvision and the
                     model's files, so it is not run)
  smg router      python|python3 -m smg.launch_router FLAGS...
                  python|python3 -m smg launch FLAGS...  /  smg launch FLAGS...
  sglang-router   python|python3 -m sglang_router.launch_router FLAGS...
                  python|python3 -m sglang_router launch FLAGS...
                  sglang-router launch FLAGS...  /  amg launch FLAGS...
                  -> RouterArgs.add_cli_args(p, use_router_prefix=False); parse_args;
                     RouterArgs.from_cli_args(..., use_router_prefix=False);
                     _validate_router_args(); Router.from_args(...) (builds the Rust router object,
                     does not start it) -- the steps of <pkg>.launch_router before router.start().
Note: the sglang-router 0.3.2 wheel also installs a console script named `smg`; in this venv the
`smg` console script belongs to whichever package pip installed last, so `smg launch` is checked
against the `smg` package (its owner since the rename).

All logging goes to stderr; stdout carries only the JSON document.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import io
import json
import os
import sys
import traceback
import warnings
from contextlib import redirect_stderr


class ParseError(Exception):
    pass


def _capture_stdout():
    """Point fd 1 (and sys.stdout) at stderr; return a writer for the real stdout."""
    real = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return real


def _raising_exit(status=0, message=None):
    raise ParseError((message or f"argparse exited with status {status}").strip())


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog)
    p.exit = _raising_exit  # type: ignore[method-assign]
    return p


def _is_python(arg0: str) -> bool:
    b = os.path.basename(arg0)
    return b == "python" or b.startswith("python3")


def classify(argv: list[str]) -> tuple[str, list[str]]:
    """Return (engine, flags) for an accepted argv, else raise ParseError."""
    if not argv:
        raise ParseError("empty argv")
    if _is_python(argv[0]) and len(argv) >= 3 and argv[1] == "-m":
        mod, rest = argv[2], argv[3:]
        if mod == "sglang.launch_server":
            return "sglang", rest
        if mod == "smg.launch_router":
            return "smg", rest
        if mod == "sglang_router.launch_router":
            return "sglang_router", rest
        if mod in ("smg", "sglang_router") and rest[:1] == ["launch"]:
            return mod, rest[1:]
        raise ParseError(f"unsupported module {mod!r} in argv {argv[:4]!r}")
    b = os.path.basename(argv[0])
    if b == "sglang" and argv[1:2] == ["serve"]:
        return "sglang-serve", argv[2:]
    if b == "smg" and argv[1:2] == ["launch"]:
        return "smg", argv[2:]
    if b in ("sglang-router", "amg") and argv[1:2] == ["launch"]:
        return "sglang_router", argv[2:]
    raise ParseError(f"unsupported argv prefix {argv[:3]!r}")


def _sglang_serve_argv(flags: list[str]) -> list[str]:
    """`sglang serve`: drop --model-type (llm/auto only), accept a positional model
    (sglang.cli.serve._extract_model_type_override / _normalize_positional_model_path)."""
    out, i, backend = [], 0, "auto"
    while i < len(flags):
        a = flags[i]
        if a == "--model-type":
            if i + 1 >= len(flags):
                raise ParseError("Error: --model-type requires a value.")
            backend, i = flags[i + 1], i + 2
            continue
        if a.startswith("--model-type="):
            backend, i = a.split("=", 1)[1], i + 1
            continue
        out.append(a)
        i += 1
    if backend not in ("auto", "llm"):
        raise ParseError(f"--model-type {backend!r}: only the LLM server is checked here")
    if out and not out[0].startswith("-"):
        out = ["--model-path", out[0], *out[1:]]
    return out


def main() -> int:
    out = _capture_stdout()
    warnings.simplefilter("ignore")
    os.environ["HF_HUB_OFFLINE"] = os.environ.get("HF_HUB_OFFLINE", "0")

    request = json.load(sys.stdin)
    commands = request.get("commands", [])

    import sglang

    versions = {"sglang": sglang.__version__}
    for dist in ("smg", "sglang-router"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None

    built: dict[str, tuple] = {}

    def server_parser():
        if "sglang" not in built:
            from sglang.srt.server_args import ServerArgs

            p = _parser("sglang serve")
            ServerArgs.add_cli_args(p)
            built["sglang"] = (p, ServerArgs)
        return built["sglang"]

    def router_parser(engine: str):
        if engine not in built:
            if engine == "smg":
                from smg.router import Router
                from smg.router_args import RouterArgs
            else:
                from sglang_router.router import Router
                from sglang_router.router_args import RouterArgs
            p = _parser(f"{engine}.launch_router")
            RouterArgs.add_cli_args(p, use_router_prefix=False)
            built[engine] = (p, RouterArgs, Router)
        return built[engine]

    results = []
    for i, cmd in enumerate(commands):
        cid = str(cmd.get("id", i))
        argv = list(cmd.get("argv", []))
        res = {"id": cid, "engine": "", "ok": False, "error": ""}
        try:
            engine, flags = classify(argv)
            if engine == "sglang-serve":
                engine, flags = "sglang", _sglang_serve_argv(flags)
            res["engine"] = engine
            buf = io.StringIO()  # argparse prints the long usage on every error
            if engine == "sglang":
                p, ServerArgs = server_parser()
                with redirect_stderr(buf):
                    raw = p.parse_args(flags)
                raw._radix_eviction_policy_explicitly_set = any(
                    a == "--radix-eviction-policy" or a.startswith("--radix-eviction-policy=")
                    for a in flags
                )
                ServerArgs.from_cli_args(raw)
            else:
                p, RouterArgs, Router = router_parser(engine)
                with redirect_stderr(buf):
                    raw = p.parse_args(flags)
                ra = RouterArgs.from_cli_args(raw, use_router_prefix=False)
                if engine == "smg" and ra.selected_discovery_provider() and not ra.enable_igw:
                    ra.enable_igw = True  # as smg.launch_router.launch_router does
                ra._validate_router_args()
                if not getattr(ra, "mini_lb", False):
                    Router.from_args(ra)
            sys.stderr.write(buf.getvalue())
            res["ok"] = True
        except ParseError as e:
            res["error"] = str(e)
        except SystemExit as e:
            res["error"] = f"SystemExit({e.code})"
        except Exception as e:  # noqa: BLE001 - report every failure per command
            res["error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
        results.append(res)

    json.dump(
        {"engine": "sglang", "version": sglang.__version__, "versions": versions,
         "results": results},
        out,
    )
    out.write("\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

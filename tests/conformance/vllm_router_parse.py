"""Check vllm-router command lines with its own parser (runs under the engines venv python).

Contract as vllm_parse.py: JSON ``{"commands": [{"id", "argv"}]}`` on stdin, where argv starts with
``vllm-router`` (the image's entry: vllm-project/router Dockerfile.router). Each command goes
through vllm_router.router_args.RouterArgs (pure Python in vllm-router 0.1.17):
``add_cli_args`` -> ``parse_args`` -> ``from_cli_args`` -> ``_validate_router_args``.
Output: ``{"engine": "vllm-router", "version": ..., "results": [{"id", "engine", "ok", "error"}]}``.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import io
import json
import sys
from contextlib import redirect_stderr


class ParseError(Exception):
    """argparse wanted to exit."""


def main() -> int:
    out = sys.stdout
    sys.stdout = sys.stderr
    from vllm_router.router_args import RouterArgs

    request = json.load(sys.stdin)
    results = []
    for i, cmd in enumerate(request.get("commands", [])):
        cid = str(cmd.get("id", i))
        argv = list(cmd.get("argv", []))
        res = {"id": cid, "engine": "vllm-router", "ok": False, "error": ""}
        try:
            if not argv or argv[0] != "vllm-router":
                raise ParseError(f"argv must start with 'vllm-router'; got {argv[:1]!r}")
            parser = argparse.ArgumentParser(prog="vllm-router", exit_on_error=False)
            RouterArgs.add_cli_args(parser)

            def _exit(status=0, message=None):
                raise ParseError((message or "").strip() or f"exit {status}")

            parser.exit = _exit  # type: ignore[method-assign]
            parser.error = lambda message: _exit(2, message)  # type: ignore[method-assign]
            buf = io.StringIO()
            with redirect_stderr(buf):
                args = parser.parse_args(argv[1:])
            router_args = RouterArgs.from_cli_args(args)
            router_args._validate_router_args()
            res["ok"] = True
        except ParseError as e:
            res["error"] = str(e)
        except (argparse.ArgumentError, ValueError) as e:
            res["error"] = f"{type(e).__name__}: {e}"
        results.append(res)
    json.dump({"engine": "vllm-router", "version": md.version("vllm-router"), "results": results}, out)
    out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

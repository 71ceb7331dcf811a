"""Check rendered `vllm serve` command lines with vLLM's own argument parser.

Runs under the engines venv's python (see .ci/engines-venv.sh), never under the project's.

stdin:  {"commands": [{"id": "<str>", "argv": ["vllm", "serve", "<model>", "--flag", "v", ...],
                       "env": {"VLLM_X": "..."},  # optional
                       "parser": "serve" | "engine"}]}   # optional, default "serve"
stdout: {"engine": "vllm", "version": "<vllm.__version__>",
         "results": [{"id": ..., "engine": "vllm", "ok": bool, "error": "<message or ''>",
                      "unknown_env": [<VLLM_* names in "env" that this vLLM does not know>]}]}

Per command it does what `vllm serve` does before it needs a GPU or the model's files:
  1. the top-level `vllm` FlexibleArgumentParser with a `serve` sub-parser built by
     make_arg_parser (as ServeSubcommand.subparser_init does), so the serve-specific argv rewriting
     (`--model` moved to the positional, `--served-model-name` without a positional model, `--config`)
     runs as in the real CLI;
  2. args.model = args.model_tag (ServeSubcommand.cmd);
  3. validate_parsed_serve_args(args) (ServeSubcommand.validate);
  4. the headless / api-server-count / DP load-balancing-mode checks at the top of
     ServeSubcommand.cmd (mirrored: vllm/entrypoints/cli/serve.py can't be imported without
     the HTTP server stack);
  5. AsyncEngineArgs.from_cli_args(args) (what run_server / run_headless build).
It does not call create_engine_config (that needs the model's config.json and a device).

With ``"parser": "engine"`` the argv (engine arguments only, no program) goes through what
``python3 -m dynamo.vllm`` runs on the arguments Dynamo's own parser leaves
(ai-dynamo/dynamo components/src/dynamo/vllm/args.py: a FlexibleArgumentParser with
``AsyncEngineArgs.add_cli_args(parser, async_args_only=False)``, ``parse_args``, then
``AsyncEngineArgs.from_cli_args``): an API-server option (``--port``) is refused.

All logging goes to stderr; stdout carries only the JSON document.
"""

from __future__ import annotations

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


def _serve_cmd_checks(args) -> None:
    """The argument checks at the top of ServeSubcommand.cmd (vllm 0.33.0), minus the launch."""
    if args.headless:
        if args.api_server_count is not None and args.api_server_count > 0:
            raise ValueError(
                f"--api-server-count={args.api_server_count} cannot be used with --headless "
                "(no API servers are started in headless mode)."
            )
    is_external_lb = args.data_parallel_external_lb or args.data_parallel_rank is not None
    if not args.data_parallel_hybrid_lb and not args.data_parallel_multi_port_external_lb:
        is_hybrid_lb = args.data_parallel_start_rank is not None
        is_multi_port = False
    else:
        is_hybrid_lb = args.data_parallel_hybrid_lb
        is_multi_port = args.data_parallel_multi_port_external_lb
    if sum([bool(is_multi_port), bool(is_external_lb), bool(is_hybrid_lb)]) > 1:
        raise ValueError(
            "Cannot use more than one data parallel load balancing mode. Choose one of: "
            "--data-parallel-multi-port-external-lb, --data-parallel-external-lb (or "
            "--data-parallel-rank), --data-parallel-hybrid-lb (or --data-parallel-start-rank)."
        )
    if args.headless and args.data_parallel_hybrid_lb:
        # run_headless: "data_parallel_hybrid_lb is not applicable in headless mode"
        raise ValueError("data_parallel_hybrid_lb is not applicable in headless mode")


#: HTTP-server packages the engines venv lacks (nothing here serves HTTP).
_SERVER_ONLY = ("uvicorn", "watchfiles")


def _stub_http_server() -> None:
    """validate_parsed_serve_args imports vllm/entrypoints/launchers/dp_supervisor.py for
    --data-parallel-multi-port-external-lb; that module imports uvicorn (and, through it,
    watchfiles) to launch servers, while its argument check (validate_multi_port_external_lb_args)
    is pure. A finder placed last on sys.meta_path stands in for those packages only where they
    are not installed, so the check runs."""
    import importlib.abc
    import importlib.machinery
    import types

    class _Stub(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in _SERVER_ONLY:
                return importlib.machinery.ModuleSpec(name, self)
            return None

        def create_module(self, spec):
            return _Stub(spec.name)

        def exec_module(self, module):
            return None

    sys.meta_path.append(_Finder())


def main() -> int:
    out = _capture_stdout()
    warnings.simplefilter("ignore")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    # With HF_HUB_OFFLINE set, EngineArgs.__post_init__ resolves the model through the HF cache and
    # fails for a path that only exists in the pod (/models/...). Nothing here goes online.
    os.environ["HF_HUB_OFFLINE"] = "0"

    request = json.load(sys.stdin)
    commands = request.get("commands", [])

    _stub_http_server()
    import vllm
    import vllm.envs as envs
    from vllm.platforms import current_platform

    # No GPU here: without this, building the parser fails with "Failed to infer device type".
    current_platform.device_type = "cuda"
    current_platform.is_cuda = lambda: True  # type: ignore[method-assign]

    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.common.cli_args import (
        make_arg_parser,
        validate_parsed_serve_args,
    )
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    engine_only = FlexibleArgumentParser(add_help=False)
    AsyncEngineArgs.add_cli_args(engine_only, async_args_only=False)
    engine_only.exit = _raising_exit  # type: ignore[method-assign]

    top = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve = subparsers.add_parser("serve", usage="vllm serve [model_tag] [options]")
    serve = make_arg_parser(serve)
    for p in (top, serve):
        p.exit = _raising_exit  # type: ignore[method-assign]

    known_env = set(envs.environment_variables)
    results = []
    for i, cmd in enumerate(commands):
        cid = str(cmd.get("id", i))
        argv = list(cmd.get("argv", []))
        env = dict(cmd.get("env") or {})
        res = {"id": cid, "engine": "vllm", "ok": False, "error": "",
               "unknown_env": sorted(k for k in env if k.startswith("VLLM_") and k not in known_env)}
        saved_env = {k: os.environ.get(k) for k in env}
        try:
            if cmd.get("parser") == "engine":
                os.environ.update({k: str(v) for k, v in env.items()})
                stderr_buf = io.StringIO()
                with redirect_stderr(stderr_buf):
                    args = engine_only.parse_args(argv)
                sys.stderr.write(stderr_buf.getvalue())
                AsyncEngineArgs.from_cli_args(args)
                res["ok"] = True
                results.append(res)
                continue
            if len(argv) < 2 or os.path.basename(argv[0]) != "vllm" or argv[1] != "serve":
                raise ParseError(f"argv must start with ['vllm', 'serve', ...]; got {argv[:2]!r}")
            os.environ.update({k: str(v) for k, v in env.items()})
            # argparse prints the (very long) usage on every error; keep it out of the log.
            stderr_buf = io.StringIO()
            with redirect_stderr(stderr_buf):
                args = top.parse_args(argv[1:])
            sys.stderr.write(stderr_buf.getvalue())
            if getattr(args, "model_tag", None) is not None:
                args.model = args.model_tag
            validate_parsed_serve_args(args)
            _serve_cmd_checks(args)
            AsyncEngineArgs.from_cli_args(args)
            res["ok"] = True
        except ParseError as e:
            res["error"] = str(e)
        except SystemExit as e:  # anything else that calls sys.exit
            res["error"] = f"SystemExit({e.code})"
        except Exception as e:  # noqa: BLE001 - report every failure per command
            res["error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
        finally:
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        results.append(res)

    json.dump({"engine": "vllm", "version": vllm.__version__, "results": results}, out)
    out.write("\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Rules about what the user adds to the engine command: ``roles[].engineArgs``."""

from __future__ import annotations

from ..catalog import GPUS
from ..facts.known_bad import known_bad
from ..engines.options import (
    API_SERVER_COUNT,
    FLAG,
    arity_problem,
    known_releases,
    option_flags,
    option_value,
    release_options,
    value_problem,
)
from .registry import Context, E, Hit, W, role_path, rule


def _pinned_options(d):
    """The option list of the pinned release when moegen has it (0.5.4.post1 differs from
    0.5.4), else of the known release whose dialect applies; None when moegen has neither."""
    return release_options(d.engine, d.requested) or release_options(d.engine, d.version)


@rule("ENG004", E, "engineArgs are options of the pinned engine release",
      "the engines' own parsers (vLLM 0.33.0 vllm serve: vllm/engine/arg_utils.py + "
      "vllm/entrypoints/common/cli_args.py; SGLang 0.5.23 python/sglang/srt/server_args.py), "
      "every option of each release shipped in generator/engines/data/engine-options.json; "
      "argparse exits at start on an unknown option")
def _engine_args_known(ctx: Context):
    if ctx.dialect is None:
        return
    d = ctx.dialect
    opts = _pinned_options(d)
    for i, role in enumerate(ctx.spec.spec.roles):
        if not role.engineArgs:
            continue
        if opts is None:
            have = known_releases(d.engine)
            yield Hit(role_path(i, "engineArgs"),
                      f"engineArgs cannot be checked: moegen does not ship the option list of "
                      f"{d.label} {d.version} (it has {', '.join(have)})",
                      f"pin a {d.label} release whose options moegen knows, or drop engineArgs")
            continue
        if not FLAG.match(role.engineArgs[0]):
            yield Hit(role_path(i, "engineArgs", 0),
                      f"engineArgs start with a value ({role.engineArgs[0]!r}), not an option",
                      "write options and their values as separate items: [--opt, value]")
        for j, flag in option_flags(role.engineArgs):
            if opts.canonical(flag) is None:
                near = opts.suggest(flag)
                yield Hit(role_path(i, "engineArgs", j),
                          f"{flag.split('=', 1)[0]} is not an option of {d.label} {opts.version}",
                          f"did you mean {' or '.join(near)}?" if near else
                          f"see `{'vllm serve --help=all' if d.engine == 'vllm' else 'python -m sglang.launch_server --help'}` "
                          f"of {d.version}")


@rule("ENG006", E, "engineArgs values are ones the engine's parser accepts",
      "the engines' own parsers (vLLM 0.33.0 vllm/engine/arg_utils.py, SGLang 0.5.23 "
      "python/sglang/srt/server_args.py): each option's argparse type, choices and nargs, "
      "dumped into generator/engines/data/engine-options.json (values, arity; choices of "
      "earlier releases: vLLM's kv cache dtypes and all2all backends, vllm-releases.json); "
      "argparse exits at start on a value it cannot convert, one not among the choices, or a "
      "missing value")
def _engine_args_values(ctx: Context):
    if ctx.dialect is None:
        return
    d = ctx.dialect
    opts = _pinned_options(d)
    if opts is None:
        return   # ENG004 says the options cannot be checked
    for i, role in enumerate(ctx.spec.spec.roles):
        yield from (Hit(role_path(i, "engineArgs", j), f"{d.label} {opts.version}: {what}", hint)
                    for j, what, hint in args_problems(d.engine, opts, role.engineArgs))


def args_problems(engine: str, opts, args: list[str]):
    """(index, what, hint) of every option of ``args`` whose values the release's parser
    refuses (options it does not have are ENG004's)."""
    for j, flag in option_flags(args):
        name, eq, inline = flag.partition("=")
        if opts.canonical(name) is None:
            continue
        values = [inline] if eq else []
        k = j + 1
        while not eq and k < len(args) and not FLAG.match(args[k]):
            values.append(args[k])
            k += 1
        wrong = arity_problem(engine, name, values, bool(eq))
        if wrong:
            yield j, wrong, "give the value as the next item: [--opt, value]"
            continue
        for value in values[:1] if eq or len(values) == 1 else values:
            problem = value_problem(engine, opts.version, name, value)
            if problem:
                yield j, f"{name} {problem[0]}", problem[1]
                break


@rule("ENG005", E, "engineArgs do not set flags moegen derives",
      "docs/spec.md §6 (a flag moegen derives is rejected with the spec field that controls it); "
      "a second value of a derived flag desynchronises the pods of an instance or the HBM check")
def _engine_args_derived(ctx: Context):
    if ctx.dialect is None:
        return
    d = ctx.dialect
    opts = _pinned_options(d)
    for i, role in enumerate(ctx.spec.spec.roles):
        for j, flag in option_flags(role.engineArgs):
            names = opts.names(flag) if opts else {flag.split("=", 1)[0]}
            field = next((d.derived_flags[n] for n in sorted(names) if n in d.derived_flags), None)
            if names & API_SERVER_COUNT and option_value(role.engineArgs, j) == "0":
                yield Hit(role_path(i, "engineArgs", j),
                          f"{flag.split('=', 1)[0]} 0 turns the API pod headless: no server "
                          "would answer the probes or the router (vllm/entrypoints/cli/serve.py)",
                          "give at least 1, or leave it out")
            if field is not None:
                yield Hit(role_path(i, "engineArgs", j),
                          f"{flag.split('=', 1)[0]} is derived by moegen",
                          f"set {field} instead" if not field.startswith("(") else
                          f"it is not settable {field}")


@rule("ENG030", E, "the engine release has no known bug for the role's feature combination",
      "generator/facts/known_bad.py KNOWN_BAD: each row cites the upstream report, the fixing "
      "change and the engine file:line at a bad and a fixed release (e.g. sgl-project/sglang#33660, "
      "sgl-project/sglang#33669)")
def _known_bad(ctx: Context):
    spec = ctx.spec.spec
    for i, r in ctx.role_items():
        gpu = GPUS[spec.nodePools[spec.roles[i].nodePool].gpu]
        for row in known_bad(ctx.engine, spec.engine.version, r, spec.model.weights,
                             gpu.generation, spec.roles[i].engineArgs):
            yield Hit(role_path(i, *row.field),
                      f"role {r.name!r}: {ctx.dialect.label if ctx.dialect else ctx.engine} "
                      f"{spec.engine.version} (known bad {row.releases}): {row.what} "
                      f"({row.source})", row.hint)


def _tool_roles(ctx: Context):
    """(role index, {canonical name: (index in engineArgs, value)}) of the tool-calling options
    of every role's engineArgs."""
    if ctx.dialect is None:
        return
    opts = _pinned_options(ctx.dialect)
    for i, role in enumerate(ctx.spec.spec.roles):
        out = {}
        for j, flag in option_flags(role.engineArgs):
            names = opts.names(flag) if opts else {flag.split("=", 1)[0]}
            for name in names & {"--enable-auto-tool-choice", "--tool-call-parser",
                                 "--tool-parser-plugin"}:
                out[name] = (j, option_value(role.engineArgs, j))
        yield i, out


@rule("ENG008", E, "auto tool choice names a tool-call parser the release registers",
      "vLLM 0.33.0 vllm/entrypoints/common/cli_args.py (validate_parsed_serve_args: TypeError "
      "'--enable-auto-tool-choice requires --tool-call-parser'; validate_api_server_args: "
      "KeyError 'invalid tool call parser'); the parsers of each release read: "
      "generator/engines/data/tool-parsers.json (tools/extract_tool_parsers.py)",
      engines=("vllm",))
def _tool_parser_known(ctx: Context):
    for i, found in _tool_roles(ctx):
        if "--enable-auto-tool-choice" not in found:
            continue
        if "--tool-call-parser" not in found:
            yield Hit(role_path(i, "engineArgs", found["--enable-auto-tool-choice"][0]),
                      "--enable-auto-tool-choice without --tool-call-parser: vLLM refuses to "
                      "start ('--enable-auto-tool-choice requires --tool-call-parser')",
                      "add --tool-call-parser with the model's parser")
            continue
        j, name = found["--tool-call-parser"]
        known = tool_parsers(ctx.spec.spec.engine.version)
        if known is None or "--tool-parser-plugin" in found or name in known:
            continue
        yield Hit(role_path(i, "engineArgs", j),
                  f"--tool-call-parser {name!r} is not a parser vLLM "
                  f"{ctx.spec.spec.engine.version} registers: the server refuses to start "
                  "('invalid tool call parser')", f"one of {', '.join(known)}")


@rule("ENG009", W, "a tool-call parser is used (vLLM: with --enable-auto-tool-choice)",
      "vLLM 0.33.0 vllm/entrypoints/openai/chat_completion/serving.py (the parser runs for "
      "enable_auto_tools, the server's --enable-auto-tool-choice) and "
      "vllm/entrypoints/common/cli_args.py (validated only with it)",
      engines=("vllm",))
def _tool_parser_inert(ctx: Context):
    for i, found in _tool_roles(ctx):
        if "--tool-call-parser" in found and "--enable-auto-tool-choice" not in found \
                and found["--tool-call-parser"][1] is not None:   # no value: ENG006
            yield Hit(role_path(i, "engineArgs", found["--tool-call-parser"][0]),
                      f"--tool-call-parser {found['--tool-call-parser'][1]!r} without "
                      "--enable-auto-tool-choice: vLLM does not parse tool calls (requests with "
                      "tool_choice auto get the model's raw text)",
                      "add --enable-auto-tool-choice, or drop --tool-call-parser")


def tool_parsers(version: str) -> list[str] | None:
    """The tool-call parsers vLLM ``version`` registers (None: a release moegen did not read;
    a patch release reads as its X.Y.0)."""
    from ..facts.versions import fmt, parse_version
    data = _tool_data()
    try:
        key = fmt(parse_version(version)[:2] + (0,))
    except ValueError:
        return None
    row = data.get(version) or data.get(key)
    return list(row["parsers"]) if row else None


def _tool_data() -> dict:
    import json
    from ..resources import package_text
    return json.loads(package_text("engines", "data", "tool-parsers.json"))["vllm"]


@rule("ENG010", W, "every vLLM environment variable set is one the release reads",
      "vLLM 0.33.0 vllm/envs.py, as every release's (the releases that read each variable: "
      "generator/engines/data/vllm-envs.json, tools/extract_vllm_envs.py); a variable the "
      "release does not define is ignored (VLLM_MOE_DP_CHUNK_SIZE: last read by 0.19.1)",
      engines=("vllm",))
def _env_read(ctx: Context):
    if ctx.dialect is None:
        return
    table = _env_data()
    version = ctx.dialect.version
    for path, env in _env_places(ctx):
        for name in env:
            reads = table.get(name)
            if reads is None or version in reads or name in _ENV_ELSEWHERE:
                continue
            when = (f"last read by {reads[-1]}" if _before(reads[-1], version)
                    else f"read from {reads[0]}")
            yield Hit((*path, name),
                      f"{name} is not read by vLLM {version} ({when}: vllm/envs.py): the "
                      "setting has no effect", f"drop {name}, or use the option that replaced "
                      "it in that release")


#: The vLLM variables moegen reads or sets (the scope of vllm-envs.json; engines/vllm.py's
#: rendered ones; SRV060/SRV061; sizing/vllm_budget.py) that vLLM 0.33.0 vllm/envs.py parses
#: with ``int(value)`` or ``bool(int(value))`` (its ``environment_variables`` table; the lines
#: read at 0.33.0), as that parse: a value int() refuses raises ValueError the first time the
#: engine reads it, at start. tests/test_conformance_vllm.py checks the table against the
#: release's own parsing (every variable of the scope that refuses ``"x"`` is here).
INT_ENV: dict[str, str] = {
    "VLLM_ENGINE_READY_TIMEOUT_S": "int(...)",                           # envs.py:813
    "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "int(...)",                          # envs.py:1135
    "VLLM_DP_MASTER_PORT": "int(...)",                                   # envs.py:1507
    "VLLM_NIXL_SIDE_CHANNEL_PORT": "int(...)",                           # envs.py:1725
    "VLLM_MOONCAKE_BOOTSTRAP_PORT": "int(...)",                          # envs.py:1769
    "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "int(...)",                    # envs.py:1863
    "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT": "int(...)",                   # envs.py:1904
    "VLLM_DEEPEP_BUFFER_SIZE_MB": "int(...)",                            # envs.py:2036
    "VLLM_DBO_COMM_SMS": "int(...)",                                     # envs.py:2069
    "VLLM_USE_DEEP_GEMM": "bool(int(...))",                              # envs.py:1600
    "VLLM_MOE_USE_DEEP_GEMM": "bool(int(...))",                          # envs.py:1602
    "VLLM_USE_DEEP_GEMM_E8M0": "bool(int(...))",                         # envs.py:1606
    "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "bool(int(...))",  # envs.py:1931
    "VLLM_DEEPEP_HIGH_THROUGHPUT_FORCE_INTRA_NODE": "bool(int(...))",    # envs.py:2042
    "VLLM_DEEPEP_LOW_LATENCY_USE_MNNVL": "bool(int(...))",               # envs.py:2047
    "VLLM_USE_NCCL_SYMM_MEM": "bool(int(...))",                          # envs.py:2090
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "bool(int(...))",        # envs.py:2219
}


#: The vLLM variables of that scope vLLM 0.33.0 vllm/envs.py reads through
#: ``env_with_choices`` (case-sensitive): any other value raises ValueError at start too.
CHOICE_ENV: dict[str, tuple[str, ...]] = {
    "VLLM_WORKER_MULTIPROC_METHOD": ("spawn", "fork"),                  # envs.py:939
    "VLLM_DEEP_GEMM_WARMUP": ("skip", "full", "relax"),                 # envs.py:1626
    "VLLM_KV_CACHE_LAYOUT": ("LBNHC", "LBHNC", "LHBNC", "NHD", "HND", "BLHNC", "BLNHC",
                             "BHLNC"),                                  # envs.py:1879
}


def _not_int(text: str) -> bool:
    """int() refuses ``text`` (Python's int(): surrounding spaces, a sign and ``_`` pass)."""
    try:
        int(text)
    except ValueError:
        return True
    return False


@rule("ENG011", E, "every vLLM variable parsed as an integer or a choice holds one",
      "vLLM 0.33.0 vllm/envs.py (environment_variables: int(os.getenv(...)) and "
      "bool(int(os.getenv(...))) for the variables of generator/checks/engine.py INT_ENV, "
      "env_with_choices for CHOICE_ENV; a value they refuse raises ValueError when the engine "
      "reads it, at start)", engines=("vllm",))
def _env_integer(ctx: Context):
    table = _env_data()
    version = ctx.dialect.version if ctx.dialect is not None else None
    for path, env in _env_places(ctx):
        for name, value in env.items():
            if version is not None and version not in table.get(name, [version]):
                continue   # a variable this release does not read (ENG010)
            choices = CHOICE_ENV.get(name)
            if choices is not None and value not in choices:
                yield Hit((*path, name), f"{name}={value!r} is not one of vLLM's choices "
                          f"({', '.join(choices)}; vllm/envs.py env_with_choices, case-"
                          "sensitive): it raises ValueError at start, so the pod crash-loops",
                          f"give one of: {', '.join(choices)}")
            parse = INT_ENV.get(name)
            if parse is None or not _not_int(value):
                continue
            yield Hit((*path, name),
                      f"{name}={value!r} is not an integer: vLLM reads it as {parse} "
                      "(vllm/envs.py) and raises ValueError at start, so the pod crash-loops",
                      "give 0 or 1 (off / on)" if parse.startswith("bool") else
                      "give a whole number (seconds, a port or a size, as the variable counts)")


def _env_places(ctx: Context) -> list[tuple[tuple, dict[str, str]]]:
    """Each env block the user writes and its path: ``network.env``, then each role's."""
    spec = ctx.spec.spec
    return [(("spec", "network", "env"), spec.network.env)] + \
        [(role_path(i, "env"), role.env) for i, role in enumerate(spec.roles)]


#: Variables another rule reports (IMP007: VLLM_ALL2ALL_BACKEND, read into moe.all2all).
_ENV_ELSEWHERE = frozenset({"VLLM_ALL2ALL_BACKEND"})


def _before(a: str, b: str) -> bool:
    from ..facts.versions import parse_version
    return parse_version(a) < parse_version(b)


def _env_data() -> dict[str, list[str]]:
    import json
    from ..resources import package_text
    return json.loads(package_text("engines", "data", "vllm-envs.json"))["reads"]

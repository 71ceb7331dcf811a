"""An engine command line -> the role fields of an InferenceDeployment (the inverse of
``engines/vllm.py`` / ``engines/sglang.py``'s ``launch``).

Every option is either mapped to the spec field that renders it (the dialects' DERIVED_FLAGS
name the field), or dropped because moegen derives it from the layout and the pod (ranks,
addresses, listeners, shutdown), or kept verbatim in ``roles[].engineArgs``. What a field cannot
hold is an :class:`~.launch.Issue` (IMP finding). The admission limit (vLLM ``--max-num-seqs``
per DP rank, SGLang ``--max-running-requests``) is what moegen renders from
``sizing.concurrency``: a workload moegen rendered (``app.kubernetes.io/managed-by: moegen``)
gets it back as ``sizing.concurrency``; any other as ``serving.maxNumSeqs`` (the engines' cap,
not a promise that that many longest requests fit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, get_args

from ..engines import sglang as sg
from ..engines import vllm as vl
from ..engines.options import FLAG as _OPTION_TOKEN
from ..engines.options import arity_problem, known_releases, value_problem
from ..errors import Location
from ..spec.models import Moe
from .argv import EngineCommand, Option, canonical, resolve
from .launch import Issue, Launch
from .shell import is_runtime, show

#: vLLM connector class -> kvTransfer.connector (engines/vllm.py CONNECTORS, inverted).
CONNECTORS = {cls: name for name, cls in vl.CONNECTORS.items()}
#: SGLang ``--moe-a2a-backend`` [+ ``--deepep-mode``] -> moe.all2all (engines/sglang.py A2A).
SG_A2A = {(backend, mode or None): name for name, (backend, mode) in sg.A2A.items()}
#: Options moegen derives from the layout, the pod or the router, by canonical name: dropped.
VLLM_DROPPED = {
    "--host", "--data-parallel-size-local", "--data-parallel-start-rank",
    "--data-parallel-rank", "--data-parallel-address", "--data-parallel-rpc-port",
    "--data-parallel-backend", "--headless", "--nnodes", "--node-rank", "--master-addr",
    "--master-port", "--distributed-executor-backend", "--shutdown-timeout",
}
#: Load-balancing modes moegen does not render (it runs internal load balancing, or one pod per
#: rank): dropped with a finding (vllm/engine/arg_utils.py ParallelConfig).
VLLM_LB_MODES = {"--data-parallel-hybrid-lb", "--data-parallel-external-lb",
                 "--data-parallel-multi-port-external-lb", "--data-parallel-supervisor-port"}
#: The listener options moegen owns (its probes, Services and router speak plain HTTP).
LISTENERS = {"--uds", "--grpc", "--ssl-keyfile", "--ssl-certfile", "--ssl-ca-certs",
             "--grpc-mode", "--enable-ssl-refresh"}
SG_DROPPED = {"--host", "--nnodes", "--node-rank", "--dist-init-addr",
              "--moe-dense-tp-size", "--disaggregation-bootstrap-port", "--cuda-graph-max-bs",
              "--cuda-graph-max-bs-decode", "--enable-metrics", "--cp-strategy",
              "--enable-prefill-cp", "--enable-dp-attention", "--speculative-eagle-topk",
              "--speculative-num-draft-tokens", "--deepep-mode", "--disaggregation-ib-device"}
#: The all-to-all backends the spec names (spec/models.py Moe.all2all).
_SPEC_A2A = tuple(get_args(get_args(Moe.model_fields["all2all"].annotation)[0]))
#: KV cache dtypes the spec names (serving.kvCacheDtype) by the engines' spellings.
KV_DTYPES = {"auto": "auto", "fp8": "fp8", "fp8_e4m3": "fp8"}


@dataclass
class RoleFields:
    """What one engine command says about its role.

    Attributes:
        role: role fields (``parallel``, ``moe``, ``speculative``, ``kvTransfer``, ``serving``,
            ``sizing``, ``engineArgs``) as spec data; locs: path under the role -> location.
        model: ``name``/``path``/``weights`` found on the command line; model_locs likewise.
        mode: ``prefill``/``decode`` when the command says (SGLang ``--disaggregation-mode``,
            the vLLM KV role, Dynamo's wrapper), else None.
        kv_role: vLLM's ``kv_role`` as written; kv_nixl_role: the ``kv_role`` of a
            NixlConnector inside a MultiConnector (its ``kv_connector_extra_config.connectors``:
            vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/multi_connector.py
            ``_get_connector_classes_and_configs`` builds each child from its own dict, the
            outer kv_role not inherited); kv_extra: its ``kv_connector_extra_config``;
            kv_unmodelled: its keys beyond connector and role (the extra config is checked
            against ``network.rdma`` once the pods are read); devices: SGLang's ``--disaggregation-ib-device``.
        auto_len: ``--max-model-len auto``/-1: vLLM fits the length to the KV memory left
            rather than refusing to start (vLLM 0.33.0 vllm/v1/core/kv_cache_planning.py
            ``_auto_fit_max_model_len``), so a model length that does not fit is not an error.
        default_admission: where the SGLang command is, when it leaves
            ``--max-running-requests`` unset: SGLang's own default admission, which the
            assembled role states as ``sizing.concurrency: engine-default`` (not on prefill).
        prefill_cp: where SGLang's ``--enable-prefill-cp`` is (the model decides what it does:
            importer/prefill_cp.py).
        issues: what the spec cannot hold.
    """

    role: dict = field(default_factory=dict)
    locs: dict = field(default_factory=dict)
    model: dict = field(default_factory=dict)
    model_locs: dict = field(default_factory=dict)
    mode: str | None = None
    port: int | None = None
    kv_role: str | None = None
    kv_nixl_role: str | None = None
    kv_extra: Any = None
    kv_unmodelled: list[str] = field(default_factory=list)
    devices: list[str] | None = None
    all2all_env: bool = False
    auto_len: bool = False
    default_admission: Location | None = None
    prefill_cp: Location | None = None
    issues: list[Issue] = field(default_factory=list)


def _spelled(engine: str, token: str) -> str:
    """An option token as the engine's parser reads it: vLLM's ``--x_y`` as ``--x-y``, an
    abbreviation as the option it selects (``--tp`` -> ``--tp-size``), ``=value`` kept."""
    from .argv import resolve
    name, eq, value = token.partition("=")
    if engine == "vllm" and name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    full = resolve(engine, None, name) or name
    return full + eq + value


def _compact(token: str) -> str:
    """A JSON value written over several lines (a YAML block scalar) as one line, as the
    engine reads it (``json.loads``); other tokens unchanged."""
    if "\n" in token and token.lstrip()[:1] in "{[":
        import json
        try:
            return json.dumps(json.loads(token), separators=(",", ":"))
        except ValueError:
            return token
    return token


def _int(text: Any) -> int | None:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _float(text: Any) -> float | None:
    try:
        return float(str(text).strip())
    except (TypeError, ValueError):
        return None


class _Reader:
    """Consumes options into a RoleFields, remembering which were used."""

    def __init__(self, cmd: EngineCommand, launch: Launch, version: str | None = None) -> None:
        self.cmd, self.launch = cmd, launch
        self.out = RoleFields()
        self.used: set[int] = set()
        self.bad = _refused(self, version)   # refused by the engine: reported, not read
        self.used |= self.bad

    def opt(self, *names: str) -> Option | None:
        """The last option that is a spelling of one of ``names`` (marked as used)."""
        want = {canonical(self.cmd.engine, None, n)[0] for n in names}
        found = None
        for x in self.cmd.options:
            if x.canonical in want and x.index not in self.bad:
                self.used.add(x.index)
                found = x
        return found

    def loc(self, o: Option | None) -> Location:
        return self.launch.loc(o.index if o is not None else 0)

    def put(self, path: tuple, value: Any, o: Option | None) -> None:
        node = self.out.role
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
        self.out.locs[path] = self.loc(o)

    def number(self, path: tuple, o: Option | None, kind=_int) -> None:
        if o is None or o.value is None:
            return
        value = kind(o.value if isinstance(o.value, str) else o.value[0])
        if value is None:
            self.issue("IMP003", f"{o.name} {show(str(o.value))}: not a number moegen can read",
                       o)
        else:
            self.put(path, value, o)

    def issue(self, code: str, message: str, o: Option | None, hint: str = "",
              error: bool = False) -> None:
        self.out.issues.append(Issue(code, message, self.loc(o), hint, error))

    def rest(self) -> None:
        """Options nobody mapped -> engineArgs, as written (a wrapper's own are dropped)."""
        args: list[str] = []
        argv = self.launch.argv
        ends = [o.index for o in self.cmd.options[1:]] + [len(argv)]
        for o, end in zip(self.cmd.options, ends):
            if o.index in self.used or o.wrapper:
                continue
            toks = [_compact(t) for t in argv[o.index:end]]
            toks[0] = _spelled(self.cmd.engine, toks[0])
            if any(is_runtime(t) for t in toks) or any("\n" in t for t in toks):
                self.issue("IMP003", f"{show(' '.join(toks))}: the value is only known in the "
                           "running pod; moegen cannot keep it in engineArgs", o)
                continue
            args += toks
        if args:
            self.out.role["engineArgs"] = args
            self.out.locs[("engineArgs",)] = self.loc(self.cmd.options[0])


def _vllm_parallel(r: _Reader) -> None:
    r.number(("parallel", "tensor"), r.opt("--tensor-parallel-size"))
    r.number(("parallel", "pipeline"), r.opt("--pipeline-parallel-size"))
    r.number(("parallel", "data"), r.opt("--data-parallel-size"))
    o = r.opt("--enable-expert-parallel")
    if o is not None:
        r.put(("parallel", "expert"), not o.is_negative("--enable-expert-parallel"), o)
    for name in ("--decode-context-parallel-size", "--prefill-context-parallel-size"):
        o = r.opt(name)
        if o is not None and _int(o.value) and _int(o.value) > 1:
            r.number(("parallel", "context"), o)


def _vllm_moe(r: _Reader, dialect_env: bool) -> None:
    o = r.opt("--all2all-backend")
    if o is not None and isinstance(o.value, str):
        if o.value in _SPEC_A2A:
            r.put(("moe", "all2all"), o.value, o)
        else:   # a backend the spec does not name: left out of the spec, said so
            r.issue("IMP005", f"--all2all-backend {o.value}: moegen does not model this "
                    f"backend (it renders {', '.join(_SPEC_A2A)}); the spec leaves it out and "
                    "the all-to-all checks did not run", o)
    env = r.launch.env.get("VLLM_ALL2ALL_BACKEND")
    if o is None and isinstance(env, str) and env:
        loc = r.launch.env_locations.get("VLLM_ALL2ALL_BACKEND", r.loc(None))
        if dialect_env:
            node = r.out.role.setdefault("moe", {})
            node["all2all"] = env
            r.out.locs[("moe", "all2all")] = loc
            r.out.all2all_env = True
        else:
            r.out.issues.append(Issue(
                "IMP007", f"VLLM_ALL2ALL_BACKEND={env} is not read by this vLLM release (0.16.0 "
                "and later take --all2all-backend only): the all-to-all backend stays "
                "allgather_reducescatter", loc, f"pass --all2all-backend {env}"))
    eplb = r.opt("--enable-eplb")
    cfg = r.cmd.json("--eplb-config")
    cfg_opt = r.opt("--eplb-config")
    if eplb is not None and not eplb.is_negative("--enable-eplb"):
        cfg = cfg or {}
        e: dict[str, Any] = {"enabled": True}
        for key, spec_key, conv in (("window_size", "windowSize", _int),
                                    ("step_interval", "stepInterval", _int),
                                    ("num_redundant_experts", "redundantExperts", _int)):
            if key in cfg and conv(cfg[key]) is not None:
                e[spec_key] = conv(cfg[key])
        if "log_balancedness" in cfg:
            e["logBalancedness"] = str(cfg["log_balancedness"]).lower() == "true"
        legacy = r.opt("--num-redundant-experts")
        if legacy is not None and _int(legacy.value) is not None:
            e["redundantExperts"] = _int(legacy.value)
        r.put(("moe", "eplb"), e, eplb)
        for key in e:
            if key != "enabled" and (cfg_opt or legacy) is not None:
                r.out.locs[("moe", "eplb", key)] = r.loc(legacy if key == "redundantExperts"
                                                         and legacy else cfg_opt)
    o = r.opt("--expert-placement-strategy")
    if o is not None and isinstance(o.value, str):
        r.put(("moe", "placement"), o.value, o)
    o = r.opt("--enable-dbo")
    if o is not None and not o.is_negative("--enable-dbo"):
        r.put(("moe", "overlap"), "two_batch", o)


def _vllm_pd(r: _Reader) -> None:
    o = r.opt("--kv-transfer-config")
    if o is not None:
        cfg = r.cmd.json("--kv-transfer-config")
        if cfg is None:
            r.issue("IMP003", f"{o.name}: not a JSON object", o, error=True)
            return
        cls = cfg.get("kv_connector")
        if cls in CONNECTORS:
            r.put(("kvTransfer", "connector"), CONNECTORS[cls], o)
        else:
            r.issue("IMP005", f"KV connector {cls!r} is not one moegen renders "
                    f"({', '.join(sorted(CONNECTORS))})", o)
        r.out.kv_role = cfg.get("kv_role")
        if cls == "MultiConnector":
            inner = (cfg.get("kv_connector_extra_config") or {}).get("connectors") \
                if isinstance(cfg.get("kv_connector_extra_config"), dict) else None
            nixl = [c for c in inner if isinstance(c, dict)
                    and c.get("kv_connector") == "NixlConnector"] if isinstance(inner, list) else []
            if nixl:
                r.out.kv_nixl_role = nixl[0].get("kv_role")
        # moegen renders kv_load_failure_policy "recompute" on decode (engines/vllm.py); any
        # other value it keeps as kvTransfer.loadFailurePolicy.
        policy = cfg.get("kv_load_failure_policy")
        derived = set()
        if policy == vl.KV_LOAD_FAILURE_POLICY and cfg.get("kv_role") == "kv_consumer":
            derived = {"kv_load_failure_policy"}
        elif policy in ("recompute", "fail") and cls in CONNECTORS:
            r.put(("kvTransfer", "loadFailurePolicy"), policy, o)
            derived = {"kv_load_failure_policy"}
        # kv_connector_extra_config is compared with what network.rdma implies once the pod is
        # read (assemble.py _kv_config_issues).
        r.out.kv_extra = cfg.get("kv_connector_extra_config")
        r.out.kv_unmodelled = sorted(set(cfg) - {"kv_connector", "kv_role"} - derived)
    o = r.opt("--speculative-config")
    if o is not None:
        cfg = r.cmd.json("--speculative-config") or {}
        method = str(cfg.get("method", ""))
        if method in ("mtp", "deepseek_mtp"):
            spec: dict[str, Any] = {"method": "mtp"}
            if _int(cfg.get("num_speculative_tokens")):
                spec["numSpeculativeTokens"] = _int(cfg["num_speculative_tokens"])
            r.put(("speculative",), spec, o)
        else:
            r.issue("IMP005", f"speculative method {method!r} is not one moegen renders (mtp)", o)


def _serving(r: _Reader, names: dict[str, tuple[str, ...]]) -> None:
    """Common serving options; ``names``: spec key -> the engine's option names."""
    o = r.opt("--port")
    if o is not None:
        r.out.port = _int(o.value)
    o = r.opt(*names["maxModelLen"])
    if o is not None and str(o.value).strip().lower() in ("auto", "-1"):
        # vLLM reads "auto"/-1 as -1 (vllm/utils/argparse_utils.py human_readable_int_or_auto):
        # the model's own length (vllm/config/model.py), shrunk to what the KV cache holds
        # when it does not fit (v1/core/kv_cache_planning.py _auto_fit_max_model_len).
        r.out.auto_len = True
    elif o is not None:
        r.number(("serving", "maxModelLen"), o)
    o = r.opt(*names["kvCacheDtype"])
    if o is not None and isinstance(o.value, str):
        if o.value in KV_DTYPES:
            r.put(("serving", "kvCacheDtype"), KV_DTYPES[o.value], o)
        else:
            r.issue("IMP005", f"KV cache dtype {o.value!r} is not one the spec names (auto, fp8)",
                    o)
    r.number(("serving", "maxNumBatchedTokens"), r.opt(*names["maxNumBatchedTokens"]))


def _admission(r: _Reader, o: Option | None, per_rank: bool, managed: bool) -> None:
    if o is None or _int(o.value) is None:
        return
    n = _int(o.value)
    if managed:
        data = r.out.role.get("parallel", {}).get("data", 1) if per_rank else 1
        r.put(("sizing", "concurrency"), n * data, o)
    else:
        r.put(("serving", "maxNumSeqs"), n, o)


def _refused(r: _Reader, version: str | None) -> set[int]:
    """The options whose values the release's parser refuses at start (ENG006, as for
    engineArgs: engines/options.py ``value_problem``, ``arity_problem``), by argv index."""
    engine = r.cmd.engine
    version = version if version in known_releases(engine) else None   # types only
    out: set[int] = set()
    for o in r.cmd.options:
        if o.wrapper or not o.known:
            continue
        name = resolve(engine, version or known_releases(engine)[-1], o.name) or o.name
        values = [] if o.value is None else [o.value] if isinstance(o.value, str) else o.value
        given = [v for v in values if not _OPTION_TOKEN.match(v)]
        wrong = arity_problem(engine, name, given, "=" in r.launch.argv[o.index])
        problem = None if wrong else next(
            (p for v in given if not is_runtime(v)
             for p in [value_problem(engine, version, name, v)] if p), None)
        if wrong or problem:
            what = wrong or f"{o.name} {problem[0]}"
            label = "vLLM" if engine == "vllm" else "SGLang"
            r.issue("ENG006", f"{label} {version or ''}".strip() + f": {what}: the engine "
                    "exits at start",
                    o, problem[1] if problem else "give the option its value", error=True)
            out.add(o.index)
    return out


def vllm_fields(cmd: EngineCommand, launch: Launch, dialect_env: bool,
                managed: bool, version: str | None = None) -> RoleFields:
    """The role fields of a ``vllm serve`` command (``dialect_env``: the release reads
    ``VLLM_ALL2ALL_BACKEND``; ``managed``: moegen rendered the workload; ``version``: the
    release whose option values are checked, default the newest)."""
    r = _Reader(cmd, launch, version)
    model = r.opt("--model")
    path = cmd.model or (model.value if model is not None else None)
    if isinstance(path, str):
        r.out.model["path"] = path
        r.out.model_locs["path"] = r.loc(model) if cmd.model is None \
            else launch.loc(cmd.model_index or cmd.start)
    o = r.opt("--served-model-name")
    if o is not None and o.value:
        names = o.value if isinstance(o.value, list) else [o.value]
        r.out.model["name"] = names[0]
        r.out.model_locs["name"] = r.loc(o)
    o = r.opt("--quantization")
    if o is not None and isinstance(o.value, str):
        r.out.model["quantization"] = o.value
    _vllm_parallel(r)
    _vllm_moe(r, dialect_env)
    _vllm_pd(r)
    _serving(r, {"maxModelLen": ("--max-model-len",), "kvCacheDtype": ("--kv-cache-dtype",),
                 "maxNumBatchedTokens": ("--max-num-batched-tokens",)})
    r.number(("serving", "gpuMemoryUtilization"), r.opt("--gpu-memory-utilization"), _float)
    o = r.opt("--enforce-eager")
    if o is not None:
        r.put(("serving", "enforceEager"), not o.is_negative("--enforce-eager"), o)
    _admission(r, r.opt("--max-num-seqs"), True, managed)
    for name in sorted(VLLM_DROPPED):
        r.opt(name)
    mode = r.opt("--disaggregation-mode")   # the Dynamo wrapper's
    if mode is not None and mode.value in ("prefill", "decode"):
        r.out.mode = mode.value
    for name in sorted(VLLM_LB_MODES):
        o = r.opt(name)
        if managed and name in ("--data-parallel-multi-port-external-lb",
                                "--data-parallel-supervisor-port"):
            continue   # moegen's DP supervisor for rank endpoints (router.gateway.rankEndpoints)
        if o is not None and name != "--data-parallel-supervisor-port":
            r.issue("IMP005", f"{o.name}: moegen renders internal load balancing (the leader "
                    "serves the API) or one pod per rank, not this mode", o)
    for name in sorted(LISTENERS):
        o = r.opt(name)
        if o is not None:
            r.issue("IMP005", f"{o.name}: moegen serves plain HTTP on serving.port (its probes, "
                    "Services and router speak it)", o)
    o = r.opt("--kv-cache-memory-bytes")
    if o is not None:
        r.issue("IMP005", f"{o.name}: moegen sizes the KV cache from "
                "serving.gpuMemoryUtilization", o)
    r.opt("--api-server-count")   # kept below when it is a serving pod's
    _keep_api_servers(r)
    r.rest()
    return r.out


def _keep_api_servers(r: _Reader) -> None:
    o = r.cmd.get("--api-server-count")
    if o is not None and _int(o.value) not in (None, 0):
        r.used.discard(o.index)


def sglang_fields(cmd: EngineCommand, launch: Launch, managed: bool,
                  version: str | None = None) -> RoleFields:
    """The role fields of an SGLang ``launch_server`` command (``managed``: moegen rendered the
    workload; ``version``: as :func:`vllm_fields`)."""
    r = _Reader(cmd, launch, version)
    o = r.opt("--model-path")
    if o is not None and isinstance(o.value, str):
        r.out.model["path"] = o.value
        r.out.model_locs["path"] = r.loc(o)
    o = r.opt("--served-model-name")
    if o is not None and isinstance(o.value, str):
        r.out.model["name"] = o.value
        r.out.model_locs["name"] = r.loc(o)
    o = r.opt("--quantization")
    if o is not None and isinstance(o.value, str):
        r.out.model["quantization"] = o.value
    tp = r.opt("--tp-size")
    dp = r.opt("--attn-dp-size") or r.opt("--dp-size")
    r.opt("--dp-size", "--attn-dp-size")
    attention_dp = r.cmd.flag("--enable-dp-attention") or cmd.get("--attn-dp-size") is not None
    group, data = _int(tp.value) if tp else 1, _int(dp.value) if dp else 1
    if group and data and attention_dp and data > 1 and group % data == 0:
        r.put(("parallel", "tensor"), group // data, tp)
        r.put(("parallel", "data"), data, dp)
    elif group:
        r.put(("parallel", "tensor"), group, tp)
        if attention_dp and data and data > 1:
            # SGLang 0.5.23 python/sglang/srt/runtime_context.py derive_attn_tp_size: each
            # attention group is tp // attn_dp ranks; the ranks left over get an attention
            # group index >= attn_dp (derive_attention_ranks) that no group has.
            r.issue("IMP009", f"attention data parallelism {data} does not divide --tp-size "
                    f"{group} ({group} % {data} = {group % data}): SGLang makes {data} groups "
                    f"of {group // data} ranks and {group % data} rank(s) belong to none",
                    dp, hint="make the attention DP size divide the tensor-parallel size",
                    error=True)
        elif dp is not None and data and data > 1:
            r.issue("IMP005", f"--dp-size {data} without DP attention: SGLang runs {data} "
                    "router-balanced engine copies in one process group; moegen renders "
                    "attention data parallelism (or one instance per replica)", dp)
    r.number(("parallel", "pipeline"), r.opt("--pp-size"))
    ep = r.opt("--ep-size")
    legacy_ep = r.opt("--enable-ep-moe")
    if (ep is not None and (_int(ep.value) or 1) > 1) or legacy_ep is not None:
        r.put(("parallel", "expert"), True, ep or legacy_ep)
        if ep is not None and group and _int(ep.value) not in (None, group):
            r.issue("IMP005", f"--ep-size {ep.value} differs from --tp-size {group}: moegen "
                    "renders expert parallelism over the whole group", ep)
    cp = r.opt("--attn-cp-size")
    if cp is not None and (_int(cp.value) or 1) > 1:
        r.number(("parallel", "context"), cp)
    if (o := r.opt("--enable-prefill-cp")) is not None and cmd.flag("--enable-prefill-cp"):
        r.out.prefill_cp = r.loc(o)   # the model decides what SGLang does: prefill_cp.py
    _sglang_moe(r)
    _sglang_pd(r)
    _serving(r, {"maxModelLen": ("--context-length",), "kvCacheDtype": ("--kv-cache-dtype",),
                 "maxNumBatchedTokens": ("--chunked-prefill-size",)})
    r.number(("serving", "memFractionStatic"), r.opt("--mem-fraction-static"), _float)
    r.number(("serving", "swaFullTokensRatio"), r.opt("--swa-full-tokens-ratio"), _float)
    o = r.opt("--disable-cuda-graph")
    normal_decode = r.out.role.get("moe", {}).get("all2all") == "deepep_high_throughput" \
        and r.out.mode != "prefill"
    if o is not None and not normal_decode:
        r.put(("serving", "enforceEager"), True, o)
    o = r.opt("--max-running-requests")
    _admission(r, o, False, managed)
    if o is None:
        r.out.default_admission = r.loc(None)
    for name in sorted(SG_DROPPED | LISTENERS):
        o = r.opt(name)
        if o is not None and name in LISTENERS:
            r.issue("IMP005", f"{o.name}: moegen serves plain HTTP on serving.port", o)
    r.opt("--config")
    r.rest()
    return r.out


def _sglang_moe(r: _Reader) -> None:
    o = r.opt("--moe-a2a-backend")
    mode = r.opt("--deepep-mode")
    if o is not None and isinstance(o.value, str):
        key = (o.value, mode.value if mode is not None and o.value == "deepep" else None)
        name = SG_A2A.get(key) or SG_A2A.get((o.value, None))
        if o.value == "none":
            pass   # SGLang's default: no all-to-all backend (moe.all2all unset)
        elif name is not None:
            r.put(("moe", "all2all"), name, o)
        else:
            r.issue("IMP005", f"--moe-a2a-backend {o.value}"
                    f"{' --deepep-mode ' + str(mode.value) if mode else ''}: not a backend "
                    "moegen renders", o)
    all2all = r.out.role.get("moe", {}).get("all2all")
    o = r.opt("--deepep-v2-mode")
    if o is not None and not (all2all == "deepep_v2" and o.value == "hybrid"):
        r.issue("IMP005", f"--deepep-v2-mode {o.value}: moegen renders hybrid for a deepep_v2 "
                "instance across nodes and SGLang's default (direct) within one", o)
    o = r.opt("--speculative-moe-a2a-backend")
    if o is not None and o.value != sg.DRAFT_A2A.get(all2all or ""):
        r.issue("IMP005", f"--speculative-moe-a2a-backend {o.value}: moegen's MTP draft "
                "inherits the target's all-to-all backend (none behind deepep_v2)", o)
    eplb = r.opt("--enable-eplb")
    if eplb is not None:
        e: dict[str, Any] = {"enabled": True}
        for name, key in (("--ep-num-redundant-experts", "redundantExperts"),
                          ("--eplb-rebalance-num-iterations", "stepInterval"),
                          ("--expert-distribution-recorder-buffer-size", "windowSize")):
            v = r.opt(name)
            if v is not None and _int(v.value) is not None:
                e[key] = _int(v.value)
        r.put(("moe", "eplb"), e, eplb)
    for flag, overlap in (("--enable-two-batch-overlap", "two_batch"),
                          ("--enable-single-batch-overlap", "single_batch")):
        o = r.opt(flag)
        if o is not None:
            r.put(("moe", "overlap"), overlap, o)


def _sglang_pd(r: _Reader) -> None:
    o = r.opt("--disaggregation-mode")
    if o is not None and o.value in ("prefill", "decode"):
        r.out.mode = o.value
        backend = r.opt("--disaggregation-transfer-backend")
        value = backend.value if backend is not None else "mooncake"
        if value in sg.TRANSFER:
            r.put(("kvTransfer", "connector"), value, backend or o)
        else:
            r.issue("IMP005", f"transfer backend {value!r} is not one moegen renders "
                    f"({', '.join(sg.TRANSFER)})", backend or o)
    dev = r.opt("--disaggregation-ib-device")
    if dev is not None and isinstance(dev.value, str):
        r.out.devices = dev.value.split(",")
    alg = r.opt("--speculative-algorithm")
    if alg is not None and alg.value in ("EAGLE", "NEXTN", "EAGLE3"):
        steps = r.opt("--speculative-num-steps")
        topk, draft = r.cmd.value("--speculative-eagle-topk"), r.cmd.value(
            "--speculative-num-draft-tokens")
        n = _int(steps.value) if steps is not None else None
        spec: dict[str, Any] = {"method": "mtp"}
        if n:
            spec["numSpeculativeTokens"] = n
        r.put(("speculative",), spec, alg)
        if (topk not in (None, "1")) or (draft is not None and n and _int(draft) != n + 1):
            r.issue("IMP005", f"EAGLE with top-k {topk} and {draft} draft tokens: moegen renders "
                    "top-k 1 with steps + 1 draft tokens", alg)
    elif alg is not None:
        r.issue("IMP005", f"speculative algorithm {alg.value!r} is not one moegen renders "
                "(EAGLE/NEXTN over the MTP module)", alg)

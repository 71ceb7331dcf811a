"""Rules about the model: its source, context length, quantization blocks and MTP module."""

from __future__ import annotations

from ..catalog import GPUS
from ..facts.requirements import missing_class, refusals
from ..pods import effective_pod
from ..roles import CONFIG_OVERRIDES, LONG_CONTEXT_ENV, RoleInput, context_limit
from ..sizing import placement_for
from ..sizing.params import inventory
from ..sizing.weights import FP8_BLOCK, block_misfits
from .registry import Context, E, Hit, W, role_path, rule, serving_path


@rule("MOD001", E, "model: exactly one of architecture and config", "docs/spec.md §2 (model: a catalog id, or config: a HF config.json)")
def _model_source(ctx: Context):
    m = ctx.spec.spec.model
    if (m.architecture is None) == (m.config is None):
        yield Hit(("spec", "model"),
                  "give exactly one of model.architecture and model.config "
                  f"(architecture={m.architecture!r}, config={m.config!r})",
                  "use a catalog id such as deepseek-v3, or config: path/to/config.json")


@rule("MOD004", E, "model.volume names exactly one volume source",
      "Kubernetes core/v1 Volume: one VolumeSource member per volume "
      "(https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/volume/)")
def _volume_one(ctx: Context):
    vol = ctx.spec.spec.model.volume
    if vol is not None and len(vol.sources()) != 1:
        names = ", ".join(vol.sources()) or "none"
        yield Hit(("spec", "model", "volume"),
                  f"model.volume sets {len(vol.sources())} sources ({names})",
                  "keep one; in an overlay set the base's source to null, e.g. "
                  "persistentVolumeClaim: null")


def _long_context_allowed(r: RoleInput, engine: str) -> str | None:
    """The variable that lets role ``r``'s engine start past its derived context, when set on."""
    name, on = LONG_CONTEXT_ENV.get(engine, ("", ()))
    value = r.env_value(name) if name else None
    if value is None:
        return None
    # vLLM strips the value (envs.py), SGLang's EnvBool does not (environ.py EnvBool.parse).
    value = value.strip() if engine == "vllm" else value
    return name if value.lower() in on else None


def _past_context(ctx: Context):
    """(index, role, maxModelLen, context, where it comes from, the allow-long variable set on
    or None) of every role whose maxModelLen passes the context its engine derives."""
    for i, r in ctx.role_items():
        want = r.serving.maxModelLen
        limit, where = context_limit(r, ctx.engine)
        if want is not None and want > limit:
            yield i, r, want, limit, where, _long_context_allowed(r, ctx.engine)


@rule("LEN001", E, "maxModelLen must not exceed the model's context",
      "vLLM 0.33.0 vllm/config/model.py _get_and_verify_max_len (max_model_len vs the derived "
      "limit, after --hf-overrides); SGLang 0.5.23 python/sglang/srt/configs/model_config.py "
      "_derive_context_length (context_length, after --json-model-override-args)")
def _max_len(ctx: Context):
    for i, _, want, limit, where, allowed in _past_context(ctx):
        if allowed:
            continue
        option = CONFIG_OVERRIDES.get(ctx.engine, "the engine's config override")
        env = LONG_CONTEXT_ENV.get(ctx.engine, ("",))[0]
        yield Hit(serving_path(ctx, i, "maxModelLen"),
                  f"maxModelLen {want} exceeds the model's context: {where} {limit}; the "
                  "engine refuses to start",
                  f"use maxModelLen <= {limit}; for a model extended by rope scaling (YaRN), "
                  f"set max_position_embeddings in {option} with the scaling"
                  + (f", or {env}=1 (the engine then warns that positions past {limit} may "
                     "be wrong)" if env else ""))


@rule("LEN002", W, "a maxModelLen past the model's context is allowed by a variable",
      "vLLM 0.33.0 vllm/config/model.py _get_and_verify_max_len (VLLM_ALLOW_LONG_MAX_MODEL_LEN: "
      "\"positions exceeding derived_max_model_len lead to nan\"); SGLang 0.5.23 "
      "srt/configs/model_config.py (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: \"may lead to "
      "incorrect model outputs or CUDA errors\")")
def _max_len_allowed(ctx: Context):
    for i, _, want, limit, where, env in _past_context(ctx):
        if env is None:
            continue
        yield Hit(serving_path(ctx, i, "maxModelLen"),
                  f"maxModelLen {want} exceeds the model's context ({where} {limit}); {env} "
                  "lets the engine start, and positions past it may produce wrong output or "
                  "CUDA errors (the engine's own warning)",
                  f"use maxModelLen <= {limit}, or extend the model's context with its rope "
                  f"scaling and max_position_embeddings in "
                  f"{CONFIG_OVERRIDES.get(ctx.engine, 'the config override')}")


@rule("QNT001", E, "tensor-parallel shards hold whole FP8 quantization blocks",
      "vLLM 0.33 model_executor/layers/quantization/utils/fp8_utils.py validate_fp8_block_shape "
      "(_moe); SGLang 0.5.23 python/sglang/srt/layers/quantization/fp8_utils.py: weight shards "
      "must be multiples of the 128 x 128 block")
def _fp8_blocks(ctx: Context):
    for i, r in ctx.role_items():
        if r.arch.num_attention_heads % r.layout.tensor:
            continue  # LAY002 reports a tensor size that does not even divide the heads
        try:
            inv = inventory(r.arch)
        except (KeyError, TypeError, ValueError):
            continue  # SIZ005 reports a model that cannot be inventoried
        misfits = block_misfits(inv, r.arch, r.model.weights, placement_for(r, ctx.engine))
        if not misfits:
            continue
        shown = "; ".join(f"{t.name} ({t.component}) splits {t.split} over {tp} GPUs into "
                          f"{size:g}-wide shards" for t, tp, size in misfits[:3])
        experts = any(t.component == "routed_experts" for t, _, _ in misfits)
        yield Hit(role_path(i, "parallel"),
                  f"role {r.name!r}: {shown}, not multiples of the {FP8_BLOCK}-wide FP8 blocks "
                  f"of the {r.model.weights} checkpoint: the engine refuses to load",
                  "use a smaller tensor size" + (" or expert parallelism (parallel.expert: "
                                                   "true)" if experts else ""))


@rule("SPD001", E, "MTP needs a checkpoint with an MTP module",
      "HF config num_nextn_predict_layers; vLLM 0.33.0 vllm/config/speculative.py (mtp draft = "
      "target)")
def _mtp_layers(ctx: Context):
    for i, r in ctx.role_items():
        if r.speculative is not None and not r.speculative_from and r.arch.mtp_layers == 0:
            yield Hit(role_path(i, "speculative", "method"),
                      "the model has num_nextn_predict_layers = 0: no MTP module to draft with",
                      "remove speculative, or use a checkpoint with MTP layers")


@rule("SPD002", E, "speculative tokens beyond the MTP depth must be a multiple of it",
      "vLLM 0.33 vllm/config/speculative.py: num_speculative_tokens > n_predict must be divisible")
def _mtp_tokens(ctx: Context):
    for i, r in ctx.role_items():
        sp = r.speculative
        n = r.arch.mtp_layers
        if sp is None or r.speculative_from or not n:
            continue  # a carried config is checked on the decode role that sets it
        if sp.numSpeculativeTokens > n and sp.numSpeculativeTokens % n:
            yield Hit(role_path(i, "speculative", "numSpeculativeTokens"),
                      f"numSpeculativeTokens {sp.numSpeculativeTokens} is not a multiple of the "
                      f"model's {n} MTP layers", f"use a multiple of {n}")


@rule("MOD005", E, "the weights directory is mounted",
      "vLLM 0.33.0 vllm/transformers_utils/config.py and SGLang 0.5.23 "
      "python/sglang/srt/utils/hf_transformers_utils.py read a model path that does not exist as "
      "a Hugging Face repo id (huggingface_hub 2.4.0 huggingface_hub/utils/_validators.py "
      "validate_repo_id refuses '/models/...'): the engine crash-loops on scheduled GPUs")
def _weights_mounted(ctx: Context):
    spec = ctx.spec.spec
    if spec.model.hub is not None:
        return   # downloaded at start: MOD006/MOD007 judge the cache
    if spec.model.path is None:
        yield Hit(("spec", "model"), "model sets neither path (the weights directory) nor hub "
                  "(a download at start): the engine has no model to load",
                  "set model.path and model.volume, or model.hub")
        return
    if spec.model.volume is not None or spec.model.inImage:
        return
    path = spec.model.path.rstrip("/")

    def covered(m) -> bool:
        mount = str(m.get("mountPath", "")).rstrip("/")
        return path == mount or path.startswith(mount + "/")

    bare = [role.name for role in spec.roles
            if not any(covered(m) for m in effective_pod(spec, role).extra_volume_mounts)]
    if bare:
        yield Hit(("spec", "model", "volume"),
                  f"nothing is mounted at model.path {spec.model.path} in the pods of "
                  f"{', '.join(repr(n) for n in bare)}: model.volume is not set and no "
                  "pod.extraVolumeMounts covers it",
                  "set model.volume (e.g. {persistentVolumeClaim: {claimName: weights}}; an OCI "
                  "image of weights: {image: {reference: ...}}), mount them with "
                  "pod.extraVolumes/extraVolumeMounts, set model.inImage: true when the "
                  "engine image itself carries them, or model.hub for a download at start")


def _ephemeral_cache(spec) -> str | None:
    """What holds model.hub's cache when it does not outlive the pod (None: a PVC, hostPath or
    another persistent source)."""
    cache = spec.model.hub.cache
    if cache is None:
        return "the container's filesystem (no cache volume)"
    if cache.emptyDir is not None:
        return "an emptyDir"
    return None


@rule("MOD006", W, "a Hub download is kept in a cache that outlives the pod",
      "huggingface_hub 1.0 src/huggingface_hub/constants.py (HF_HOME, HF_HUB_CACHE: the "
      "download lands in the cache); Kubernetes emptyDir is deleted with the pod "
      "(https://kubernetes.io/docs/concepts/storage/volumes/#emptydir)")
def _hub_cache_kept(ctx: Context):
    spec = ctx.spec.spec
    if spec.model.hub is None or spec.model.hub.offline:
        return
    where = _ephemeral_cache(spec)
    if where is not None:
        yield Hit(("spec", "model", "hub"),
                  f"model.hub downloads {spec.model.hub.repo or spec.model.name} into "
                  f"{where}: every re-created pod downloads the weights again before it serves "
                  "(startup time, Hub rate limits)",
                  "give model.hub.cache a persistentVolumeClaim, or serve the weights from "
                  "model.path + model.volume")


@rule("MOD007", E, "an offline Hub cache holds the weights before the engine starts",
      "huggingface_hub 1.0 src/huggingface_hub/file_download.py (HF_HUB_OFFLINE: only the "
      "cache is read; a file missing there raises LocalEntryNotFoundError, and the engine "
      "exits)")
def _offline_cache(ctx: Context):
    spec = ctx.spec.spec
    if spec.model.hub is None or not spec.model.hub.offline:
        return
    where = _ephemeral_cache(spec)
    if where is not None:
        yield Hit(("spec", "model", "hub", "offline"),
                  f"model.hub.offline (HF_HUB_OFFLINE=1) reads the weights from the cache only, "
                  f"but the cache is {where}, which starts empty: the engine cannot load "
                  f"{spec.model.hub.repo or spec.model.name}",
                  "mount a cache volume that holds the download (a persistentVolumeClaim), or "
                  "drop offline")


def _refusal_hits(ctx: Context, warn: bool):
    if ctx.arch is None or ctx.dialect is None:
        return
    spec = ctx.spec.spec
    rows = [r for r in refusals(ctx.engine, spec.engine.version, ctx.arch)
            if r.warn == warn]
    for i, r in ctx.role_items():
        gpu = GPUS[spec.nodePools[spec.roles[i].nodePool].gpu]
        args = spec.roles[i].engineArgs
        for row in rows:
            if warn and any(a.startswith("--chat-template") for a in args):
                continue
            if row.match is None or row.match.holds(r, spec.model.weights, gpu.generation):
                yield Hit(role_path(i, *row.field),
                          f"role {r.name!r}: {ctx.arch.label} ({ctx.arch.engine_class}) on "
                          f"{ctx.dialect.label} {spec.engine.version}: {row.why} ({row.source})",
                          row.hint)


@rule("MOD032", E, "the engine release implements the model's class",
      "generator/facts/requirements.py CLASS_SINCE (each release's model registry, read in its "
      "wheel; vLLM 0.33.0 vllm/model_executor/models/registry.py, SGLang 0.5.23 "
      "python/sglang/srt/models/registry.py)")
def _model_class_release(ctx: Context):
    if ctx.arch is None or ctx.dialect is None:
        return
    version = ctx.spec.spec.engine.version
    missing = missing_class(ctx.engine, version, ctx.arch)
    if missing:
        first, source = missing
        yield Hit(("spec", "engine", "version"),
                  f"{ctx.dialect.label} {version} has no {ctx.arch.engine_class} "
                  f"({ctx.arch.label}): the class arrived in {first} ({source}); the server "
                  "exits at start, the architecture not supported",
                  f"use {ctx.dialect.label} {first} or later")


@rule("MOD030", E, "the engine runs the model with the role's features",
      "generator/facts/requirements.py REQUIREMENTS (one table of model requirements keyed by "
      "the model's capabilities, each row citing the engine file; e.g. SGLang 0.5.23 "
      "python/sglang/srt/configs/moe_model_registry.py, sgl-project/sglang PR#39408)")
def _model_refusals(ctx: Context):
    yield from _refusal_hits(ctx, warn=False)


@rule("MOD031", W, "the engine serves every API of the model",
      "generator/facts/requirements.py REQUIREMENTS (rows that break part of the API; e.g. "
      "vllm-project/vllm#30933: DeepSeek-V3.2 chat completions before vLLM 0.13.0)")
def _model_api_gaps(ctx: Context):
    yield from _refusal_hits(ctx, warn=True)

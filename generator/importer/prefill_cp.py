"""SGLang's ``--enable-prefill-cp`` read as SGLang 0.5.23 resolves it (IMP028, IMP030, IMP005).

* No ``--cp-strategy``: SGLang refuses to start, for every model (python/sglang/srt/arg_groups/
  parallel_hook.py ``handle_context_parallelism``: "--cp-strategy must be set when
  --enable-prefill-cp is enabled"): IMP030, an error.
* The classes ``_deepseek_family_overrides`` is registered for (arg_groups/model_overrides/
  deepseek_v2.py; DeepseekV2ForCausalLM is not among them) and DeepSeek-V4
  (arg_groups/deepseek_v4_hook.py ``validate_deepseek_v4_cp``) run attention data-parallel
  groups of ``attn_dp_size x dp_size`` (model_override_base.py
  ``context_parallel_attn_dp_size``; ``--dp-size N --enable-dp-attention`` is first rewritten to
  ``--attn-dp-size N``, parallel_hook.py ``handle_deprecated_dp_attention``) and make the CP group
  ``tp_size // attn_dp_size``; DSA keeps an explicit ``--attn-cp-size`` above 1 with
  ``interleave``. Plain MLA, and DSA with ``zigzag``, also force ``moe_a2a_backend deepep``,
  ``ep_size = tp_size`` and ``moe_dense_tp_size 1``; DeepSeek-V4 forces ``moe_dense_tp_size 1``.
* Refusals (IMP030): DSA and DeepSeek-V4 assert ``tp_size <= 8``; DeepSeek-V4 asserts one
  attention DP group and refuses ``zigzag`` on CUDA; DeepSeek-V3.2 refuses ``zigzag``
  (parallel_hook.py); attention DP beside ``--dp-size`` replicas is refused
  (``context_parallel_attn_dp_size``).
* Other models keep ``attn_cp_size`` as given (default 1, arg_groups/fields/parallel.py): with
  none above 1 the prefill splits no tokens and the flag is dropped (IMP028).

moegen renders ``--attn-cp-size C --enable-prefill-cp --cp-strategy interleave`` from
``roles[].parallel.context`` (engines/sglang.py): ``zigzag`` is said (IMP005).
"""

from __future__ import annotations

from typing import Any

from ..catalog import ARCHITECTURES, builtin_arch
from ..checks.layout import SGLANG_V4_CP_MAX_TP
from ..spec.provenance import Provenance
from .build import Role
from .launch import Issue

#: The engine classes of moegen's catalog that SGLang 0.5.23 registers
#: ``_deepseek_family_overrides`` for (python/sglang/srt/arg_groups/model_overrides/
#: deepseek_v2.py ``@_register_for``): Kimi-K2 runs DeepseekV3ForCausalLM.
DEEPSEEK_FAMILY = frozenset({"DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
                             "GlmMoeDsaForCausalLM"})
#: DeepSeek-V3.2's class, which refuses ``--cp-strategy zigzag`` (arg_groups/parallel_hook.py).
V32_CLASS = "DeepseekV32ForCausalLM"
_DROPPED_HINT = ("add --attn-cp-size to split the prefill (only the DeepSeek family, MLA, DSA "
                 "and DeepSeek-V4, takes its whole attention TP group without it)")


def _int(text: str | None, default: int = 1) -> int:
    try:
        return int(str(text)) if text is not None else default
    except ValueError:
        return default


def prefill_cp(r: Role, role: dict, arch: str | None, prov: Provenance,
               rpath: tuple) -> list[Issue]:
    """The role's ``parallel.context`` (and, where SGLang forces them, ``parallel.expert`` and
    ``moe.all2all``) from ``--enable-prefill-cp`` as SGLang 0.5.23 resolves it; see the module
    docstring."""
    at, cmd = r.fields.prefill_cp, r.launch.command
    if at is None or cmd is None:
        return []
    par = role.setdefault("parallel", {})
    strategy = cmd.value("--cp-strategy")
    so = cmd.get("--cp-strategy")
    s_at = r.launch.loc(so.index) if so is not None else at
    shape = builtin_arch(arch) if arch in ARCHITECTURES else None
    given = _int(cmd.value("--attn-cp-size"))
    if strategy is None:
        par.pop("context", None)
        return [Issue("IMP030", "--enable-prefill-cp without --cp-strategy: SGLang refuses to "
                      "start (\"--cp-strategy must be set when --enable-prefill-cp is "
                      "enabled\")", at, "add --cp-strategy interleave (what moegen renders)",
                      error=True)]
    issues = []
    if strategy == "zigzag":
        issues.append(Issue("IMP005", "--cp-strategy zigzag: moegen renders prefill context "
                            "parallelism with --cp-strategy interleave only", s_at))
    v4 = shape is not None and shape.compressed_attention
    family = shape is not None and shape.engine_class in DEEPSEEK_FAMILY
    dsa = family and shape is not None and shape.sparse_attention
    mla = family and not dsa and shape is not None and shape.attention.kind == "mla"
    if not (v4 or dsa or mla):
        if given > 1:
            return issues
        par.pop("context", None)
        model = shape.label if shape is not None else "a model outside the DeepSeek family"
        how = "without --attn-cp-size" if cmd.get("--attn-cp-size") is None else \
            f"with --attn-cp-size {given}"
        return issues + [Issue(
            "IMP028", f"--enable-prefill-cp {how}: SGLang keeps the attention context-parallel "
            f"size at 1 for {model}, so the prefill splits no tokens; dropped (moegen renders "
            "--attn-cp-size C --enable-prefill-cp --cp-strategy interleave from "
            "roles[].parallel.context)", at, _DROPPED_HINT, notice=True)]
    assert shape is not None
    group = _int(cmd.value("--tp-size"))
    attn_dp, dp = _int(cmd.value("--attn-dp-size")), _int(cmd.value("--dp-size"))
    if cmd.flag("--enable-dp-attention") and attn_dp == 1:
        attn_dp, dp = dp, 1
    refusal = _refusal(shape.label, shape.engine_class, v4, dsa, strategy, group, attn_dp, dp)
    if refusal is not None:
        par.pop("context", None)
        return issues + [Issue("IMP030", f"--enable-prefill-cp --cp-strategy {strategy} on "
                               f"{shape.label}: SGLang refuses to start ({refusal})",
                               s_at if "zigzag" in refusal else at,
                               "use --cp-strategy interleave on at most 8 ranks of one "
                               "attention group", error=True)]
    eff = attn_dp * dp
    size = given if dsa and strategy == "interleave" and given > 1 else group // eff
    par["context"] = size
    prov.locations[(*rpath, "parallel", "context")] = at
    why = (f"keeps --attn-cp-size {given}" if size == given and given > 1 and dsa else
           f"makes the context-parallel group tp_size // (attn_dp_size x dp_size) = "
           f"{group} // ({attn_dp} x {dp}) = {size}")
    text = (f"--enable-prefill-cp --cp-strategy {strategy}: SGLang {why} for {shape.label}: "
            f"imported as roles[].parallel.context: {size}")
    said = size != given
    if mla or (dsa and strategy == "zigzag"):
        text += (f"; it also runs the MoE with moe_a2a_backend deepep, ep_size {group} and "
                 "moe_dense_tp_size 1: imported as parallel.expert: true")
        said = said or not par.get("expert") or \
            not str(role.get("moe", {}).get("all2all", "")).startswith("deepep_")
        issues += _forced_deepep(r, role, par, at)
    elif v4:
        text += "; it also runs the dense MLP with moe_dense_tp_size 1"
    if not said:    # the command writes what SGLang runs (moegen's own output): nothing to say
        return issues
    return [Issue("IMP028", text, at, "moegen renders --attn-cp-size C --enable-prefill-cp "
                  "--cp-strategy interleave from roles[].parallel.context", notice=True),
            *issues]


def _refusal(label: str, engine_class: str, v4: bool, dsa: bool, strategy: str, group: int,
             attn_dp: int, dp: int) -> str | None:
    """Why SGLang 0.5.23 on CUDA refuses this prefill CP (None: it starts)."""
    if attn_dp > 1 and dp > 1:
        return (f"--dp-size {dp} with --attn-dp-size {attn_dp}: \"data-parallel replicas "
                "combined with attention data parallelism are not supported\"")
    if v4 and strategy == "zigzag":
        return "\"DeepSeekV4 zigzag CP requires the NPU backend\""
    if engine_class == V32_CLASS and strategy == "zigzag":
        return "\"DeepSeek V3.2 prefill CP does not support --cp-strategy zigzag\""
    if v4 and attn_dp * dp > 1:
        return (f"{attn_dp * dp} attention data-parallel groups: \"For round-robin split mode, "
                "dp attention is not supported\"")
    if (v4 or dsa) and group > SGLANG_V4_CP_MAX_TP:
        return (f"tp_size {group} > {SGLANG_V4_CP_MAX_TP}: \"Context parallel only supports "
                f"single machine\" for {label}")
    return None


def _forced_deepep(r: Role, role: dict, par: dict, at: Any) -> list[Issue]:
    """``parallel.expert`` and ``moe.all2all`` where SGLang forces DeepEP over the whole group.
    Its ``--deepep-mode`` (default ``auto``: normal on prefill batches, low_latency on decode
    batches, arg_groups/fields/exec_.py ``deepep_mode``) is ``deepep_high_throughput`` on a
    prefill role; ``auto`` on a role that also decodes has no moe.all2all (IMP005)."""
    par["expert"] = True
    moe = role.setdefault("moe", {})
    mode = r.launch.command.value("--deepep-mode") if r.launch.command else None
    by_mode = {"normal": "deepep_high_throughput", "low_latency": "deepep_low_latency"}
    if mode in by_mode:
        moe["all2all"] = by_mode[mode]
    elif r.mode == "prefill":
        moe["all2all"] = "deepep_high_throughput"
    else:
        moe.pop("all2all", None)
        if not moe:
            role.pop("moe")
        return [Issue("IMP005", "prefill context parallelism makes SGLang run DeepEP in its "
                      "auto mode (normal on prefill batches, low_latency on decode batches), "
                      "which moe.all2all cannot name: not imported", at,
                      "set moe.all2all (deepep_high_throughput on a prefill role)")]
    return []

"""What a model needs from the engine command line: one table for every model moegen serves,
read by both dialects (``engines/vllm.py``, ``engines/sglang.py``) and by the rules that refuse
what no flag can fix (``checks/model.py``).

A row applies to a model by its capabilities (``catalog/capabilities.py``): the class the
engines dispatch on (``ModelArch.engine_class``, the HF ``architectures[0]`` both engines' model
registries key on) or a checkpoint capability (a custom-code tokenizer); to an engine and a
release range. It either names flags moegen renders (``flags``) or says that the combination
cannot start (``refuse``, with the spec fields that trigger it). Each row cites the engine file
and release that makes it a requirement, and the public report that shows what happens without
it (tests/field/ holds the report as a case).

=====================  ======  ==========  ===================  ==============================
model                  engine  releases    need                 source
=====================  ======  ==========  ===================  ==============================
custom-code tokenizer  vllm    all         --trust-remote-code  vLLM 0.33.0 vllm/tokenizers/
(Kimi-K2)                                                       registry.py:48-57 (no built-in
                                                                kimi_k2 tokenizer mode),
                                                                vllm/tokenizers/hf.py:191-208;
                                                                vllm-project/recipes PR#116
custom-code tokenizer  sglang  all         --trust-remote-code  SGLang 0.5.23 srt/utils/
(Kimi-K2)                                                       hf_transformers/tokenizer.py:
                                                                474; sgl-project/sglang
                                                                PR#13725
DeepseekV32ForCausal-  vllm    0.13-0.17   --tokenizer-mode     vLLM vllm/tokenizers/
LM                                         deepseek_v32         registry.py, vllm/config/
                                                                model.py (default from
                                                                0.18.0); vllm-project/vllm
                                                                #29849, #30933
DeepseekV32ForCausal-  vllm    < 0.13      warn (chat fails)    vllm-project/vllm#30933
LM
every class but those  sglang  all         refuse deepep_v2     SGLang 0.5.23 srt/configs/
SGLang validated                                                moe_model_registry.py:20-28;
(DeepseekV3, V4,                                                sgl-project/sglang PR#39408
Qwen3Moe, GlmMoeDsa)
=====================  ======  ==========  ===================  ==============================

Before all that, the release must implement the model's class at all: :data:`CLASS_SINCE`
holds the first release of each engine with a class moegen serves, where it is later than the
first release moegen supports (rule MOD032).

Kimi-K2's tokenizer is Moonshot's own tiktoken class (``tokenizer_config.json`` ``auto_map`` ->
``tokenization_kimi.TikTokenTokenizer``): without trusting remote code transformers refuses to
execute it, and the API server dies loading the tokenizer before it serves anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import TYPE_CHECKING

from .known_bad import Match
from .versions import parse_version

if TYPE_CHECKING:
    from ..catalog import ModelArch


@dataclass(frozen=True)
class Models:
    """Which models a row applies to: engine classes (``ModelArch.engine_class``), every class
    but those (``others``), or models with a capability (``remote_code_tokenizer``)."""

    classes: frozenset[str] = frozenset()
    others: bool = False
    remote_code_tokenizer: bool = False

    def include(self, arch: ModelArch) -> bool:
        """The row applies to ``arch``."""
        if self.remote_code_tokenizer:
            return arch.checkpoint.remote_code_tokenizer
        return (arch.engine_class in self.classes) != self.others


@dataclass(frozen=True)
class Requirement:
    """One row of :data:`REQUIREMENTS`.

    Attributes:
        models: the models the row applies to (:class:`Models`).
        engine: ``vllm`` or ``sglang``.
        flags: engine options moegen renders for the model (each a separate argv item).
        why: what fails without them, for notes and findings.
        source: engine file and release, and the public report.
        first, fixed: the release range ``[first, fixed)`` the row applies to (None: open).
        refuse: the row is a combination the engine refuses (rule MOD030), for roles whose
            features ``match`` (``facts/known_bad.py`` Match), pointing at ``field`` (a path
            below ``spec.roles[i]``) with ``hint``; ``flags`` is then empty.
        warn: a refusing row that breaks part of the API only (rule MOD031, a warning).
    """

    models: Models
    engine: str
    flags: tuple[str, ...]
    why: str
    source: str
    first: tuple[int, int, int] | None = None
    fixed: tuple[int, int, int] | None = None
    refuse: bool = False
    match: Match | None = None
    field: tuple[str, ...] = ()
    hint: str = ""
    warn: bool = False

    def applies(self, engine: str, version: str, arch: ModelArch) -> bool:
        """The row holds for ``engine`` at ``version`` serving ``arch``."""
        if engine != self.engine or not self.models.include(arch):
            return False
        v = parse_version(version)
        return (self.first is None or v >= self.first) and (self.fixed is None or v < self.fixed)


_KIMI_TOKENIZER = ("Kimi-K2's tokenizer is custom code (tokenizer_config.json auto_map -> "
                   "tokenization_kimi.TikTokenTokenizer): without --trust-remote-code the "
                   "tokenizer does not load and the server never starts")

#: The classes SGLang runs ``--moe-a2a-backend deepep_v2`` for (SGLang 0.5.23
#: python/sglang/srt/configs/moe_model_registry.py ``_DEEPEP_V2_MODELS``, the ones moegen
#: serves: MiMo and GLM-5-Next are not in its catalog).
SGLANG_DEEPEP_V2_CLASSES = frozenset({"DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM",
                                      "Qwen3MoeForCausalLM", "GlmMoeDsaForCausalLM"})

#: Every model requirement moegen knows (see the module docstring for the table).
REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement(Models(remote_code_tokenizer=True), "vllm", ("--trust-remote-code",), _KIMI_TOKENIZER,
                "vLLM 0.33.0 vllm/tokenizers/registry.py:48-57 (tokenizer modes: kimi_audio, "
                "kimi_k3, no kimi_k2), vllm/tokenizers/hf.py:191-208 (\"Failed to load the "
                "tokenizer ... --trust-remote-code\"); vllm-project/recipes PR#116"),
    Requirement(Models(remote_code_tokenizer=True), "sglang", ("--trust-remote-code",), _KIMI_TOKENIZER,
                "SGLang 0.5.23 python/sglang/srt/utils/hf_transformers/tokenizer.py:474 "
                "(get_tokenizer(trust_remote_code=server_args.trust_remote_code)); "
                "sgl-project/sglang PR#13725 (Kimi-K2-Thinking launched with --trust-remote-code)"),
    # DeepSeek-V3.2's repository ships no Jinja chat template: its encoder is the tokenizer mode
    # deepseek_v32, which vLLM defaults from 0.18.0 (config/model.py, DeepseekV32ForCausalLM).
    Requirement(Models(frozenset({"DeepseekV32ForCausalLM"})), "vllm",
                ("--tokenizer-mode", "deepseek_v32"),
                "DeepSeek-V3.2's tokenizer has no chat template: chat completions fail (\"As of "
                "transformers v4.44, default chat template is no longer allowed\") unless the "
                "deepseek_v32 tokenizer mode renders the prompts",
                "vLLM 0.13.0-0.17.1 vllm/tokenizers/registry.py (deepseek_v32 mode registered) and "
                "vllm/config/model.py (not defaulted; 0.18.0 defaults it for "
                "DeepseekV32ForCausalLM), read in each release's wheel; vllm-project/vllm#29849, "
                "#30933", first=(0, 13, 0), fixed=(0, 18, 0)),
    Requirement(Models(frozenset({"DeepseekV32ForCausalLM"})), "vllm", (),
                "vLLM before 0.13.0 has no deepseek_v32 tokenizer mode (\"No tokenizer registered "
                "for tokenizer_mode='deepseek_v32'\") and DeepSeek-V3.2 no chat template: "
                "/v1/chat/completions fails on every request (\"default chat template is no "
                "longer allowed\"); /v1/completions works",
                "vllm-project/vllm#29849 (0.11.2), #30933 (0.12.0); vLLM 0.11.0-0.12.0 "
                "vllm/transformers_utils (no deepseek_v32 tokenizer), read in the wheels",
                fixed=(0, 13, 0), refuse=True, warn=True, match=Match(), field=("name",),
                hint="use vLLM 0.13.0 or later (moegen renders --tokenizer-mode deepseek_v32), or "
                     "pass a chat template: engineArgs [--chat-template, <file>]"),
    # SGLang keys its DeepEP v2 registry by the config's architectures[0]: DeepseekV3ForCausalLM
    # (DeepSeek-V3, Kimi-K2), DeepseekV4ForCausalLM, Qwen3MoeForCausalLM and
    # GlmMoeDsaForCausalLM (GLM-5) are in it; every other class (DeepSeek-V3.2, V2, GLM-4.5,
    # gpt-oss, Llama-4, MiniMax-M2) is not.
    Requirement(Models(SGLANG_DEEPEP_V2_CLASSES, others=True), "sglang", (),
                "SGLang runs --moe-a2a-backend deepep_v2 only for architectures registered as "
                "validated (\"DeepEP v2 MoE is not validated for 'DeepseekV32ForCausalLM'\"): "
                "the server refuses to start",
                "SGLang 0.5.23 python/sglang/srt/configs/moe_model_registry.py:20-28 "
                "(_DEEPEP_V2_MODELS), arg_groups/moe_hook.py:709-732 "
                "validate_deepep_v2_model_architecture; sgl-project/sglang PR#39408 (the same "
                "refusal for Qwen3.5)",
                refuse=True, match=Match(all2all=frozenset({"deepep_v2"})),
                field=("moe", "all2all"),
                hint="use deepep_low_latency (decode) or deepep_high_throughput (prefill)"),
)


#: The first release of each engine that implements a model class moegen serves, where it is
#: later than the first release moegen supports (vLLM 0.11.0, SGLang 0.5.1): an older release
#: has no such class in its model registry and exits at start ("Model architectures
#: [...] are not supported for now"). Read in each release's wheel: vLLM
#: vllm/model_executor/models/registry.py, SGLang python/sglang/srt/models/<model>.py
#: (``EntryClass``), the first release that has it against the one before it.
_VLLM_REGISTRY, _SGLANG_MODELS = "vllm/model_executor/models/registry.py", "python/sglang/srt/models/"
CLASS_SINCE: dict[tuple[str, str], tuple[tuple[int, int, int], str, str]] = {
    # (engine, class): (first release with it, the release before it (without), the file)
    ("vllm", "MiniMaxM2ForCausalLM"): ((0, 11, 1), "0.11.0", _VLLM_REGISTRY),
    ("vllm", "GlmMoeDsaForCausalLM"): ((0, 16, 0), "0.15.1", _VLLM_REGISTRY),
    ("vllm", "DeepseekV4ForCausalLM"): ((0, 20, 0), "0.19.1", _VLLM_REGISTRY),
    ("sglang", "DeepseekV32ForCausalLM"): ((0, 5, 3), "0.5.2", _SGLANG_MODELS + "deepseek_v2.py"),
    ("sglang", "MiniMaxM2ForCausalLM"): ((0, 5, 5), "0.5.4", _SGLANG_MODELS + "minimax_m2.py"),
    ("sglang", "GlmMoeDsaForCausalLM"): ((0, 5, 9), "0.5.8", _SGLANG_MODELS + "glm4_moe.py"),
    ("sglang", "DeepseekV4ForCausalLM"): ((0, 5, 12), "0.5.11", _SGLANG_MODELS + "deepseek_v4.py"),
}


def missing_class(engine: str, version: str, arch: ModelArch) -> tuple[str, str] | None:
    """``(first release, source)`` when ``engine`` ``version`` predates the model's class
    (:data:`CLASS_SINCE`), else None."""
    row = CLASS_SINCE.get((engine, arch.engine_class))
    if row is None or parse_version(version) >= row[0]:
        return None
    first = ".".join(map(str, row[0]))
    return first, f"{row[2]}: {first} has it, {row[1]} not"


def refusals(engine: str, version: str, arch: ModelArch) -> list[Requirement]:
    """The refusing rows (MOD030) for model ``arch`` on ``engine`` ``version``; the caller checks
    each row's ``match`` against the role."""
    return [r for r in REQUIREMENTS if r.refuse and r.applies(engine, version, arch)]


def required_flags(engine: str, version: str, arch: ModelArch) -> list[str]:
    """The flags model ``arch`` needs on ``engine`` ``version``, in table order, each once."""
    out: list[str] = []
    for req in REQUIREMENTS:
        if not req.refuse and req.applies(engine, version, arch):
            out += [f for f in req.flags if f not in out]
    return out

"""What a model needs from the engine command line, by Hugging Face ``model_type``: one table for
every architecture moegen serves, read by both dialects (``engines/vllm.py``,
``engines/sglang.py``) and by the rules that refuse what no flag can fix (``checks/model.py``).

A row applies to a ``model_type`` (the catalog's shipped configs and any ``model.config`` a user
gives), an engine and a release range; it either names flags moegen renders (``flags``) or says
that the combination cannot start (``refuse``, with the spec fields that trigger it). Each row
cites the engine file and release that makes it a requirement, and the public report that shows
what happens without it (tests/field/ holds the report as a case).

=============  ======  ==========  ===================  ====================================
model_type     engine  releases    need                 source
=============  ======  ==========  ===================  ====================================
kimi_k2        vllm    all         --trust-remote-code  vLLM 0.33.0 vllm/tokenizers/registry.py
                                                        :48-57 (no built-in kimi_k2 tokenizer
                                                        mode), vllm/tokenizers/hf.py:191-208;
                                                        vllm-project/recipes PR#116
kimi_k2        sglang  all         --trust-remote-code  SGLang 0.5.23 srt/utils/hf_transformers/
                                                        tokenizer.py:474 (get_tokenizer passes
                                                        trust_remote_code to AutoTokenizer);
                                                        sgl-project/sglang PR#13725
deepseek_v32   vllm    0.13-0.17   --tokenizer-mode     vLLM vllm/tokenizers/registry.py, vllm/
                                   deepseek_v32         config/model.py (default from 0.18.0);
                                                        vllm-project/vllm#29849, #30933
deepseek_v32   vllm    < 0.13      warn (chat fails)    vllm-project/vllm#30933
deepseek_v32   sglang  < 0.5.3     refuse (no model)    SGLang 0.5.3 python/sglang/srt/models/
                                                        deepseek_v2.py:3417 (first with it)
deepseek_v4    vllm    < 0.20      refuse (no model)    vLLM 0.20.0 vllm/model_executor/models/
                                                        deepseek_v4.py (first release with it)
deepseek_v4    sglang  < 0.5.12    refuse (no model)    SGLang 0.5.12 python/sglang/srt/models/
                                                        deepseek_v4.py (first release with it)
deepseek_v32,  sglang  all         refuse deepep_v2     SGLang 0.5.23 srt/configs/
deepseek_v2                                             moe_model_registry.py:20-28;
                                                        sgl-project/sglang PR#39408
=============  ======  ==========  ===================  ====================================

Kimi-K2's tokenizer is Moonshot's own tiktoken class (``tokenizer_config.json`` ``auto_map`` ->
``tokenization_kimi.TikTokenTokenizer``): without trusting remote code transformers refuses to
execute it, and the API server dies loading the tokenizer before it serves anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from .known_bad import Match
from .versions import parse_version


@dataclass(frozen=True)
class Requirement:
    """One row of :data:`REQUIREMENTS`.

    Attributes:
        model_types: HF ``model_type`` values the row applies to.
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

    model_types: frozenset[str]
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

    def applies(self, engine: str, version: str, model_type: str | None) -> bool:
        """The row holds for ``engine`` at ``version`` serving ``model_type``."""
        if engine != self.engine or model_type not in self.model_types:
            return False
        v = parse_version(version)
        return (self.first is None or v >= self.first) and (self.fixed is None or v < self.fixed)


_KIMI_TOKENIZER = ("Kimi-K2's tokenizer is custom code (tokenizer_config.json auto_map -> "
                   "tokenization_kimi.TikTokenTokenizer): without --trust-remote-code the "
                   "tokenizer does not load and the server never starts")

def _no_model(model_type: str, engine: str, first: tuple[int, int, int], arch: str, source: str,
              later: str) -> Requirement:
    """A refusing row: ``engine`` releases before ``first`` have no ``arch`` (the model's
    ``architectures[0]``), so the server cannot resolve the model and never starts."""
    name = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
    release = ".".join(map(str, first))
    return Requirement(frozenset({model_type}), engine, (),
                       f"{name} before {release} has no {arch}: the server fails to resolve the "
                       "model's architecture and never starts", source,
                       fixed=first, refuse=True, match=Match(), field=("name",),
                       hint=f"use {name} {release} or later ({later})")


#: Every model requirement moegen knows (see the module docstring for the table).
REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement(frozenset({"kimi_k2"}), "vllm", ("--trust-remote-code",), _KIMI_TOKENIZER,
                "vLLM 0.33.0 vllm/tokenizers/registry.py:48-57 (tokenizer modes: kimi_audio, "
                "kimi_k3, no kimi_k2), vllm/tokenizers/hf.py:191-208 (\"Failed to load the "
                "tokenizer ... --trust-remote-code\"); vllm-project/recipes PR#116"),
    Requirement(frozenset({"kimi_k2"}), "sglang", ("--trust-remote-code",), _KIMI_TOKENIZER,
                "SGLang 0.5.23 python/sglang/srt/utils/hf_transformers/tokenizer.py:474 "
                "(get_tokenizer(trust_remote_code=server_args.trust_remote_code)); "
                "sgl-project/sglang PR#13725 (Kimi-K2-Thinking launched with --trust-remote-code)"),
    # DeepSeek-V3.2's repository ships no Jinja chat template: its encoder is the tokenizer mode
    # deepseek_v32, which vLLM defaults from 0.18.0 (config/model.py, DeepseekV32ForCausalLM).
    Requirement(frozenset({"deepseek_v32"}), "vllm", ("--tokenizer-mode", "deepseek_v32"),
                "DeepSeek-V3.2's tokenizer has no chat template: chat completions fail (\"As of "
                "transformers v4.44, default chat template is no longer allowed\") unless the "
                "deepseek_v32 tokenizer mode renders the prompts",
                "vLLM 0.13.0-0.17.1 vllm/tokenizers/registry.py (deepseek_v32 mode registered) and "
                "vllm/config/model.py (not defaulted; 0.18.0 defaults it for "
                "DeepseekV32ForCausalLM), read in each release's wheel; vllm-project/vllm#29849, "
                "#30933", first=(0, 13, 0), fixed=(0, 18, 0)),
    Requirement(frozenset({"deepseek_v32"}), "vllm", (),
                "vLLM before 0.13.0 has no deepseek_v32 tokenizer mode (\"No tokenizer registered "
                "for tokenizer_mode='deepseek_v32'\") and DeepSeek-V3.2 no chat template: "
                "/v1/chat/completions fails on every request (\"default chat template is no "
                "longer allowed\"); /v1/completions works",
                "vllm-project/vllm#29849 (0.11.2), #30933 (0.12.0); vLLM 0.11.0-0.12.0 "
                "vllm/transformers_utils (no deepseek_v32 tokenizer), read in the wheels",
                fixed=(0, 13, 0), refuse=True, warn=True, match=Match(), field=("name",),
                hint="use vLLM 0.13.0 or later (moegen renders --tokenizer-mode deepseek_v32), or "
                     "pass a chat template: engineArgs [--chat-template, <file>]"),
    # A release that predates the model's architecture cannot load it (the engines' model
    # registries map architectures[0] to a module; tools/mine_known_bad.py lists the files).
    _no_model("deepseek_v32", "sglang", (0, 5, 3), "DeepseekV32ForCausalLM",
              "SGLang 0.5.2 python/sglang/srt/models/ (no DeepseekV32ForCausalLM), 0.5.3 "
              "python/sglang/srt/models/deepseek_v2.py:3417,3421 (the class and its EntryClass), "
              "read in the wheels", "0.5.4 or later with MTP: ENG030"),
    _no_model("deepseek_v4", "vllm", (0, 20, 0), "DeepseekV4ForCausalLM",
              "vLLM 0.19.1 vllm/model_executor/models/ (no deepseek_v4.py), 0.20.0 "
              "vllm/model_executor/models/deepseek_v4.py and layers/deepseek_v4_attention.py "
              "(first release with the model), read in the wheels; vLLM 0.33.0 "
              "vllm/model_executor/models/registry.py:99", "0.30.0 or later with kvCacheDtype "
              "auto: ENG030"),
    _no_model("deepseek_v4", "sglang", (0, 5, 12), "DeepseekV4ForCausalLM",
              "SGLang 0.5.11 python/sglang/srt/models/ (no deepseek_v4.py), 0.5.12 "
              "python/sglang/srt/models/deepseek_v4.py (first release with the model), read in "
              "the wheels; sgl-project/sglang PR#23600 (\"DeepSeek V4\")",
              "0.5.13 or later with EPLB: ENG030"),
    # SGLang keys its DeepEP v2 registry by the config's architectures[0]: DeepseekV3ForCausalLM
    # (deepseek_v3, kimi_k2) and DeepseekV4ForCausalLM are in it, DeepseekV32ForCausalLM and
    # DeepseekV2ForCausalLM are not.
    Requirement(frozenset({"deepseek_v32", "deepseek_v2"}), "sglang", (),
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


def refusals(engine: str, version: str, config: dict) -> list[Requirement]:
    """The refusing rows (MOD030) for the model of ``config`` on ``engine`` ``version``; the
    caller checks each row's ``match`` against the role."""
    return [r for r in REQUIREMENTS
            if r.refuse and r.applies(engine, version, config.get("model_type"))]


def required_flags(engine: str, version: str, config: dict) -> list[str]:
    """The flags the model of ``config`` (its ``model_type``) needs on ``engine`` ``version``,
    in table order, each once."""
    out: list[str] = []
    for req in REQUIREMENTS:
        if not req.refuse and req.applies(engine, version, config.get("model_type")):
            out += [f for f in req.flags if f not in out]
    return out

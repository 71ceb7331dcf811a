"""The rule registry: how a rule is declared, what it sees, and how all of them run.

A rule is a generator function registered with :func:`rule`: a stable code, a severity, a
one-line summary, the source it comes from (an engine file and release, an upstream issue, or a
doc in this repository: ``tests/test_rules.py`` checks that every source resolves), its phase and
optionally the engines it applies to. It yields :class:`Hit` objects (field path, message with the
numbers, hint); :func:`run_rules` locates them and never stops at the first.

Phases: ``RULES`` run first on every role; ``SIZING`` rules run after them, and only on the roles
(and specs) the first phase found no error in: sizing an impossible layout only adds noise.
"""

from __future__ import annotations

import enum
import re
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Callable, Iterator

from ..deployment import Deployment
from ..errors import Finding, Severity
from ..roles import RoleInput
from ..sizing import RoleSizing
from ..spec.load import json_path


class Phase(str, enum.Enum):
    """When a rule runs (see the module docstring)."""

    RULES = "rules"
    SIZING = "sizing"


@dataclass(frozen=True)
class Hit:
    """One violation found by a rule (path as a tuple; located by :func:`run_rules`)."""

    path: tuple
    message: str
    hint: str = ""


@dataclass(frozen=True)
class Rule:
    """A catalogue entry (``check`` is None for codes raised outside the rule functions)."""

    code: str
    severity: Severity
    summary: str
    source: str
    check: Callable[["Context"], Iterator[Hit]] | None = None
    phase: Phase = Phase.RULES
    engines: tuple[str, ...] = ()
    #: The module that defines the entry (``generator.checks.network``; ``generator.checks.codes``
    #: for codes raised outside the rule functions: :func:`raised_in` finds where).
    module: str = ""

    def defined_at(self) -> tuple[str, int | None]:
        """(file relative to the repository, ``generator/checks/network.py``; the line of the rule
        function's ``@rule`` decorator, or None for a code listed with :func:`external`)."""
        path = self.module.replace(".", "/") + ".py"
        return path, self.check.__code__.co_firstlineno if self.check is not None else None


@dataclass(frozen=True)
class Context(Deployment):
    """What rules look at: the deployment model (:class:`~generator.deployment.Deployment`:
    spec, provenance, dialect, model shape, roles, sizing, host plans), plus ``unsized``: the
    roles the sizing phase leaves out (set by :func:`run_rules`)."""

    unsized: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def of(cls, deployment: Deployment) -> "Context":
        """The rules' view of ``deployment`` (its fields shared, not copied)."""
        return cls(**{f.name: getattr(deployment, f.name) for f in fields(Deployment)})

    def sized(self) -> Iterator[tuple[int, RoleInput, RoleSizing]]:
        """(index, role, memory plan) of the roles the sizing phase looks at."""
        for i, r in self.role_items():
            z = self.sizing[i] if i < len(self.sizing) else None
            if isinstance(z, RoleSizing) and i not in self.unsized:
                yield i, r, z


RULES: list[Rule] = []

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTICE
SIZING = Phase.SIZING


RuleFn = Callable[["Context"], Iterator[Hit]]


def rule(code: str, severity: Severity, summary: str, source: str, *,
         phase: Phase = Phase.RULES, engines: tuple[str, ...] = ()
         ) -> Callable[[RuleFn], RuleFn]:
    """Register a rule function in :data:`RULES` (``engines``: only for these engines)."""
    def deco(fn: RuleFn) -> RuleFn:
        RULES.append(Rule(code, severity, summary, source, fn, phase, engines, fn.__module__))
        return fn
    return deco


def external(code: str, severity: Severity, summary: str, source: str) -> None:
    """List a code raised outside the rule functions (loader, schema, pipeline) in the catalogue."""
    module = sys._getframe(1).f_globals.get("__name__", "")
    RULES.append(Rule(code, severity, summary, source, module=module))


def raised_in(codes: list[str]) -> dict[str, list[str]]:
    """Per code, the package's modules (``generator/spec/load.py``) whose source names it as a
    quoted string literal, sorted; the catalogue (``checks/codes.py``) left out. Reads the
    installed sources (for ``gen rules``, not on the check path)."""
    package = Path(__file__).resolve().parent.parent
    found: dict[str, set[str]] = {code: set() for code in codes}
    pattern = re.compile("[\"']({})[\"']".format("|".join(map(re.escape, sorted(found)))))
    for path in sorted(package.rglob("*.py")):
        name = "generator/" + path.relative_to(package).as_posix()
        if name == "generator/checks/codes.py":
            continue
        for code in set(pattern.findall(path.read_text(encoding="utf-8"))) & found.keys():
            found[code].add(name)
    return {code: sorted(where) for code, where in found.items()}


#: Families whose findings do not depend on the engine release (Kubernetes objects, names,
#: pools, schedulers, autoscaling bounds, LWS, pod memory and security, the importer's and the
#: loader's own codes), and single codes of other families that hold at every release (the
#: weights mount, the bootstrap interface, RDMA for DeepEP's and Mooncake's transports, a
#: prefill/decode pair and its connector).
RELEASE_FREE_FAMILIES = ("NAME", "POOL", "TOP", "SCHD", "AUT", "LWS", "POD", "SEC", "IMP",
                         "LOAD", "SCH", "TGT", "PLN", "PRE")
RELEASE_FREE = frozenset({"MOD001", "MOD004", "MOD005", "MOD006", "MOD007", "MOD008", "A2A004",
                          "PD001", "PD002", "PD011", "NET001", "NET002", "NET004", "NET005",
                          "NET090", "PORT002"})


def release_dependent(code: str) -> bool:
    """A finding of ``code`` depends on the engine release it is judged at (when that release
    is assumed, not read, the finding is a warning that names it: ``check_imported``)."""
    family = code.rstrip("0123456789")
    return code not in RELEASE_FREE and family not in RELEASE_FREE_FAMILIES


#: Families whose findings read the pool's GPU (HBM sizing, what the GPU runs: kernels,
#: formats, all-to-all libraries), and single codes of other families that do: the GPU's
#: generation or vendor (ENG030 known-bad rows, OVL004, PD010), its memory through the sizing
#: (OVL005, SRV005's auto-fit maxModelLen, A2A006's CUDA-graph batch), its NVLink
#: domain (NET003's MNNVL variables), the durations predicted on it (PD060-PD062, SRV060) and
#: its node label (POOL005's hint). With ``gpu: unknown`` (docs/spec.md §2) they are not
#: reported: POOL006 says so. SRV001 is reported: vLLM's default max_num_batched_tokens under
#: DeepEP low-latency + EP + DP is 256 on every GPU; the stand-in's other tier (8192, 70 GiB and
#: up) is below only the 16384 of >= 160 GiB GPUs from vLLM 0.28.0 (sizing/vllm_budget.py).
GPU_FAMILIES = ("SIZ", "GPU", "QNT")
GPU_CODES = frozenset({"ENG030", "OVL004", "OVL005", "PD010", "SRV005", "A2A006",
                       "NET003", "PD060", "PD061", "PD062", "SRV060", "POOL005"})


def gpu_dependent(code: str) -> bool:
    """A finding of ``code`` depends on the pool's GPU (not reported when it is unknown)."""
    return code in GPU_CODES or code.rstrip("0123456789") in GPU_FAMILIES


#: What is reported when the model is not stated (``model.architecture: unknown``, docs/spec.md
#: §2): an ALLOW list, so that a new rule reading the model stays unreported on the stand-in
#: (spec/validate.py ``MODEL_STAND_IN``) until it is read and listed here. Whole families that
#: read the spec, the layout (``layout.compute_layout``: tensor, data, pipeline, expert, the
#: pool's GPUs per node; no model field), the engine release and the pod, never the model's
#: configuration, its sizing, host plans or predicted durations: names, pools' topology and
#: gang schedulers, LWS, autoscaling, routers, restarts, ports, security, and the codes raised
#: outside rule functions by the loader, the schema, the importer, the planner, preflight,
#: waivers, the inputs and the target's findings (TGT: what the platform cannot express).
MODEL_FREE_FAMILIES = ("NAME", "TOP", "SCHD", "LWS", "AUT", "RTR", "RST", "PORT", "SEC", "IMP",
                       "LOAD", "SCH", "TGT", "PLN", "PRE", "SKP", "INP", "VER")
#: Single codes of the other families read at their rule functions (and the helpers they
#: call): the model's source (MOD001, MOD004-MOD007: volume, Hub download, cache), pools
#: (POOL001-POOL005, POOL007: names, counts, selectors, packing), the layout on pods and nodes (LAY001,
#: LAY004-LAY011, LAY013, ENG001, SPD005; the executor: LAY015-LAY019), engineArgs against
#: the release's parser and derived flags (ENG002-ENG010; per dialect, not per model), EPLB and all-to-all settings
#: against the layout and DeepEP's compiled rank counts (EP001, EP002, EP004-EP006, A2A001,
#: A2A002, A2A004, A2A005, A2A007-A2A009, A2A030, OVL001-OVL003, OVL007), prefill/decode
#: pairs and connectors (PD001-PD006, PD008, PD009, PD011, PD030, PD090, SPD003, SPD004,
#: SPD030), network and fabric (NET001, NET002, NET004, NET005, NET030-NET032, NET040-NET043,
#: NET090, NET100), the pod (POD001, POD005) and serving settings that read the spec's own
#: numbers (SRV002-SRV004, SRV006-SRV010, SRV061). Left out, because they read the model:
#: LAY002/LAY003/LAY012/LAY014 (heads, KV heads, layers, attention kind), LEN001, LEN002 and
#: PD007 (max_position_embeddings), EP003 (routed experts), A2A003 (hidden size), OVL006, SRV011
#: (attention), SPD001/SPD002 (MTP layers), MOD030-MOD032 (per-model requirements), QNT*
#: (quantization blocks and formats), ENG030 (known-bad rows by model and format), and
#: everything computed from the sizing, the host plans or the prediction (SIZ*, GPU*, POD002-
#: POD004, POD006, SRV001, SRV005, SRV012, SRV060, OVL004, OVL005, A2A006, PD060-PD062, PRF*,
#: CAL*).
MODEL_FREE = frozenset({
    "MOD001", "MOD004", "MOD005", "MOD006", "MOD007", "MOD008",
    "POOL001", "POOL002", "POOL003", "POOL004", "POOL005", "POOL006", "POOL007",
    "LAY001", "LAY004", "LAY005", "LAY006", "LAY007", "LAY008", "LAY009", "LAY010", "LAY011",
    "LAY013", "LAY015", "LAY016", "LAY017", "LAY018", "LAY019", "ENG001", "SPD005",
    "ENG002", "ENG003", "ENG004", "ENG005", "ENG006", "ENG007", "ENG008", "ENG009", "ENG010",
    "EP001", "EP002", "EP004", "EP005", "EP006", "A2A001", "A2A002", "A2A004", "A2A005",
    "A2A007", "A2A008", "A2A009", "A2A030", "OVL001", "OVL002", "OVL003", "OVL007",
    "PD001", "PD002", "PD003", "PD004", "PD005", "PD006", "PD008", "PD009", "PD011", "PD030",
    "PD090", "SPD003", "SPD004", "SPD030",
    "NET001", "NET002", "NET004", "NET005", "NET030", "NET031", "NET032", "NET040", "NET041",
    "NET042", "NET043", "NET090", "NET100",
    "POD001", "POD005",
    "SRV002", "SRV003", "SRV004", "SRV006", "SRV007", "SRV008", "SRV009", "SRV010", "SRV061"})


def model_independent(code: str) -> bool:
    """A finding of ``code`` holds whatever the model (reported when it is unknown)."""
    return code in MODEL_FREE or code.rstrip("0123456789") in MODEL_FREE_FAMILIES


# --- helpers shared by the families -----------------------------------------------------------

def role_path(i: int, *rest: object) -> tuple:
    """``("spec", "roles", i, *rest)``."""
    return ("spec", "roles", i, *rest)


def role_sets(ctx: Context, i: int, name: str) -> bool:
    """Role ``i`` sets serving field ``name`` itself (not inherited from spec.serving)."""
    role = ctx.spec.spec.roles[i]
    return role.serving is not None and getattr(role.serving, name) is not None


def serving_path(ctx: Context, i: int, name: str) -> tuple:
    """Where serving field ``name`` of role ``i`` is set: the role's block or spec.serving."""
    return role_path(i, "serving", name) if role_sets(ctx, i, name) else ("spec", "serving", name)


def role_env(ctx: Context, i: int, key: str) -> tuple[tuple, int] | None:
    """The integer value of variable ``key`` that role ``i``'s engines get from the user
    (``roles[].env`` over ``spec.network.env``) and where it is set, or None (unset, or not an
    integer: the engines parse these with int())."""
    role = ctx.spec.spec.roles[i]
    if key in role.env:
        path, text = role_path(i, "env", key), role.env[key]
    elif key in ctx.spec.spec.network.env:
        path, text = ("spec", "network", "env", key), ctx.spec.spec.network.env[key]
    else:
        return None
    try:
        return path, int(text.strip())
    except ValueError:
        return None


def is_vllm(ctx: Context) -> bool:
    """The spec's engine is vLLM."""
    return ctx.engine == "vllm"


def pd_pairs(ctx: Context) -> Iterator[tuple[int, RoleInput, int, RoleInput]]:
    """Every (prefill index, prefill role, decode index, decode role) pair."""
    pre = [(i, r) for i, r in ctx.role_items() if r.mode == "prefill"]
    dec = [(i, r) for i, r in ctx.role_items() if r.mode == "decode"]
    for i, p in pre:
        for j, d in dec:
            yield i, p, j, d


# --- the runner -------------------------------------------------------------------------------

def _role_of(path: tuple) -> int | None:
    return path[2] if len(path) > 2 and path[:2] == ("spec", "roles") else None


def run_rules(ctx: Context, waived: Callable[[Finding], bool] | None = None) -> list[Finding]:
    """Run every rule of :data:`RULES` on ``ctx``; return all findings, located via provenance.

    Pure: ``ctx`` is not changed. The sizing phase sees a copy of ``ctx`` whose ``unsized``
    holds the roles with an error from the first phase (every role, after a spec-level error),
    except errors ``waived`` says a skip suppresses (generator/waivers.py): the roles they are on
    are still sized.
    """
    out: list[Finding] = []
    seen: set[tuple[str, tuple, str]] = set()
    errored: set[int | None] = set()

    def run(r: Rule, c: Context) -> None:
        if r.check is None or (r.engines and c.engine not in r.engines):
            return
        for hit in r.check(c):
            key = (r.code, tuple(hit.path), hit.message)
            if key in seen:  # a spec-level field shared by several roles is reported once
                continue
            seen.add(key)
            f = Finding(r.code, r.severity, json_path(hit.path), hit.message, hit.hint,
                        c.provenance.locate(hit.path))
            if r.severity is Severity.ERROR and not (waived and waived(f)):
                errored.add(_role_of(tuple(hit.path)))
            out.append(f)

    for r in RULES:
        if r.phase is Phase.RULES:
            run(r, ctx)
    every = frozenset(range(len(ctx.roles)))
    unsized = every if None in errored else frozenset(i for i in errored if i is not None)
    sizing_ctx = replace(ctx, unsized=unsized)
    for r in RULES:
        if r.phase is Phase.SIZING:
            run(r, sizing_ctx)
    return out

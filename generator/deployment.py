"""The one deployment model: a validated spec with everything computed from it, once.

:func:`build` turns an :class:`~generator.spec.models.InferenceDeployment` (from the spec loader,
or later from the manifest importer) into a :class:`Deployment`: the engine release's dialect
(per-release facts), the model's shape, every role's layout (:class:`~generator.roles.RoleInput`),
its HBM sizing, its pods' host resources and startup budget, and, on first use, the predicted
TTFT/TPOT/tokens/s (:mod:`generator.perf.predict`). The rules (``generator/checks``), the
deployment plan (``generator/manifests``), the targets and the reporters all read this one
object; none of them computes a layout, a size or a prediction of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterator

from .catalog import (
    FAMILY_LABELS,
    GPUS,
    ModelArch,
    UnknownArchitecture,
    UnreadQuantization,
    arch_from_config,
    builtin_arch,
)
from .durations import Durations, deployment_durations
from .engines.base import Dialect
from .engines.gateway import with_rank_ports
from .engines.registry import dialect_for
from .errors import Finding, Severity
from .facts.versions import UnsupportedVersion
from .pods import STARTUP_PERIOD_S, effective_pod
from .roles import RoleInput, role_inputs
from .sizing import RoleSizing, size_role
from .sizing.host import HostPlan, api_servers_from, host_plan
from .sizing.sglang_budget import default_running_requests, tier_defaults
from .spec.load import Provenance, json_path
from .spec.models import MODEL_UNKNOWN, InferenceDeployment

if TYPE_CHECKING:
    from .perf.predict import Prediction


@dataclass(frozen=True)
class Deployment:
    """A validated spec and what is computed from it.

    Attributes:
        spec: the validated document.
        provenance: where each field was set (file:line:col of the spec and overlays).
        dialect: the engine release's dialect (``None`` when the version is unsupported:
            VER001 in ``findings``).
        arch: the model shape (``None`` if it could not be resolved: MOD002/MOD003).
        roles: per role of the spec, its :class:`RoleInput` (``None`` for a role whose pool is
            unknown or whose model could not be resolved).
        sizing: per role, its HBM plan (GiB figures, :class:`RoleSizing`), or a string saying
            why it was not sized, or ``None`` (no pool, model, dialect or possible layout).
        host: per role, its pods' host resources and startup budget (``None`` where the layout
            is impossible).
        findings: what building the model found (VER001, MOD002, MOD003): errors.
    """

    spec: InferenceDeployment
    provenance: Provenance
    dialect: Dialect | None
    arch: ModelArch | None
    roles: tuple[RoleInput | None, ...]
    sizing: tuple[RoleSizing | str | None, ...] = ()
    host: tuple[HostPlan | None, ...] = ()
    findings: tuple[Finding, ...] = ()
    #: The prediction, computed on first use and shared by copies (``dataclasses.replace``).
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def engine(self) -> str:
        """``vllm`` | ``sglang``."""
        return self.spec.spec.engine.name

    def role_items(self) -> Iterator[tuple[int, RoleInput]]:
        """(index, role) for roles with a resolved pool and model."""
        for i, r in enumerate(self.roles):
            if r is not None:
                yield i, r

    @property
    def durations(self) -> Durations:
        """The predicted durations (cold start, longest prefill, longest and mean request) and
        every timeout pair derived from them (:mod:`generator.durations`), computed once."""
        if "durations" not in self._cache:
            self._cache["durations"] = deployment_durations(self.spec, self.roles, self.sizing,
                                                            self.host, self.prediction)
        return self._cache["durations"]

    @property
    def prediction(self) -> Prediction:
        """Each role's predicted TTFT, TPOT and tokens/s (:func:`generator.perf.predict.predict`),
        computed once; a :class:`Prediction` with ``reason`` set when the spec cannot be timed."""
        if "prediction" not in self._cache:
            # Imported on first use: gen validate never times a deployment (the perf model's
            # imports are a tenth of the policy check's start).
            from .perf.predict import Prediction, predict
            pairs = [(r, z) for r, z in zip(self.roles, self.sizing)
                     if r is not None and not r.layout.problem and isinstance(z, RoleSizing)]
            resolved = (self.dialect is not None and self.arch is not None
                        and len(pairs) == len(self.roles))
            out = (predict(self.spec, pairs) if resolved
                   else Prediction(reason="not timed: the spec has roles without a known pool, "
                                   "a possible layout, a supported engine release, a model or "
                                   "a sizing"))
            # Sanity hits on the prediction itself (perf/predict.py sanity, rule PRF030), located.
            out.findings = [Finding(code, Severity.WARNING, json_path(path), message, hint,
                                    self.provenance.locate(path))
                            for code, path, message, hint in out.sanity]
            self._cache["prediction"] = out
        return self._cache["prediction"]


def _finding(prov: Provenance, code: str, path: tuple, message: str, hint: str = "") -> Finding:
    return Finding(code, Severity.ERROR, json_path(path), message, hint, prov.locate(path))


def _arch(spec: InferenceDeployment, model_config: dict | None,
          prov: Provenance) -> tuple[ModelArch | None, list[Finding]]:
    m = spec.spec.model
    try:
        if m.config is not None and model_config is not None:
            return arch_from_config(model_config), []
        if m.architecture is not None and m.architecture != MODEL_UNKNOWN:   # unknown: no model
            return builtin_arch(m.architecture), []
    except UnknownArchitecture as exc:
        return None, [_finding(prov, "MOD002", ("spec", "model", "config"), str(exc),
                               f"give the config.json of a model of a supported family "
                               f"({FAMILY_LABELS})")]
    except UnreadQuantization as exc:
        return None, [_finding(prov, "MOD003", ("spec", "model", "config"),
                               f"config.json's {exc}: a format moegen does not read, so it "
                               "does not size it as another",
                               "moegen sizes BF16, block or per-channel FP8, MXFP4, NVFP4 and "
                               "INT4 weight-only (W4A16) checkpoints (model.weights); give the "
                               "config.json of one of those")]
    except (KeyError, TypeError, ValueError) as exc:
        return None, [_finding(prov, "MOD003", ("spec", "model", "config"),
                               f"config.json lacks a usable field: {exc}",
                               "give a complete Hugging Face config.json")]
    return None, []


def build(spec: InferenceDeployment, provenance: Provenance,
          model_config: dict | None = None) -> Deployment:
    """The deployment model of a structurally valid spec (``model_config``: the config.json
    ``spec.model.config`` points at, as the loader read it). Never raises for bad input: what
    cannot be computed is a finding (``Deployment.findings``) or a ``None`` entry."""
    findings: list[Finding] = []
    dialect = None
    try:
        dialect = dialect_for(spec.spec.engine.name, spec.spec.engine.version)
    except UnsupportedVersion as exc:
        findings.append(_finding(provenance, "VER001", ("spec", "engine", "version"),
                                 str(exc), exc.hint))
    arch, found = _arch(spec, model_config, provenance)
    findings += found
    roles = with_rank_ports(spec.spec, engine_defaults(spec, role_inputs(spec, arch), dialect),
                            dialect)
    return Deployment(spec, provenance, dialect, arch, tuple(roles),
                      _size_roles(spec, roles, dialect), _host_plans(spec, roles, dialect),
                      tuple(findings))


def at_spec(model: Deployment, spec: InferenceDeployment) -> Deployment:
    """``model`` with ``spec`` in its place: the same model shape, engine release and
    provenance, the role inputs, sizing and host plans recomputed for ``spec`` (a what-if of the
    same deployment, e.g. at a benchmark run's traffic and concurrency: ``gen calibrate``)."""
    roles = with_rank_ports(spec.spec, engine_defaults(spec, role_inputs(spec, model.arch),
                                                       model.dialect), model.dialect)
    return Deployment(spec, model.provenance, model.dialect, model.arch, tuple(roles),
                      _size_roles(spec, roles, model.dialect),
                      _host_plans(spec, roles, model.dialect), model.findings)


def engine_defaults(spec: InferenceDeployment, roles: list[RoleInput | None],
                    dialect: Dialect | None) -> list[RoleInput | None]:
    """``roles`` with the engine's own default admission resolved where the spec says
    ``sizing.concurrency: engine-default`` (docs/spec.md §2): on SGLang, the role's
    ``concurrency`` becomes the per-worker default of its KV pool x its attention-DP workers
    (sizing/sglang_budget.py ``default_running_requests``), its decode graphs SGLang's default
    ``cuda_graph_max_bs`` for the GPU and TP size (``graph_cap``; sizing/sglang_budget.py
    ``tier_defaults``). The pool is sized once at that graph batch (SGLang's default admission
    is at least its graph batch unless the pool is smaller, so the graph memory is the one
    SGLang reserves). vLLM roles, roles whose ``serving.maxNumSeqs`` pins the admission and
    roles that cannot be sized keep 1 (SRV012 says so for vLLM)."""
    out: list[RoleInput | None] = []
    for role_spec, role in zip(spec.spec.roles, roles):
        if role is None or not role.engine_default or dialect is None \
                or dialect.engine != "sglang" or role.serving.maxNumSeqs is not None \
                or role.layout.problem:
            out.append(role)
            continue
        gpu = GPUS[spec.spec.nodePools[role_spec.nodePool].gpu]
        lay = role.layout
        cap = tier_defaults(gpu.hbm_mib, lay.tensor * lay.data)[1]
        trial = replace(role, graph_cap=cap, concurrency=cap * lay.data)
        try:
            z = size_role(trial, gpu, dialect)
        except (KeyError, ValueError, ZeroDivisionError):   # _size_roles reports it
            out.append(role)
            continue
        per = default_running_requests(max(z.kv_tokens_per_rank, 0), z.max_model_len, lay.data,
                                       role.arch.attention.compressed is not None)
        out.append(replace(trial, concurrency=per * lay.data))
    return out


def _size_roles(spec: InferenceDeployment, roles: list[RoleInput | None],
                dialect: Dialect | None) -> tuple[RoleSizing | str | None, ...]:
    """Size every role whose layout is possible (RoleSizing, or a reason string, or None)."""
    out: list[RoleSizing | str | None] = []
    for role_spec, role in zip(spec.spec.roles, roles):
        if role is None or dialect is None or role.layout.problem:
            out.append(None)
            continue
        gpu = GPUS[spec.spec.nodePools[role_spec.nodePool].gpu]
        try:
            z = size_role(role, gpu, dialect)
            traffic = spec.spec.traffic
            if traffic is not None and role.mode != "prefill":   # SIZ003 at the traffic's mean
                z.admit_len = min(z.max_model_len,
                                  traffic.inputTokens + traffic.outputTokens // 2)
            out.append(z)
        except KeyError as exc:
            out.append(f"config.json has no {exc.args[0]!r}, which the weight inventory needs")
        except (ValueError, ZeroDivisionError) as exc:   # a shape the inventory cannot hold
            out.append(f"config.json describes a shape moegen cannot size: {exc}")
    return tuple(out)


def _host_plans(spec: InferenceDeployment, roles: list[RoleInput | None],
                dialect: Dialect | None) -> tuple[HostPlan | None, ...]:
    """Host resources and startup budget of every role whose layout is possible."""
    out: list[HostPlan | None] = []
    for role_spec, role in zip(spec.spec.roles, roles):
        if role is None or dialect is None or role.layout.problem:
            out.append(None)
            continue
        procs = dialect.processes(role, api_servers_from(role_spec.engineArgs))
        try:
            out.append(host_plan(role, procs, effective_pod(spec.spec, role_spec),
                                 spec.spec.model.loadGBps, STARTUP_PERIOD_S))
        except KeyError:
            out.append(None)   # the sizing reports the missing config field
    return tuple(out)

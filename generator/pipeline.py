"""The one-way pipeline: load -> structure -> model shape + layout -> sizing -> rules -> plan ->
files.

Used by every command so that ``gen validate`` and ``gen render`` run exactly the same checks.
The render path (templates, PyYAML) is imported only when a plan is rendered, so the policy
check starts fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .catalog import (
    GPUS,
    ModelArch,
    UnknownArchitecture,
    arch_from_config,
    builtin_config,
)
from .checks import Context, run_rules
from .engines.base import Dialect, RoleInput
from .engines.registry import dialect_for
from .engines.versions import UnsupportedVersion
from .errors import Finding, Severity
from .layout import compute_layout
from .pods import STARTUP_PERIOD_S, effective_pod
from .sizing import RoleSizing, size_role
from .sizing.host import HostPlan, host_plan
from .spec.load import LoadedSpec, json_path, load_spec
from .spec.models import InferenceDeployment, Speculative, effective_serving
from .spec.validate import validate_structure

if TYPE_CHECKING:
    from .manifests.plan import DeploymentPlan


@dataclass
class Checked:
    """Result of all checks.

    Attributes:
        loaded: the merged input with provenance.
        spec: the validated model (None when structure failed).
        findings: every finding, sorted (errors and warnings).
        roles: per role, the dialect's view (only when there are no errors).
        dialect: the engine dialect (None when unsupported).
        sizing: per role of the spec, its memory plan, or why it was not sized (a string), or
            None (no pool, model or layout to size).
        host: per role of the spec, its pods' host resources and startup budget (None where
            the layout is impossible).
    """

    loaded: LoadedSpec
    spec: InferenceDeployment | None = None
    findings: list[Finding] = field(default_factory=list)
    roles: list[RoleInput] = field(default_factory=list)
    dialect: Dialect | None = None
    sizing: tuple[RoleSizing | str | None, ...] = ()
    host: tuple[HostPlan | None, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity is Severity.ERROR for f in self.findings)


def _finding(loaded: LoadedSpec, code: str, path: tuple, message: str, hint: str = "") -> Finding:
    return Finding(code, Severity.ERROR, json_path(path), message, hint,
                   loaded.provenance.locate(path))


def carried_speculative(spec: InferenceDeployment) -> tuple[Speculative | None, str]:
    """The speculative config prefill roles run when they set none: the decode roles' one.

    Returns ``(Speculative, decode role name)``, or ``(None, "")`` when no decode role
    speculates or the decode roles disagree (rule SPD004 reports that). Prefill must run the
    decode's MTP/EAGLE config: vLLM >= 0.28.0 hashes it into the NIXL handshake
    (vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py), and SGLang's decode needs
    the draft hidden states that only a speculating prefill sends (disaggregation/prefill.py).
    """
    decodes = [r for r in spec.spec.roles if r.mode == "decode"]
    configs = {r.speculative for r in decodes}
    if len(configs) != 1 or decodes[0].speculative is None:
        return None, ""
    return decodes[0].speculative, decodes[0].name


def _arch(loaded: LoadedSpec, spec: InferenceDeployment) -> tuple[ModelArch | None, list[Finding]]:
    m = spec.spec.model
    try:
        if m.config is not None and loaded.model_config is not None:
            return arch_from_config(loaded.model_config), []
        if m.architecture is not None:
            return arch_from_config(builtin_config(m.architecture)), []
    except UnknownArchitecture as exc:
        return None, [_finding(loaded, "MOD002", ("spec", "model", "config"), str(exc),
                               "give the config.json of a DeepSeek-V2/V3/V3.2/V4 or Kimi-K2 model")]
    except (KeyError, TypeError, ValueError) as exc:
        return None, [_finding(loaded, "MOD003", ("spec", "model", "config"),
                               f"config.json lacks a usable field: {exc}",
                               "give a complete Hugging Face config.json")]
    return None, []


def role_inputs(spec: InferenceDeployment, arch: ModelArch | None) -> list[RoleInput | None]:
    """Each role as the dialects see it (``None`` for a role whose pool is unknown)."""
    roles: list[RoleInput | None] = []
    pd = {r.mode for r in spec.spec.roles} >= {"prefill", "decode"}
    carried, carried_from = carried_speculative(spec) if pd else (None, "")
    for role in spec.spec.roles:
        pool = spec.spec.nodePools.get(role.nodePool)
        if pool is None or arch is None:
            roles.append(None)
            continue
        p = role.parallel
        layout = compute_layout(p.tensor, p.data, p.pipeline, p.expert, role.workload,
                                pool.gpusPerNode, role.replicas)
        speculative, source = role.speculative, ""
        if role.mode == "prefill" and speculative is None and carried is not None:
            speculative, source = carried, carried_from
        roles.append(RoleInput(
            name=role.name, mode=role.mode, model=spec.spec.model, arch=arch,
            serving=effective_serving(spec.spec, role), parallel=p, moe=role.moe,
            speculative=speculative, kv_transfer=role.kvTransfer,
            network=spec.spec.network, layout=layout, pd=pd,
            concurrency=role.sizing.concurrency or 1, speculative_from=source,
            admission=role.sizing.concurrency))
    return roles


def check(spec_path: Path, overlays: list[Path] = ()) -> Checked:
    """Run every check on a spec and its overlays. Never raises for bad input."""
    return check_loaded(load_spec(Path(spec_path), [Path(o) for o in overlays]))


def check_loaded(loaded: LoadedSpec) -> Checked:
    """Run every check on a spec already read (a file's, or one built in memory, as
    ``gen plan`` does for a fixed layout). Never raises for bad input."""
    result = Checked(loaded, findings=list(loaded.findings))
    if not result.ok:
        return _sorted(result)
    spec, findings = validate_structure(loaded)
    result.findings += findings
    if spec is None:
        return _sorted(result)
    result.spec = spec

    dialect = None
    try:
        dialect = dialect_for(spec.spec.engine.name, spec.spec.engine.version)
    except UnsupportedVersion as exc:
        result.findings.append(_finding(loaded, "VER001", ("spec", "engine", "version"),
                                        str(exc), exc.hint))
    result.dialect = dialect
    arch, findings = _arch(loaded, spec)
    result.findings += findings
    roles = role_inputs(spec, arch)
    result.sizing = _size_roles(spec, roles, dialect)
    result.host = _host_plans(spec, roles, dialect)
    ctx = Context(spec, loaded.provenance, dialect, arch, tuple(roles), result.sizing,
                  host=result.host)
    result.findings += run_rules(ctx)
    if result.ok and dialect is not None and arch is not None:
        result.roles = [r for r in roles if r is not None]
    return _sorted(result)


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
    return tuple(out)


def _host_plans(spec: InferenceDeployment, roles: list[RoleInput | None],
                dialect: Dialect | None) -> tuple[HostPlan | None, ...]:
    """Host resources and startup budget of every role whose layout is possible."""
    out: list[HostPlan | None] = []
    for role_spec, role in zip(spec.spec.roles, roles):
        if role is None or dialect is None or role.layout.problem:
            out.append(None)
            continue
        try:
            out.append(host_plan(role, dialect, effective_pod(spec.spec, role_spec),
                                 role_spec.engineArgs, spec.spec.model.loadGBps,
                                 STARTUP_PERIOD_S))
        except KeyError:
            out.append(None)   # the sizing reports the missing config field
    return tuple(out)


def _sorted(result: Checked) -> Checked:
    result.findings = sorted(result.findings, key=Finding.sort_key)
    return result


def performance(checked: Checked):
    """The predicted TTFT, TPOT and tokens/s of each role of a spec that passed
    (:func:`generator.capacity.predict.predict`), or None for a rejected spec."""
    if not checked.ok or checked.spec is None:
        return None
    from .capacity.predict import predict
    return predict(checked.spec)


def deployment_plan(checked: Checked) -> DeploymentPlan:
    """The deployment plan of a spec that passed (``checked.ok`` must be true)."""
    from .manifests.plan import build_plan
    assert checked.ok and checked.spec is not None and checked.dialect is not None, \
        "deployment_plan() needs a spec without errors"
    mon = checked.spec.spec.monitoring
    prediction = performance(checked) if mon is not None and mon.enabled and mon.dashboard \
        else None
    return build_plan(checked.spec, checked.roles, checked.dialect,
                      [z for z in checked.sizing if isinstance(z, RoleSizing)],
                      [h for h in checked.host if h is not None], prediction)


def render(checked: Checked) -> tuple[DeploymentPlan, dict[str, str]]:
    """Plan and render the files of a spec that passed."""
    from .manifests.files import render_files
    p = deployment_plan(checked)
    return p, render_files(p)

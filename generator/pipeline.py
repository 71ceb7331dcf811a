"""The one-way pipeline: load -> structure -> model shape + layout -> rules -> plan -> files.

Used by every command so that ``gen validate`` and ``gen render`` run exactly the same checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .catalog import GPUS, UnknownArchitecture, arch_from_config, builtin_config
from .engines import sglang, vllm
from .engines.common import RoleInput
from .engines.versions import UnsupportedVersion
from .errors import Finding, Severity
from .layout import compute_layout
from .plan import DeploymentPlan, build_plan
from .render.manifests import render_files
from .sizing import NotSized, size_role
from .spec.load import LoadedSpec, json_path, load_spec
from .spec.models import InferenceDeployment, effective_serving
from .spec.rules import Context, run_rules
from .spec.validate import validate_structure


@dataclass
class Checked:
    """Result of all checks.

    Attributes:
        loaded: the merged input with provenance.
        spec: the validated model (None when structure failed).
        findings: every finding, sorted (errors and warnings).
        roles: per role, the dialect's view (only when there are no errors).
        dialect: the engine dialect (None when unsupported).
        sizing: per role, its RoleSizing (or why it was not sized, or None).
    """

    loaded: LoadedSpec
    spec: InferenceDeployment | None = None
    findings: list[Finding] = field(default_factory=list)
    roles: list[RoleInput] = field(default_factory=list)
    dialect: object | None = None
    sizing: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity is Severity.ERROR for f in self.findings)


def _finding(loaded: LoadedSpec, code: str, path: tuple, message: str, hint: str = "") -> Finding:
    return Finding(code, Severity.ERROR, json_path(path), message, hint,
                   loaded.provenance.locate(path))


def check(spec_path: Path, overlays: list[Path] = ()) -> Checked:
    """Run every check on a spec and its overlays. Never raises for bad input."""
    loaded = load_spec(Path(spec_path), [Path(o) for o in overlays])
    result = Checked(loaded, findings=list(loaded.findings))
    if not result.ok:
        return _sorted(result)
    spec, findings = validate_structure(loaded)
    result.findings += findings
    if spec is None:
        return _sorted(result)
    result.spec = spec

    dialect = None
    engine = spec.spec.engine.name
    try:
        dialect = (vllm if engine == "vllm" else sglang).dialect(spec.spec.engine.version)
    except UnsupportedVersion as exc:
        example = "0.33.0" if engine == "vllm" else "0.5.23"
        result.findings.append(_finding(
            loaded, "VER001", ("spec", "engine", "version"),
            f"{'vLLM' if engine == 'vllm' else 'SGLang'} {exc}",
            f"pin a supported release, e.g. {example}"))
    result.dialect = dialect

    arch = None
    m = spec.spec.model
    try:
        if m.config is not None and loaded.model_config is not None:
            arch = arch_from_config(loaded.model_config)
        elif m.architecture is not None:
            arch = arch_from_config(builtin_config(m.architecture))
    except UnknownArchitecture as exc:
        result.findings.append(_finding(loaded, "MOD002", ("spec", "model", "config"), str(exc),
                                        "give the config.json of a DeepSeek-V2/V3/V3.2/V4 or "
                                        "Kimi-K2 model"))
    except (KeyError, TypeError, ValueError) as exc:
        result.findings.append(_finding(loaded, "MOD003", ("spec", "model", "config"),
                                        f"config.json lacks a usable field: {exc}",
                                        "give a complete Hugging Face config.json"))

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
            name=role.name, mode=role.mode, model=m, arch=arch,
            serving=effective_serving(spec.spec, role), parallel=p, moe=role.moe,
            speculative=speculative, kv_transfer=role.kvTransfer,
            network=spec.spec.network, layout=layout, pd=pd,
            concurrency=role.sizing.concurrency, speculative_from=source))
    ctx = Context(spec, loaded.provenance, dialect, arch, roles,
                  _size_roles(spec, roles, dialect))
    result.sizing = ctx.sizing
    result.findings += run_rules(ctx)
    if result.ok and dialect is not None and arch is not None:
        result.roles = [r for r in roles if r is not None]
    return _sorted(result)


def carried_speculative(spec: InferenceDeployment):
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


def _size_roles(spec: InferenceDeployment, roles: list[RoleInput | None], dialect) -> list:
    """Size every role whose layout is possible (RoleSizing, or a reason string, or None)."""
    out: list = []
    for role_spec, role in zip(spec.spec.roles, roles):
        if role is None or dialect is None or role.layout.problem:
            out.append(None)
            continue
        gpu = GPUS[spec.spec.nodePools[role_spec.nodePool].gpu]
        try:
            out.append(size_role(role, gpu, spec.spec.engine.name, dialect.version))
        except NotSized as exc:
            out.append(str(exc))
        except KeyError as exc:
            out.append(f"config.json has no {exc.args[0]!r}, which the weight inventory needs")
    return out


def _sorted(result: Checked) -> Checked:
    result.findings = sorted(result.findings, key=Finding.sort_key)
    return result


def plan(checked: Checked) -> DeploymentPlan:
    """The deployment plan of a spec that passed (``checked.ok`` must be true)."""
    assert checked.ok and checked.spec is not None, "plan() needs a spec without errors"
    return build_plan(checked.spec, checked.roles, checked.dialect,
                      [z for z in checked.sizing if z is not None])


def render(checked: Checked) -> tuple[DeploymentPlan, dict[str, str]]:
    """Plan and render the files of a spec that passed."""
    p = plan(checked)
    return p, render_files(p)

"""The one-way pipeline: read -> structure -> the deployment model -> rules -> plan -> target
files.

* read: :func:`generator.spec.load.load_spec` (the only reader of input files);
* structure: :func:`generator.spec.validate.validate_structure` (pydantic, then the JSON Schema
  explains what failed);
* the deployment model: :func:`generator.deployment.build` (dialect, model shape, layouts, HBM
  sizing, host plans; the prediction on first use);
* rules: :func:`generator.checks.run_rules` on it, then what the chosen target
  (``spec.target``) cannot express (:meth:`generator.targets.Target.findings`);
* plan: :func:`generator.manifests.plan.build_plan` (every object, name and number);
* target: :func:`generator.targets.target_for` turns the plan into files (templates only
  substitute and loop); :mod:`generator.emit` writes them.

Used by every command so that ``gen validate`` and ``gen render`` run exactly the same checks.
The render path (templates, PyYAML) is imported only when a plan is rendered, so the policy
check starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .checks import Context, run_rules
from .checks.registry import GPU_CODES, GPU_FAMILIES, gpu_dependent, model_independent
from .deployment import Deployment, build
from .engines.base import Dialect
from .errors import Finding, Location, Severity
from .roles import RoleInput
from .sizing import RoleSizing
from .sizing.host import HostPlan
from .spec.load import LoadedSpec, Provenance, json_path, load_spec
from .spec.models import InferenceDeployment
from .spec.validate import stand_in_gpu, stand_in_model, validate_structure
from .waivers import Suppressed, Waiver, no_error

if TYPE_CHECKING:
    from .manifests.plan import DeploymentPlan
    from .perf.calibrated import Calibration
    from .perf.predict import Prediction


@dataclass
class Checked:
    """Result of all checks.

    Attributes:
        loaded: the merged input with provenance.
        spec: the validated model (None when structure failed).
        findings: every finding, sorted (errors, warnings, notices), without those a skip
            suppresses (generator/waivers.py).
        model: the deployment model (None when structure failed).
        calibration: the factors of the calibration profile (``--calibration`` or
            ``spec.calibration``) where it applies to this configuration, else None.
        suppressed: the findings the spec's and overlays' skips suppress, with the skip.
    """

    loaded: LoadedSpec
    spec: InferenceDeployment | None = None
    findings: list[Finding] = field(default_factory=list)
    model: Deployment | None = None
    calibration: Calibration | None = None
    suppressed: list[Suppressed] = field(default_factory=list)
    #: The pools of ``gpu: unknown`` (docs/spec.md §2): ``spec`` and ``model`` hold the
    #: stand-in GPU for them, which nothing may render or size (:func:`gpu_refusals`).
    unstated: tuple[str, ...] = ()
    #: ``model.architecture: unknown`` (docs/spec.md §2): ``spec`` and ``model`` hold the
    #: stand-in model, which nothing may render or size (:func:`needs_gpu`).
    unstated_model: bool = False

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def dialect(self) -> Dialect | None:
        """The engine dialect (None when unsupported or structure failed)."""
        return self.model.dialect if self.model is not None else None

    @property
    def roles(self) -> list[RoleInput]:
        """Per role, the dialects' view; only when there are no errors (else empty)."""
        if not self.ok or self.model is None or self.model.dialect is None \
                or self.model.arch is None:
            return []
        return [r for r in self.model.roles if r is not None]

    @property
    def sizing(self) -> tuple[RoleSizing | str | None, ...]:
        """Per role of the spec, its memory plan, or why it was not sized (a string), or None."""
        return self.model.sizing if self.model is not None else ()

    @property
    def host(self) -> tuple[HostPlan | None, ...]:
        """Per role of the spec, its pods' host resources and startup budget (or None)."""
        return self.model.host if self.model is not None else ()


def check(spec_path: Path, overlays: Sequence[Path] = (), target: str | None = None,
          namespace: str | None = None, calibration: Path | None = None,
          skips: bool = True) -> Checked:
    """Run every check on a spec and its overlays. Never raises for bad input.

    ``target``: ``NAME`` or ``NAME@VERSION`` (``gen render --target``), replacing the spec's
    ``spec.target``; ``namespace``: the namespace the objects are applied to (a kustomize
    ``namespace:`` override, ``gen preflight --namespace``), replacing ``metadata.namespace``;
    ``calibration``: a calibration profile (``--calibration``) replacing ``spec.calibration``;
    ``skips``: apply the waivers written in the files (false: ``--no-skips``)."""
    loaded = load_spec(Path(spec_path), [Path(o) for o in overlays])
    if namespace is not None and not loaded.findings:
        override_namespace(loaded, namespace)
    return check_loaded(loaded, target, calibration, skips)


def override_namespace(loaded: LoadedSpec, namespace: str) -> None:
    """Set ``metadata.namespace`` of ``loaded``; findings on it point at ``--namespace``."""
    meta = loaded.data.get("metadata")
    if not isinstance(meta, dict):
        return
    meta["namespace"] = namespace
    where = Location("--namespace")
    loaded.provenance.replace_subtree(("metadata", "namespace"),
                                      Provenance({("metadata", "namespace"): where}))


#: The spec.target fields only these targets take (targets/common.py TGT003).
TARGET_ONLY = {"image": "dynamo", "clusterTopology": "dynamo", "packDomain": "dynamo"}


def override_target(loaded: LoadedSpec, target: str) -> None:
    """Set the name of ``spec.target`` (and its version for ``NAME@VERSION``) of ``loaded``
    (``--target``), keeping its other fields where that target takes them (an overlay's
    ``spec.target.image`` for ``--target dynamo``); the spec's version stays when the name does
    not change (a version of another target's releases is dropped, as are options only another
    target takes). Findings on name and version point at the command line."""
    spec = loaded.data.get("spec")
    if not isinstance(spec, dict):
        return
    name, _, version = target.partition("@")
    old = spec.get("target") if isinstance(spec.get("target"), dict) else {}
    keep = {k: v for k, v in old.items() if k not in ("name", "version")
            and TARGET_ONLY.get(k, name) == name}
    if not version and old.get("name", "kubernetes") == name and "version" in old:
        version = old["version"]
    spec["target"] = {"name": name, **({"version": version} if version else {}), **keep}
    kept = {p: loc for p, loc in loaded.provenance.locations.items()
            if p[:2] == ("spec", "target") and len(p) > 2 and p[2] in keep}
    where = Location("--target")
    at_cli = {("spec", "target"): where, ("spec", "target", "name"): where}
    if "@" in target:
        at_cli[("spec", "target", "version")] = where
    elif "version" in spec["target"]:
        at_cli[("spec", "target", "version")] = loaded.provenance.locations.get(
            ("spec", "target", "version"), where)
    loaded.provenance.replace_subtree(("spec", "target"), Provenance({**at_cli, **kept}))


def check_loaded(loaded: LoadedSpec, target: str | None = None,
                 calibration: Path | None = None, skips: bool = True,
                 hidden: Callable[[Finding], bool] | None = None) -> Checked:
    """Run every check on a spec already read (a file's, or one built in memory, as
    ``gen plan`` does for a fixed layout), then read its calibration profile
    (``calibration`` or ``spec.calibration``); with ``skips``, the waivers written in its files
    suppress what they name (generator/waivers.py). ``hidden``: the findings the caller will
    not report (an imported deployment's spec-form codes, its manifests' waivers): like waived
    ones, their rule errors do not keep a role from the sizing phase. Never raises for bad
    input."""
    waiver = Waiver(list(loaded.skips) if skips else [])
    result = _checked(loaded, target, calibration, waiver, hidden)
    if waiver.skips:
        kept = waiver.apply(result.findings)
        result.findings = kept + waiver.leftovers(result.model is not None and no_error(kept))
        result.suppressed = waiver.suppressed
    return _sorted(result)


def _checked(loaded: LoadedSpec, target: str | None, calibration: Path | None, waiver: Waiver,
             hidden: Callable[[Finding], bool] | None) -> Checked:
    result = Checked(loaded, findings=list(loaded.findings))
    if not result.ok:
        return result
    if target is not None:
        override_target(loaded, target)
    spec, findings = validate_structure(loaded)
    result.findings += findings
    if spec is None:
        return result
    spec, result.unstated = stand_in_gpu(spec)
    spec, result.unstated_model = stand_in_model(spec)
    result.spec = spec
    model = build(spec, loaded.provenance, loaded.model_config)
    result.model = model
    result.findings += model.findings
    waived = (lambda f: bool(waiver.covers(f) or (hidden and hidden(f)))) \
        if waiver.skips or hidden else None
    result.findings += run_rules(Context.of(model), waived)
    from .targets import target_for
    target = target_for(spec.spec.target.name)
    result.findings += target.findings(model)
    if calibration is not None or spec.spec.calibration is not None:
        from .calibration.profile import read_calibration
        result.calibration, found = read_calibration(spec, loaded.provenance, calibration)
        result.findings += found
    if not [f for f in result.findings if f.severity is Severity.ERROR
            and not (waived and waived(f))]:   # who dials which address, on the plan (NET100)
        from .manifests.plan import build_plan   # untimed: the addresses, not the timeouts
        result.findings += address_findings(build_plan(model, timed=False), model,
                                            target.address_form(model))
    result.findings = _stated(result, result.findings) + \
        unstated_gpu(result, Severity.NOTICE) + unstated_model(result, Severity.NOTICE)
    return result


def _stated(checked: Checked, findings: list[Finding]) -> list[Finding]:
    """``findings`` without those judged on a stand-in: of a check that reads the GPU where a
    pool's GPU is unknown, of any check not known to be model-independent (an allow list:
    checks/registry.py ``model_independent``) where the model is."""
    return [f for f in findings
            if not (checked.unstated and gpu_dependent(f.code))
            and not (checked.unstated_model and not model_independent(f.code))]


def needs_gpu(checked: Checked, command: str) -> Checked:
    """``checked`` for a command that renders, sizes or times the deployment on its GPU and
    model (``command``: ``gen render``): each POOL006 and MOD008 notice an error
    (``checked.ok`` then false)."""
    if checked.unstated or checked.unstated_model:
        checked.findings = sorted([f for f in checked.findings
                                   if f.code not in ("POOL006", "MOD008")]
                                  + unstated_gpu(checked, Severity.ERROR, command)
                                  + unstated_model(checked, Severity.ERROR, command),
                                  key=Finding.sort_key)
    return checked


def unstated_model(checked: Checked, severity: Severity, needs: str = "") -> list[Finding]:
    """MOD008 on ``model.architecture: unknown`` (``checked.unstated_model``): what was not
    checked and how to state the model; ``needs``: the command that cannot run without it
    (then an error: gen render, size, report, ...)."""
    if not checked.unstated_model:
        return []
    path = ("spec", "model", "architecture")
    what = f"{needs} needs it" if needs else (
        "the checks that read it did not run: HBM sizing (weights, KV cache, host memory), the "
        "model's layout constraints (attention and KV heads vs tensor, layers vs pipeline, "
        "routed experts vs expert parallelism, hidden size vs DeepEP), context length, MTP, "
        "quantization blocks and formats, per-model engine requirements and known-bad "
        "releases, and the predicted durations; the checks of the spec's form, names, pools, the "
        "layout on pods and nodes, engine flags, prefill/decode pairs, routing, network and "
        "pods ran")
    return [Finding(
        "MOD008", severity, json_path(path),
        f"the model is not stated (model.architecture: unknown): {what}",
        "state it: model.architecture (a catalog id, e.g. deepseek-r1) or model.config (its "
        "config.json) in the spec, or gen import --model ID / --model-config config.json",
        checked.loaded.provenance.locate(path))]


def unstated_gpu(checked: Checked, severity: Severity, needs: str = "") -> list[Finding]:
    """POOL006, one per pool of ``gpu: unknown`` (``checked.unstated``): what was not checked
    and how to state the GPU; ``needs``: the command that cannot run without it (then an
    error: gen render, size, report)."""
    out = []
    for name in checked.unstated:
        path = ("spec", "nodePools", name, "gpu")
        codes = ", ".join([f"{f}*" for f in GPU_FAMILIES] + sorted(GPU_CODES))
        what = f"{needs} needs it" if needs else (
            "the checks that read it did not run: HBM sizing, what the GPU runs (kernels, "
            "formats, all-to-all libraries), its generation and NVLink domain, and what is "
            f"derived from its memory and speed ({codes})")
        out.append(Finding(
            "POOL006", severity, json_path(path),
            f"pool {name!r}: the GPU is not stated (gpu: unknown): {what}",
            f"state it: nodePools.{name}.gpu (a catalog id, e.g. H200-141GB), gen import "
            "--gpu, or a nodeSelector / required node affinity on nvidia.com/gpu.product in "
            "the manifests", checked.loaded.provenance.locate(path)))
    return out


def address_findings(plan: DeploymentPlan, model: Deployment, form) -> list[Finding]:
    """NET100 errors: the connections of ``plan`` rendered by ``form`` (a target's
    AddressForm) that no listener accepts (generator/manifests/addresses.py), each on the spec
    field that decides it (``model``: the deployment model the plan was built from)."""
    from .manifests.addresses import ALL, LOOPBACK, POD_ADDR, VIA_LOCALHOST, VIA_POD, \
        address_model
    out = []
    names = [r.name for r in model.spec.spec.roles]
    for dial, on_pod in address_model(plan, form).mismatches():
        same_port = [x for x in on_pod if x.port == dial.port]
        unexpanded = any(x.bind not in (ALL, POD_ADDR, LOOPBACK) for x in same_port) or \
            dial.address not in (VIA_POD, VIA_LOCALHOST)
        if same_port:
            there = "; ".join(f"{x.what} listens there on {x.bind}" for x in same_port)
        else:
            there = (f"nothing listens on port {dial.port} there (it listens on "
                     f"{', '.join(str(p) for p in sorted({x.port for x in on_pod})) or 'none'})")
        role = dial.pod.split("/", 1)[0]
        path = ("spec", "target", "name") if unexpanded else \
            ("spec", "network", "bindAddress") if same_port else \
            ("spec", "roles", names.index(role)) if role in names else ("spec", "router")
        out.append(Finding(
            "NET100", Severity.ERROR, json_path(path),
            f"{dial.client} connects to {'its own pod' if dial.local else dial.pod} port "
            f"{dial.port} at {dial.address} ({dial.what}, target {form.name}), but {there}: "
            "the connection is refused",
            "bind the listener where its clients dial (generator/manifests/addresses.py lists "
            "every connection and listener of the rendering)", model.provenance.locate(path)))
    return out


def _sorted(result: Checked) -> Checked:
    result.findings = sorted(result.findings, key=Finding.sort_key)
    return result


def performance(checked: Checked) -> Prediction | None:
    """The predicted TTFT, TPOT and tokens/s of each role of a spec that passed (the deployment
    model's :attr:`~generator.deployment.Deployment.prediction`, calibrated by the spec's
    profile where it applies: perf/calibrated.py), or None for a rejected spec."""
    if not checked.ok or checked.model is None:
        return None
    if checked.calibration is None:
        return checked.model.prediction
    from .perf.calibrated import apply
    return apply(checked.model.prediction, checked.calibration)


def deployment_plan(checked: Checked) -> DeploymentPlan:
    """The deployment plan of a spec that passed (``checked.ok`` must be true)."""
    from .manifests.plan import build_plan
    assert checked.ok and checked.model is not None and checked.dialect is not None, \
        "deployment_plan() needs a spec without errors"
    return build_plan(checked.model)


def render(checked: Checked) -> tuple[DeploymentPlan, dict[str, str]]:
    """Plan and render the files of a spec that passed, for its ``spec.target`` (checked with
    that target: :func:`check` with ``target`` overrides it)."""
    from .targets import target_for
    p = deployment_plan(checked)
    return p, target_for(checked.spec.spec.target.name).render(p, checked.model)

"""The second input: Kubernetes manifests that run vLLM or SGLang -> InferenceDeployment
documents, so the same checks (the rule catalogue, the HBM check) run on deployments moegen did
not write, and ``gen import`` can turn them into specs.

``read_unit`` (``generator/spec/load.py``, the one reader) gives the documents of a file, a
directory or a stream; :func:`classify` says what an input is; :func:`import_unit` reconstructs
each deployment it holds (:mod:`.workloads` -> :mod:`.launch` (environment, command line, shell
script) -> :mod:`.engine` and :mod:`.pods` -> :mod:`.build`, the moegen-specific objects in
:mod:`.objects`) as a :class:`~generator.spec.load.LoadedSpec` whose provenance points at the
manifests' file:line:column, with IMP findings for what could not be reconstructed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from typing import TYPE_CHECKING

from ..errors import Finding, Severity
from ..spec.load import Document, InputUnit, LoadedSpec, with_overlays
from .options import Options

if TYPE_CHECKING:
    from ..pipeline import Checked
    from ..spec.skips import Skip
    from .build import Imported
    from .launch import Issue

__all__ = ["Options", "classify", "import_unit", "to_loaded", "check_imported", "SPEC",
           "MANIFEST", "NEITHER", "IMPORTED_SUPPRESSED"]

SPEC, MANIFEST, NEITHER, PLAN = "spec", "manifest", "neither", "plan"
#: Codes that speak about a spec's own form, not the deployment, and have an IMP counterpart
#: on imported manifests (not reported there): MOD001 (the model source: IMP011), ENG002 and
#: ENG007 (the image's release: IMP008), NET003 (a variable moegen would derive: the manifest sets it itself),
#: SRV004 (moegen's own SGLang renders need sizing.concurrency; an engine left at its default
#: admission limit is not wrong: the import states it as sizing.concurrency: engine-default).
IMPORTED_SUPPRESSED = frozenset({"MOD001", "ENG002", "ENG007", "NET003", "SRV004"})
#: Codes that on a spec hold moegen's own pattern (its host sizing, its cache, its pools) and on
#: an imported manifest claim no defect (issue #31: "never apply moegen's own spec patterns to
#: third-party values"): reported there as notices, the text saying what moegen would do and
#: that it is not a defect. POD003/POD004: moegen's host sizing (generator/sizing/host.py), not
#: a limit the engine refuses; MOD006: a Hub download into a cache that dies with the pod is
#: downloaded again on re-creation, a cost (huggingface_hub downloads into whatever HF_HOME
#: holds); POOL004: two roles on the same node type may be meant (a nodeSelector only filters
#: nodes: https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/).
IMPORTED_NOTICES = {
    "POD003": "moegen's host sizing would request more memory; the engine does not refuse this "
              "limit (page cache is reclaimable), so on a manifest it is not a defect",
    "POD004": "moegen's host sizing would request more CPU; the engine runs on fewer cores "
              "(slower at worst), so on a manifest it is not a defect",
    "MOD006": "moegen would keep the download in a cache that outlives the pod; a re-download "
              "on re-creation is a cost, not a defect",
    "POOL004": "moegen would give each role its own nodes; roles that select the same node "
               "type may do so on purpose, which is not a defect",
}


def _is_spec(d: Document) -> bool:
    return isinstance(d.data, dict) and d.data.get("kind") == "InferenceDeployment"


def classify(docs: list[Document]) -> str:
    """What a file's documents are: a spec, a PlanRequest, serving manifests (a workload that
    runs an engine, or could: every pod-template kind the importer reads), or neither."""
    if any(_is_spec(d) for d in docs):
        return SPEC
    if any(isinstance(d.data, dict) and d.data.get("kind") == "PlanRequest" for d in docs):
        return PLAN
    from .build import read_roles
    from .launch import Context
    from .workloads import workloads_of
    ctx = Context(docs)
    opts = Options()
    for d in docs:
        ws = workloads_of(d)
        if ws and any(read_roles(ws, ctx, opts)):   # roles, or what kept them from being read
            return MANIFEST
    return NEITHER


@dataclass
class UnitImport:
    """What one input holds: each deployment reconstructed, and the findings of the input that
    belong to no deployment (unreadable documents)."""

    deployments: list["Imported"] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def import_unit(unit: InputUnit, opts: Options | None = None) -> UnitImport:
    """Reconstruct every deployment in ``unit`` (documents that are specs are left out). In a
    pool of several inputs (``unit.inputs``) or a tree of directories a pod's ConfigMaps are
    looked up in its own directory first, roles group only where they do not repeat each other
    (:func:`.build.group_roles`), and a deployment reads the objects beside it (router,
    monitoring) from its own directories and from directories that hold no engine."""
    from .assemble import assemble
    from .build import group_roles, read_roles
    from .launch import Context
    from .workloads import workloads_of
    opts = opts or Options()
    docs = [d for d in unit.documents if not _is_spec(d)]

    def input_of(d: Document) -> str:
        return unit.inputs.get(d.file, unit.name)

    shared = Context(docs)
    by_dir: dict[str, list[Document]] = {}   # a pod's ConfigMaps: its own directory's first
    for d in docs:
        by_dir.setdefault(_where(d.file), []).append(d)
    roles, issues = [], []
    for own in by_dir.values():
        ctx = Context(own, shared) if len(by_dir) > 1 else shared
        found, why = read_roles([w for d in own for w in workloads_of(d)], ctx, opts)
        roles += found
        issues += why
    out = UnitImport(findings=list(unit.findings) + [_finding(i) for i in issues])
    from .objects import apply_objects
    from .refine import refine
    groups = group_roles(roles, lambda r: input_of(r.workload.doc))
    for group in groups:
        files = sorted({r.workload.doc.file for r in group})
        imported = assemble(group, opts, files)
        apply_objects(imported, [d for d in docs if _beside(d, group, groups)])
        refine(imported)
        out.deployments.append(imported)
    return out


def _where(file: str) -> str:
    return file.rsplit("/", 1)[0] if "/" in file else ""


def _beside(d: Document, group: list, groups: list[list]) -> bool:
    """``d`` is read with ``group``'s roles: it sits in the directory of one of them, or in a
    directory that holds no deployment's engine."""
    home = _where(d.file)
    if home in {_where(r.workload.doc.file) for r in group}:
        return True
    return all(home != _where(r.workload.doc.file) for g in groups for r in g)


def _finding(issue: Issue) -> Finding:
    sev = Severity.ERROR if issue.error else Severity.NOTICE if issue.notice else \
        Severity.WARNING
    return Finding(issue.code, sev, issue.path, issue.message, issue.hint, issue.location)


#: IMP errors after which the checks do not run (no engine command, an unreadable script, a
#: container the API server refuses); the others leave a spec worth checking.
BLOCKING = frozenset({"IMP001", "IMP002", "IMP012", "IMP026"})
#: Of :data:`BLOCKING`, the notices: the manifest may be sound, moegen cannot judge it. IMP012,
#: no GPU stated: the HBM check, the GPU family's formats and every check of the layout would
#: judge a GPU the manifest does not name (issue #31: "moegen does not read this" is a notice
#: that says what was not checked, never an error on a manifest that runs).
UNJUDGED = frozenset({"IMP012"})


def blocks(f: Finding) -> bool:
    """``f`` (an IMP finding) stops the deployment checks: a :data:`BLOCKING` error, or a
    :data:`UNJUDGED` notice."""
    return f.code in BLOCKING and (f.severity is Severity.ERROR or f.code in UNJUDGED)


def to_loaded(imported: "Imported", overlays: Sequence[Path] = ()) -> LoadedSpec:
    """The imported deployment as the pipeline's input (overlays merge over it: a context file
    gives what the manifests do not say), its IMP findings first."""
    loaded = with_overlays(imported.data, imported.provenance, imported.files, list(overlays))
    loaded.findings = [_finding(i) for i in imported.issues] + loaded.findings
    return loaded


def check_imported(imported: "Imported", overlays: Sequence[Path] = (), target: str | None = None,
                   skips: Sequence[Skip] = ()) -> Checked:
    """Run every check on an imported deployment (:func:`generator.pipeline.check_loaded`;
    ``target``: ``NAME[@VERSION]``, as ``--target``): IMP findings are reported beside the
    checks' unless one of :data:`BLOCKING` stops them. The errors not reported on manifests
    (:data:`IMPORTED_SUPPRESSED`, ``imported.suppress``: MOD005 for Hub weights) and those the
    manifests' waivers ``skips`` cover (generator/inputs.py applies them) do not keep a role
    from the sizing phase: its HBM is checked."""
    from .. import pipeline
    loaded = to_loaded(imported, overlays)
    mine = {i.code for i in imported.issues}   # IMP codes, and ENG006 for refused values
    imp = [f for f in loaded.findings if f.code in mine]
    if any(f.code in BLOCKING and f.severity is Severity.ERROR for f in imp):
        return pipeline.check_loaded(loaded, target)
    if any(blocks(f) for f in imp):   # not judged: the IMP findings only
        return pipeline.Checked(loaded, findings=sorted(loaded.findings, key=Finding.sort_key))
    loaded.findings = [f for f in loaded.findings if f.code not in mine]
    from ..waivers import Waiver
    waiver, quiet = Waiver(list(skips)), IMPORTED_SUPPRESSED | set(imported.suppress)
    checked = pipeline.check_loaded(loaded, target,
                                    hidden=lambda f: f.code in quiet or bool(waiver.covers(f)))
    found = checked.findings
    found = [as_imported(f) for f in found]
    if imported.assumed:
        found = [assumed_release(f, imported.assumed) for f in found]
    checked.findings = sorted(imp + found, key=Finding.sort_key)
    return checked


def as_imported(f: Finding) -> Finding:
    """``f`` as reported on an imported manifest: a code of :data:`IMPORTED_NOTICES` (moegen's
    own pattern, not a defect of a manifest that runs) is a notice whose message ends with what
    moegen would do; any other finding unchanged."""
    why = IMPORTED_NOTICES.get(f.code)
    if why is None or f.severity is Severity.NOTICE:
        return f
    return replace(f, severity=Severity.NOTICE, message=f"{f.message} [notice on an imported "
                                                         f"manifest: {why}]")


def assumed_release(f: Finding, assumed: str) -> Finding:
    """An error that depends on the engine release (checks/registry.py ``release_dependent``),
    judged at a release moegen assumed (``"vLLM 0.26.0"``): a warning that names it. Never an
    error on a guess."""
    from ..checks.registry import release_dependent
    if f.severity is not Severity.ERROR or not release_dependent(f.code):
        return f
    return replace(f, severity=Severity.WARNING,
                   message=f"{f.message} [judged at {assumed}, a release moegen assumed for "
                           "the image (IMP008)]")

"""Many inputs in one process (``gen validate a.yaml b.yaml dir/ -``, ``gen import``): each file
is a spec, a PlanRequest, serving manifests, or neither; specs are checked one by one (with the
overlays), every manifest document of every input is imported together (a deployment's prefill
and decode may sit in different files; inputs that repeat an object, such as a copy of a
rendered tree or two renders of one spec, stay separate deployments:
:func:`generator.importer.build.group_roles`) and each deployment found is checked like a spec
(:func:`generator.pipeline.check_loaded`), its findings located in the manifests.

Files that are neither (a values file, a CI workflow) are skipped and counted, so a pre-commit
hook may hand every changed YAML file over; a file of Kubernetes objects (a Service, ConfigMaps,
the router) or one a kustomization names is read with the serving manifests when the inputs
hold any, and is skipped otherwise: the same count however the files are passed (a directory,
or its files one by one). An engine under a kind the importer does not read is a notice
(INP002, :mod:`generator.importer.unread`) and its file is counted as ``unread``; inputs in
which nothing is checked are an error for ``gen validate`` (INP001, :func:`nothing_checked`).
An unreadable file counts as a spec or manifest
(its findings are reported) when its text names one (``kind: InferenceDeployment``, an engine
entry point); one that names neither is reported when it is not valid YAML (:data:`BROKEN`),
given or found in a directory alike, unless it is a template (``{{ }}``); else it is skipped too.
The waivers written in the manifests (:mod:`generator.waivers`) apply to every finding located
in them; those of specs and overlays are applied by the pipeline.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from typing import TYPE_CHECKING

from . import pipeline
from .errors import Finding, Location, Severity
from .spec.load import (
    Document,
    InputUnit,
    LoadedSpec,
    Provenance,
    expand_inputs,
    loaded_from_document,
    parse_embedded,
    read_unit,
    with_overlays,
)
from .waivers import Suppressed, Waiver, no_error, unused

if TYPE_CHECKING:
    from .importer import Options
    from .importer.build import Imported

#: What a file is (generator/importer classifies the other kinds).
SPEC, PLAN, MANIFEST = "spec", "plan", "manifest"

#: Text that makes an unreadable file one to report on: a spec (it names InferenceDeployment or
#: moegen's API group), or a workload kind the importer reads with an engine entry point.
_RELEVANT = re.compile(
    r"\A(?:(?=(?P<spec>.*?(?:InferenceDeployment|moegen\.dev/)))|(?=.*\bkind:\s*(?:LeaderWorkerSet|"
    r"StatefulSet|Deployment|DisaggregatedSet|LLMInferenceService|RoleBasedGroup|"
    r"DynamoGraphDeployment|StormService)\b)(?=(?P<manifest>.*?(?:vllm\s+serve|vllm\.entrypoints|"
    r"sglang\.launch_server|sglang\s+serve|dynamo\.(?:vllm|sglang))))|(?=(?P<template>.*?\{\{)))",
    re.S)
#: What makes a file that names neither a spec nor an engine a finding: it is not valid YAML
#: (a syntax error, a duplicate key). Files moegen's guard refuses for its own inputs (anchors,
#: custom tags, depth) are other tools' valid YAML, and a template (``{{ }}``: Helm, Jinja) is
#: YAML only once rendered: both are skipped.
BROKEN = frozenset({"LOAD008", "LOAD009"})


@dataclass
class Checked:
    """One checked input: a spec file, or a deployment imported from manifests.

    Attributes:
        name: the spec file, or the deployment's name with its files.
        kind: ``spec`` or ``manifest``.
        checked: the pipeline's result (findings, model).
        imported: the deployment as imported (manifests only).
        waived: manifests: the findings after the manifests' skips (None: not applied);
            waived_by: what those skips suppressed.
    """

    name: str
    kind: str
    checked: pipeline.Checked
    imported: Imported | None = None
    waived: list[Finding] | None = None
    waived_by: list[Suppressed] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        if self.kind == SPEC:
            return self.checked.findings
        if self.waived is not None:
            return self.waived
        from .importer import IMPORTED_SUPPRESSED
        skip = IMPORTED_SUPPRESSED | (self.imported.suppress if self.imported else set())
        # One manifest value behind two spec fields (replicas: -2 is a role's replicas and
        # its pool's nodes) is one finding once both are named as the manifest writes them.
        return list(dict.fromkeys(_relocated(f, self.imported) for f in self.checked.findings
                                  if f.code not in skip))

    @property
    def suppressed(self) -> list[Suppressed]:
        """The findings skips suppressed (the spec's and overlays', then the manifests')."""
        return self.checked.suppressed + self.waived_by


@dataclass
class Batch:
    """The result of many inputs.

    Attributes:
        results: each spec and each imported deployment, checked.
        findings: findings of files that belong to no result (unreadable manifests).
        files: every file read; skipped: files that are neither specs nor serving manifests
            (Kubernetes objects are read with the serving manifests when there are any: a
            router, ConfigMaps, monitoring); unread: files whose engines run under kinds the
            importer does not read (INP002); plans: PlanRequest files (``gen plan``).
        missing: inputs that do not exist.
        waived_by: what the manifests' skips suppressed among ``findings``.
    """

    results: list[Checked] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    waived_by: list[Suppressed] = field(default_factory=list)

    @property
    def suppressed(self) -> list[Suppressed]:
        """Every finding a skip suppressed, sorted like findings."""
        out = list(self.waived_by) + [s for r in self.results for s in r.suppressed]
        return sorted(dict.fromkeys(out), key=lambda s: s.finding.sort_key())

    def all_findings(self) -> list[Finding]:
        """Every finding, sorted; a skip shared by several results (an overlay) is reported
        once, and not as unused (SKP002) when one of them used it."""
        out = list(self.findings)
        for r in self.results:
            out += r.findings
        used = {unused(s.skip, s.finding.code) for s in self.suppressed}
        own = [f for f in out if f.code in ("SKP001", "SKP002")]
        out = [f for f in out if f.code not in ("SKP001", "SKP002")] + \
            [f for f in dict.fromkeys(own) if f not in used]
        return sorted(out, key=Finding.sort_key)

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.all_findings())

    def to_json(self) -> dict:
        """The keys ``gen validate --format json`` adds to the findings: ``inputs`` (name,
        kind, ok), ``skipped``, ``unread``, ``planRequests``, ``suppressed`` (each with its
        reason and skip)."""
        return {"inputs": [{"name": r.name, "kind": r.kind, "ok": no_error(r.findings)}
                           for r in self.results],
                "skipped": self.skipped, "unread": self.unread, "planRequests": self.plans,
                "suppressed": [s.to_json() for s in self.suppressed]}


def _file_docs(unit: InputUnit, name: str) -> list[Document]:
    return [unit.documents[i] for i in unit.files.get(name, [])]


def read_inputs(paths: list[Path], overlays: Sequence[Path] = (), opts: Options | None = None,
                check: bool = True, target: str | None = None, skips: bool = True,
                require: bool = False) -> Batch:
    """Read, classify, import and (with ``check``) check every input (never raises for bad
    input); ``target``: ``NAME[@VERSION]`` replacing each deployment's ``spec.target``
    (``--target``); ``skips``: apply the waivers written in the inputs (false:
    ``--no-skips``); ``require``: INP001 when nothing was checked (``gen validate``)."""
    batch = Batch()
    expanded, batch.missing = expand_inputs(list(paths))
    pool = InputUnit("manifests")
    neither: dict[str, list[Document]] = {}
    for path, files in expanded:
        unit = read_unit(path, files, _RELEVANT)
        batch.files += list(unit.files) + [f.location.file for f in unit.findings
                                           if f.location.file not in unit.files]
        bad = {f.location.file for f in unit.findings}
        indexed = {i for idx in unit.files.values() for i in idx}
        generated = [d for i, d in enumerate(unit.documents) if i not in indexed]
        pool.inputs.update({n: unit.name for n in unit.files})
        pool.inputs.update({d.file: unit.name for d in generated})
        for name in unit.files:
            docs = _file_docs(unit, name)
            kind = _kind_of(docs)
            if kind == SPEC:
                spec_doc = next((d for d in docs if isinstance(d.data, dict)
                                 and d.data.get("kind") == "InferenceDeployment"), docs[0])
                loaded = loaded_from_document(spec_doc, list(overlays), unit.texts.get(name, 0))
                if len(docs) > 1:
                    loaded.findings.append(_one_document(name))
                loaded.findings += [f for f in unit.findings if f.location.file == name]
                batch.results.append(Checked(name, SPEC, pipeline.check_loaded(
                    loaded, target, skips=skips) if check else pipeline.Checked(loaded)))
            elif kind == PLAN:
                batch.plans.append(name)
            elif name in bad and unit.marks.get(name) == "spec":
                # A spec that could not be read (invalid YAML, refused by the guard): reported.
                loaded = LoadedSpec({}, Provenance(), [name], None,
                                    [f for f in unit.findings if f.location.file == name])
                batch.results.append(Checked(name, SPEC, pipeline.check_loaded(loaded)))
            elif name in bad and not unit.marks.get(name) and any(
                    f.code in BROKEN for f in unit.findings if f.location.file == name):
                # Broken YAML that names no spec or engine (given, or found in a directory):
                # reported, so a policy check fails on it.
                batch.findings += [f for f in unit.findings if f.location.file == name]
            elif kind == MANIFEST or (name in bad and unit.marks.get(name) == "manifest"):
                pool.documents += docs
                pool.files[name] = []
                pool.findings += [f for f in unit.findings if f.location.file == name]
            else:
                pool.documents += docs   # context: ConfigMaps, the router, monitoring
                neither[name] = docs
        pool.documents += generated
        batch.findings += missing_kustomized(unit.documents)
        for f in unit.findings:   # files that could not be read at all
            if f.location.file not in unit.files:
                batch.findings.append(f)
    if pool.documents or pool.findings:
        _import(batch, pool, neither, overlays, opts, check, target, skips)
    else:
        batch.skipped = sorted(neither)
    if skips and check:
        _waive_manifests(batch, pool)
    if require:
        batch.findings += [f for f in [nothing_checked(batch, paths)] if f]
    return batch


def _import(batch: Batch, pool: InputUnit, neither: dict[str, list[Document]],
            overlays: Sequence[Path], opts: Options | None, check: bool, target: str | None,
            skips: bool) -> None:
    """Import and check the serving manifests of ``pool`` (``skips``: their waivers keep the
    rule errors they waive from stopping a role's sizing); sort the files that are neither
    into unread (INP002), read with the manifests, and skipped."""
    from .importer import check_imported, import_unit, to_loaded
    from .importer.unread import unread_engines
    notices = [f for f in map(unread_engines, pool.documents) if f is not None]
    batch.findings += notices
    batch.unread = sorted({f.location.file for f in notices} & set(neither))
    named = _kustomized(pool.documents)
    batch.skipped = sorted(
        n for n, docs in neither.items() if n not in batch.unread and not (pool.files and (
            any(_is_object(d.data) for d in docs) or os.path.abspath(n) in named)))
    imported = import_unit(pool, opts)
    batch.findings += imported.findings
    waivers = [s for d in pool.documents for s in d.provenance.skips] if skips else []
    for dep in imported.deployments:
        name = f"{dep.data['metadata']['name']} ({', '.join(dep.files)})"
        batch.results.append(Checked(name, MANIFEST, check_imported(
            dep, list(overlays), target, waivers) if check else pipeline.Checked(
                to_loaded(dep, list(overlays))), dep))


def _is_object(data: object) -> bool:
    return isinstance(data, dict) and bool(data.get("kind")) and bool(data.get("apiVersion"))


#: The fields of a kustomization that name files of its directory (kubernetes-sigs/kustomize
#: api/types/kustomization.go: resources, components, crds, configurations, generators,
#: transformers, validators, patchesStrategicMerge; patches[].path).
_KUSTOMIZE_FILES = ("resources", "components", "crds", "configurations", "generators",
                    "transformers", "validators", "patchesStrategicMerge")


def _kustomized(documents: list[Document]) -> set[str]:
    """The absolute paths of the files the kustomizations among ``documents`` name."""
    out: set[str] = set()
    for d in documents:
        data = d.data
        if not (isinstance(data, dict) and data.get("kind") in ("Kustomization", "Component")):
            continue
        base = os.path.dirname(os.path.abspath(d.file))
        entries = [e for k in _KUSTOMIZE_FILES for e in (data.get(k) or [])
                   if isinstance(data.get(k), list)]
        entries += [p.get("path") for p in data.get("patches") or [] if isinstance(p, dict)]
        out |= {os.path.normpath(os.path.join(base, e)) for e in entries if isinstance(e, str)}
    return out


def missing_kustomized(documents: list[Document]) -> list[Finding]:
    """INP003 for each local file or directory a kustomization names that does not exist
    (``kustomize build`` fails on it: its accumulateResources reads each entry as a file, else
    a directory or a remote target,
    https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/resource/); remote
    resources (URLs, ``host/org/repo`` with ``?ref=``) are not checked."""
    out = []
    for d in documents:
        data = d.data
        if not (isinstance(data, dict) and data.get("kind") in ("Kustomization", "Component")) \
                or d.file.startswith("<"):
            continue
        base = os.path.dirname(os.path.abspath(d.file))
        for key in _KUSTOMIZE_FILES:
            for i, entry in enumerate(data.get(key) or [] if isinstance(data.get(key), list)
                                      else []):
                if not isinstance(entry, str) or "://" in entry or "?ref=" in entry or \
                        entry.startswith(("github.com/", "git@")):
                    continue
                if not os.path.exists(os.path.join(base, entry)):
                    out.append(Finding(
                        "INP003", Severity.ERROR, f"$.{key}[{i}]",
                        f"the kustomization names {entry!r} in {key}, which does not exist "
                        "(relative to the kustomization's directory): kustomize build fails",
                        "fix the path, or remove the entry",
                        d.provenance.locate((key, i))))
    return out


def _waive_manifests(batch: Batch, pool: InputUnit) -> None:
    """Apply the skips written in the manifests and the files read with them to the findings
    located there; SKP001/SKP002 for the skips themselves (unused ones only when every
    deployment was checked to the end without an error)."""
    skipped = set(batch.skipped)
    w = Waiver([s for d in pool.documents if d.file not in skipped for s in d.provenance.skips])
    if not w.skips:
        return
    batch.findings = w.apply(batch.findings)
    batch.waived_by = list(w.suppressed)
    manifests = [r for r in batch.results if r.kind == MANIFEST]
    for r in manifests:
        before = len(w.suppressed)
        r.waived = w.apply(r.findings)
        r.waived_by = w.suppressed[before:]
    complete = no_error(batch.findings) and all(
        r.checked.model is not None and no_error(r.findings) for r in manifests)
    batch.findings += w.leftovers(complete)


def nothing_checked(batch: Batch, paths: list[Path]) -> Finding | None:
    """INP001 when the inputs hold nothing ``gen validate`` checks (no spec, no serving
    workload the importer reads) and no other error says why; else None."""
    if batch.results or not no_error(batch.findings) or batch.missing:
        return None
    read = len(batch.files)
    parts = [f"{read} file{'s' * (read != 1)} read"]
    if batch.skipped:
        parts.append(f"{len(batch.skipped)} neither a spec nor a serving manifest")
    if batch.unread:
        parts.append(f"{len(batch.unread)} with engines under kinds moegen does not read "
                     "(INP002)")
    if batch.plans:
        parts.append(f"{len(batch.plans)} PlanRequest{'s' * (len(batch.plans) != 1)} (gen plan)")
    where = batch.files[0] if batch.files else str(paths[0]) if paths else ""
    return Finding("INP001", Severity.ERROR, "$", "nothing was checked: no InferenceDeployment "
                   "and no serving workload moegen reads in the inputs (" + "; ".join(parts)
                   + ")", "give the specs or manifests to check; --allow-empty accepts inputs "
                   "with nothing to check (a pre-commit hook given every changed YAML file)",
                   Location(where, 0, 0))


_ROLE = re.compile(r"role '([a-z0-9-]+)'")


def _relocated(f: Finding, imported: Imported | None) -> Finding:
    """A finding on a field no manifest sets (a default such as ``spec.serving``) is located at
    the deployment's first workload; when its message names a role, at that role's workload. A
    finding on a value the manifest sets under another name (``provenance.names``) is named
    by it and located at it."""
    if imported is None:
        return f
    named = _manifest_name(f, imported.provenance)
    if named is not None:
        return named
    root = imported.provenance.locations.get(())
    m = _ROLE.search(f.message)
    if f.location != root or not m:
        return f
    for i, role in enumerate(imported.data["spec"]["roles"]):
        if role["name"] == m.group(1):
            loc = imported.provenance.locations.get(("spec", "roles", i), f.location)
            return Finding(f.code, f.severity, f.path, f.message, f.hint, loc)
    return f


def _manifest_name(f: Finding, prov: Provenance) -> Finding | None:
    """``f`` named by what the manifest calls its spec path (the longest path in
    ``prov.names`` that ``f.path`` is or lies under) and located there; None if none."""
    from .spec.provenance import json_path
    for key in sorted(prov.names, key=len, reverse=True):
        text = json_path(key)
        if f.path == text or f.path.startswith((text + ".", text + "[")):
            loc = prov.locations.get(key, f.location)
            if f.code == "LOAD011" and f.location.file == loc.file:
                loc = f.location   # --model-config's JSON error, at its own line
            return replace(f, path=prov.names[key], location=loc)
    return None


def _kind_of(docs: list[Document]) -> str:
    """A spec or a PlanRequest is known by its kind; the importer tells the others apart (it
    is imported only then: a policy check of specs never loads it)."""
    kinds = {str(d.data.get("kind")) for d in docs if isinstance(d.data, dict)}
    if "InferenceDeployment" in kinds or any(
            isinstance(d.data, dict) and str(d.data.get("apiVersion", "")).startswith("moegen.dev/")
            and d.data.get("kind") != "PlanRequest" for d in docs):
        return SPEC   # a moegen document with a broken kind is a spec to report on
    if "PlanRequest" in kinds:
        return PLAN
    if not docs:
        return "neither"
    from .importer import classify
    return classify(docs)


def _one_document(name: str) -> Finding:
    from .errors import Location
    return Finding("LOAD004", Severity.ERROR, "$", "more than one YAML document in a spec file",
                   "put one InferenceDeployment per file", Location(name, 1, 1))


def written_errors(result: Checked, text: str, file: str, overlays: Sequence[Path] = (),
                   target: str | None = None) -> list[Finding]:
    """The errors ``gen validate FILE`` (with the same overlays) would report on the spec
    ``gen import`` wrote for ``result`` (``text``) that the manifests' check did not: codes
    reported on manifests only through an IMP finding (model.volume for weights the engine
    downloads from the Hub: IMP010, MOD005), or only as warnings (judged at an assumed
    release: IMP008), so that import and validate of its spec agree."""
    from .errors import Location
    from .importer import BLOCKING
    if any(f.code in BLOCKING and f.severity is Severity.ERROR for f in result.findings):
        return []   # the checks did not run on the manifests: the import failed already
    data, prov, findings = parse_embedded(text, file, (1, 0), Location(file, 1, 1))
    if not findings:
        findings = pipeline.check_loaded(with_overlays(data, prov, [file], list(overlays)),
                                         target).findings
    seen = {f.code for f in result.findings if f.severity is Severity.ERROR}
    return [f for f in findings if f.severity is Severity.ERROR and f.code not in seen]


def summary_line(batch: Batch) -> str:
    """One line for people: what was checked, what was skipped, the finding counts."""
    from .output.findings import summary
    specs = sum(r.kind == SPEC for r in batch.results)
    deps = sum(r.kind == MANIFEST for r in batch.results)
    parts = []
    if specs:
        parts.append(f"{specs} spec{'s' * (specs != 1)}")
    if deps:
        parts.append(f"{deps} deployment{'s' * (deps != 1)} from manifests")
    checked = " and ".join(parts) or "nothing"
    extra = ""
    if batch.unread:
        extra += (f"; {len(batch.unread)} file{'s' * (len(batch.unread) != 1)} with engines "
                  "moegen does not read (not checked)")
    if batch.skipped:
        extra += (f"; {len(batch.skipped)} file{'s' * (len(batch.skipped) != 1)} skipped "
                  "(neither specs nor serving manifests)")
    if batch.plans:
        extra += f"; {len(batch.plans)} PlanRequest{'s' * (len(batch.plans) != 1)} (gen plan)"
    return f"checked {checked}{extra}: {summary(batch.all_findings(), len(batch.suppressed))}"


__all__ = ["Batch", "Checked", "read_inputs", "summary_line"]

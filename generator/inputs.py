"""Many inputs in one process (``gen validate a.yaml b.yaml dir/ -``, ``gen import``): each file
is a spec, a PlanRequest, serving manifests, or neither; specs are checked one by one (with the
overlays), every manifest document of every input is imported together (a deployment's prefill
and decode may sit in different files; inputs that repeat an object, such as a copy of a
rendered tree or two renders of one spec, stay separate deployments:
:func:`generator.importer.build.group_roles`) and each deployment found is checked like a spec
(:func:`generator.pipeline.check_loaded`), its findings located in the manifests.

Files that are neither (a values file, a CI workflow) are skipped and counted, so a pre-commit
hook may hand every changed YAML file over. An unreadable file counts as a spec or manifest
(its findings are reported) when its text names one (``kind: InferenceDeployment``, an engine
entry point); one that names neither is reported when it is not valid YAML (:data:`BROKEN`),
given or found in a directory alike, unless it is a template (``{{ }}``); else it is skipped too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

from . import pipeline
from .errors import Finding, Severity
from .spec.load import (
    InputUnit,
    LoadedSpec,
    Provenance,
    expand_inputs,
    loaded_from_document,
    parse_embedded,
    read_unit,
    with_overlays,
)

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
    """

    name: str
    kind: str
    checked: pipeline.Checked
    imported: Imported | None = None

    @property
    def findings(self) -> list[Finding]:
        if self.kind == SPEC:
            return self.checked.findings
        from .importer import IMPORTED_SUPPRESSED
        skip = IMPORTED_SUPPRESSED | (self.imported.suppress if self.imported else set())
        return [_relocated(f, self.imported) for f in self.checked.findings
                if f.code not in skip]


@dataclass
class Batch:
    """The result of many inputs.

    Attributes:
        results: each spec and each imported deployment, checked.
        findings: findings of files that belong to no result (unreadable manifests).
        files: every file read; skipped: files that are neither specs nor serving manifests
            (other objects in a directory or stream with serving manifests are read with them:
            a router, ConfigMaps, monitoring); plans: PlanRequest files (``gen plan``).
        missing: inputs that do not exist.
    """

    results: list[Checked] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for r in self.results:
            out += r.findings
        return sorted(out, key=Finding.sort_key)

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.all_findings())


def _file_docs(unit: InputUnit, name: str):
    return [unit.documents[i] for i in unit.files.get(name, [])]


def read_inputs(paths: list[Path], overlays: list[Path] = (), opts: Options | None = None,
                check: bool = True, target: str | None = None) -> Batch:
    """Read, classify, import and (with ``check``) check every input (never raises for bad
    input); ``target``: ``NAME[@VERSION]`` replacing each deployment's ``spec.target``
    (``--target``)."""
    batch = Batch()
    expanded, batch.missing = expand_inputs(list(paths))
    pool = InputUnit("manifests")
    for path, files in expanded:
        neither: list[str] = []
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
                batch.results.append(Checked(name, SPEC, pipeline.check_loaded(loaded, target)
                                             if check else pipeline.Checked(loaded)))
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
                neither.append(name)
        pool.documents += generated
        if not any(n in unit.files for n in pool_files(pool)):
            batch.skipped += neither
        for f in unit.findings:   # files that could not be read at all
            if f.location.file not in unit.files:
                batch.findings.append(f)
    if not pool.documents and not pool.findings:
        batch.skipped = sorted(set(batch.skipped))
        return batch
    from .importer import check_imported, import_unit, to_loaded
    imported = import_unit(pool, opts)
    batch.findings += imported.findings
    for dep in imported.deployments:
        name = f"{dep.data['metadata']['name']} ({', '.join(dep.files)})"
        batch.results.append(Checked(name, MANIFEST, check_imported(dep, list(overlays), target)
                                     if check else pipeline.Checked(to_loaded(dep, list(overlays))),
                                     dep))
    batch.skipped = sorted(set(batch.skipped))
    return batch


_ROLE = re.compile(r"role '([a-z0-9-]+)'")


def _relocated(f: Finding, imported: Imported | None) -> Finding:
    """A finding on a field no manifest sets (a default such as ``spec.serving``) is located at
    the deployment's first workload; when its message names a role, at that role's workload."""
    if imported is None:
        return f
    root = imported.provenance.locations.get(())
    m = _ROLE.search(f.message)
    if f.location != root or not m:
        return f
    for i, role in enumerate(imported.data["spec"]["roles"]):
        if role["name"] == m.group(1):
            loc = imported.provenance.locations.get(("spec", "roles", i), f.location)
            return Finding(f.code, f.severity, f.path, f.message, f.hint, loc)
    return f


def _kind_of(docs) -> str:
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


def pool_files(pool: InputUnit) -> set[str]:
    """The files whose serving manifests are in ``pool`` (``pool.files``)."""
    return set(pool.files)


def _one_document(name: str) -> Finding:
    from .errors import Location
    return Finding("LOAD004", Severity.ERROR, "$", "more than one YAML document in a spec file",
                   "put one InferenceDeployment per file", Location(name, 1, 1))


def written_errors(result: Checked, text: str, file: str, overlays: list[Path] = (),
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
    if batch.skipped:
        extra += (f"; {len(batch.skipped)} file{'s' * (len(batch.skipped) != 1)} skipped "
                  "(neither specs nor serving manifests)")
    if batch.plans:
        extra += f"; {len(batch.plans)} PlanRequest{'s' * (len(batch.plans) != 1)} (gen plan)"
    return f"checked {checked}{extra}: {summary(batch.all_findings())}"


__all__ = ["Batch", "Checked", "read_inputs", "summary_line"]

"""Pod-template metadata the importer carries into ``roles[].pod``: annotation values as one
line, and what a multi-pod role's leader template has that its worker template lacks (IMP027)."""

from __future__ import annotations

from typing import Any

from ..spec.provenance import json_path
from .launch import Issue
from .workloads import Pods, Workload


def one_line(value: str) -> str:
    """An annotation value as one line: JSON (Multus, GKE network interfaces) compacted, other
    text with its line breaks as spaces (YAML folds them so too)."""
    if "\n" not in value:
        return value
    import json
    try:
        return json.dumps(json.loads(value), separators=(",", ":"))
    except ValueError:
        return " ".join(value.split())


def shared_metadata(w: Workload, pods: Pods, labels: dict, ann: dict,
                     out: Any) -> tuple[dict, dict]:
    """The leader template's labels and annotations that its worker template has too.

    ``roles[].pod.labels``/``annotations`` go on every pod of the role, so a label only the
    leader has (``role: leader``, which GKE's vLLM multi-node sample's Service selects) would
    put the workers, which serve no API, behind that selector. IMP027 (a notice) names what is
    left out (appended to ``out.issues``, ``out`` being the importer's ``PodFields``). Returns
    (labels, annotations) unchanged for a workload of one template."""
    if w.worker is None or pods is w.worker:
        return labels, ann
    prov = w.doc.provenance
    kept: list[dict] = []
    for kind, mine, theirs in (("labels", labels, w.worker.labels),
                               ("annotations", ann, w.worker.annotations)):
        only = sorted(k for k, v in mine.items()
                      if kind == "annotations" and one_line(str(theirs.get(k, ""))) != v
                      or kind == "labels" and str(theirs.get(k, "")) != v)
        kept.append({k: v for k, v in mine.items() if k not in only})
        for k in only:
            path = (*pods.path[:-1], "metadata", kind, k)
            out.issues.append(Issue(
                "IMP027", f"{w.kind} {w.name}: {kind[:-1]} {k}={mine[k]!r} is on the leader "
                f"pod only; roles[].pod.{kind} go on every pod of the role, so moegen leaves "
                "it out (the workers serve no API)",
                prov.locate(path), f"an object of yours that selects the leader by {k} can "
                "select leaderworkerset.sigs.k8s.io/worker-index: \"0\" (the LWS controller "
                "labels every pod with its index; 0 is the leader)", notice=True,
                path=json_path(path)))
    return kept[0], kept[1]

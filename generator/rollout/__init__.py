"""Day 2: what a change does to a running deployment, before it is applied (``gen diff``,
``gen render --check``; docs/design.md §11).

* :mod:`.tree`: a rendered output as the cluster receives it (objects, the kustomize
  ConfigMap name hashes, each workload's pod template and rollout bounds);
* :mod:`.changes`: what changed per object, whether a workload's pods restart and why;
* :mod:`.timeline` and :mod:`.disaggregated`: how each controller rolls them over time;
* :mod:`.compat`: the KV handshake of a mixed prefill/decode pair, the caches a new pod lacks;
* :mod:`.compare`: the whole answer from two sides (:func:`side` reads one).

Templates are untouched: everything is computed from the two rendered trees and the two
deployment models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .compare import RolloutDiff, Side, compare

if TYPE_CHECKING:
    from ..errors import Finding
    from ..pipeline import Checked

__all__ = ["RolloutDiff", "Side", "compare", "side", "tree_files", "diff_report",
           "drift_report"]


def tree_files(outdir: Path) -> dict[str, str]:
    """The files of a rendered output directory: those its ownership marker lists (every file
    when there is none), as text (relative path -> text; unreadable files are left out)."""
    from ..emit import MARKER
    outdir = Path(outdir)
    marker = outdir / MARKER
    if marker.is_file():
        names = [n for n in marker.read_text(encoding="utf-8").splitlines()
                 if n and not n.startswith("#")]
    else:
        names = sorted(p.relative_to(outdir).as_posix() for p in outdir.rglob("*") if p.is_file())
    out = {}
    for name in names:
        try:
            out[name] = (outdir / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out


def side(path: Path, overlays: Sequence[Path] = (), target: str | None = None
         ) -> tuple[Side, list[Finding]]:
    """One side of a diff from ``path``: a spec (with ``overlays``) or a rendered output
    directory (imported back with ``gen import`` for its deployment model). Returns
    ``(Side, findings)``; the side's model is None when the spec is rejected or the directory
    cannot be imported (the findings say why)."""
    from .. import pipeline
    path = Path(path)
    if path.is_dir():
        from ..inputs import read_inputs
        files = tree_files(path)
        batch = read_inputs([path], list(overlays), None, True, target)
        deps = [r for r in batch.results if r.kind == "manifest" and r.checked.ok]
        model = deps[0].checked.model if len(deps) == 1 else None
        findings = [] if model is not None else batch.all_findings()
        return Side(f"{path} (rendered)", files, model), findings
    checked = pipeline.needs_gpu(pipeline.check(path, list(overlays), target), "gen diff")
    if not checked.ok:
        return Side(str(path), {}, None), checked.findings
    _, files = pipeline.render(checked)
    return Side(str(path), files, checked.model), []


def diff_report(old: Path, new: Path, overlays: Sequence[Path] = (),
                old_overlays: Sequence[Path] = (), fmt: str = "text", colour: bool = False
                ) -> tuple[str, str, list[Finding] | None]:
    """``gen diff OLD NEW``: ``(stdout, stderr, rejected)``; ``rejected`` is the findings of a
    side that was rejected (or could not be read back), else None.

    Raises:
        UsageError: a path does not exist.
    """
    from ..errors import Severity, UsageError
    from ..output.rollout_report import diff_output
    for p in (old, new, *overlays, *old_overlays):
        if not Path(p).exists():
            raise UsageError(f"{p}: no such file")
    a, found_a = side(Path(old), [] if Path(old).is_dir() else list(old_overlays))
    b, found_b = side(Path(new), [] if Path(new).is_dir() else list(overlays))
    notes = found_a + found_b
    errors = [f for f in notes if f.severity is Severity.ERROR]
    if errors or not a.files or not b.files:
        return "", "", errors or notes
    out, err = diff_output(compare(a, b), notes, fmt, colour)
    return out, err, None


def drift_report(outdir: Path, changes: list[str], spec: Path, files: dict[str, str],
                 checked: Checked, fmt: str, colour: bool) -> tuple[str, str]:
    """``gen render --check`` found ``changes``: ``(stdout, stderr)`` in ``fmt`` (json: the
    drift and gen diff's answer; github: annotations; text: the file diff, then gen diff's
    answer without its object list), the answer computed when OUTDIR reads back."""
    from ..emit import MARKER
    from ..output.rollout_report import drift_output
    from ..spec.load import display_name
    rollout = None
    if (Path(outdir) / MARKER).is_file():
        old, _ = side(Path(outdir))
        if old.files:
            rollout = compare(old, Side(display_name(spec), files, checked.model))
    return drift_output(Path(outdir), changes, rollout, fmt, colour)

"""Write the output directory: the only module of moegen that writes files.

Guarantees (docs/spec.md §3):

* Ownership: moegen writes only into a directory it owns. An owned directory holds the marker
  ``.moegen-files`` listing every file moegen wrote there. A non-empty directory without the marker,
  or with files the marker does not list, is refused (:class:`~generator.errors.UsageError`):
  moegen never deletes files it did not write.
* Atomicity: the new tree is written into a temporary sibling directory and swapped in by two
  renames, so readers see the old tree or the new one, never a half-written one; files of an
  earlier render that the new one does not produce disappear with the old tree.
* No-op re-render: when the directory already holds exactly ``files`` (same names, same bytes,
  same marker), nothing is written.
* ``--check``: :func:`diff_tree` compares the directory with what would be written.
"""

from __future__ import annotations

import difflib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError

MARKER = ".moegen-files"
_MARKER_HEADER = "# Files written by moegen (gen render). Do not edit; re-render instead.\n"


def marker_text(files: dict[str, str]) -> str:
    """Content of the ownership marker for ``files``."""
    return _MARKER_HEADER + "".join(f"{p}\n" for p in sorted(files))


def _existing(outdir: Path) -> set[str]:
    return {p.relative_to(outdir).as_posix() for p in outdir.rglob("*")
            if p.is_file() or p.is_symlink()}


def _nonempty(path: Path) -> bool:
    with os.scandir(path) as entries:
        return any(True for _ in entries)


def _owned(outdir: Path) -> set[str]:
    """Files the marker lists (empty set if no marker)."""
    marker = outdir / MARKER
    if not marker.is_file():
        return set()
    lines = marker.read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def _check_ownership(outdir: Path) -> set[str]:
    """Return the files of the previous render; raise UsageError if outdir is not ours.

    The marker is looked up before anything is walked, so a foreign tree (``-o /usr``) is
    refused at once.
    """
    if outdir.is_symlink():
        raise UsageError(f"{outdir} is a symbolic link; give the directory it points to")
    if not outdir.exists():
        return set()
    if not outdir.is_dir():
        raise UsageError(f"{outdir} exists and is not a directory")
    try:
        has_entries = _nonempty(outdir)
        has_marker = (outdir / MARKER).is_file()
    except OSError as exc:
        raise UsageError(f"cannot read {outdir}: {exc.strerror}") from None
    if not has_entries:
        return set()
    if not has_marker:
        raise UsageError(
            f"{outdir} is not empty and was not written by moegen (no {MARKER}); "
            "choose an empty or new directory with -o")
    try:
        existing = _existing(outdir)
    except OSError as exc:
        raise UsageError(f"cannot read {outdir}: {exc.strerror}") from None
    foreign = sorted(existing - _owned(outdir) - {MARKER})
    if foreign:
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise UsageError(
            f"{outdir} holds {len(foreign)} file(s) moegen did not write: {shown}; "
            "move them out (customise with a kustomize overlay that uses this directory as a base)")
    return existing - {MARKER}


@dataclass(frozen=True)
class WriteResult:
    """What a render changed: files written, of which new, changed, and stale files removed."""

    written: int
    added: list[str]
    changed: list[str]
    removed: list[str]


def write_tree(outdir: Path, files: dict[str, str]) -> WriteResult:
    """Replace ``outdir`` with exactly ``files`` (+ the marker), atomically.

    Raises:
        UsageError: ``outdir`` is not owned by moegen, or cannot be written.
    """
    outdir = Path(outdir)
    before = _check_ownership(outdir)
    try:
        old_content = {p: (outdir / p).read_bytes() for p in before if p in files}
        unchanged = before == set(files) and all(
            old_content[p] == text.encode("utf-8") for p, text in files.items()) \
            and (outdir / MARKER).read_text(encoding="utf-8") == marker_text(files)
    except OSError as exc:
        raise UsageError(f"cannot read {outdir}: {exc.strerror}") from None
    if unchanged:
        return WriteResult(len(files), [], [], [])
    parent = outdir.parent if str(outdir.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {parent}: {exc.strerror}") from None
    tmp = parent / f".{outdir.name}.moegen-new-{os.getpid()}"
    old = parent / f".{outdir.name}.moegen-old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for rel, text in {**files, MARKER: marker_text(files)}.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
        if outdir.exists():
            os.rename(outdir, old)
            os.rename(tmp, outdir)
            shutil.rmtree(old)
        else:
            os.rename(tmp, outdir)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not outdir.exists():
            os.rename(old, outdir)
        raise UsageError(f"cannot write {outdir}: {exc.strerror}") from None
    added = sorted(set(files) - before)
    changed = sorted(p for p, b in old_content.items() if b != files[p].encode("utf-8"))
    removed = sorted(before - set(files))
    return WriteResult(len(files), added, changed, removed)


def diff_tree(outdir: Path, files: dict[str, str]) -> list[str]:
    """Differences between ``outdir`` and ``files`` as lines (``A``/``M``/``D``/``?`` + path, diffs).

    ``?`` marks a file moegen did not write (a render would refuse the directory). An empty list
    means the directory is exactly what a render would write.

    Raises:
        UsageError: ``outdir`` exists but is not a readable directory.
    """
    outdir = Path(outdir)
    expected = {**files, MARKER: marker_text(files)}
    if outdir.exists() and (not outdir.is_dir() or outdir.is_symlink()):
        raise UsageError(f"{outdir} is not a directory")
    if outdir.is_dir() and not (outdir / MARKER).is_file() and _nonempty(outdir):
        raise UsageError(f"{outdir} was not written by moegen (no {MARKER})")
    try:
        existing = _existing(outdir) if outdir.is_dir() else set()
        owned = _owned(outdir) | {MARKER}
    except OSError as exc:
        raise UsageError(f"cannot read {outdir}: {exc.strerror}") from None
    out: list[str] = []
    for rel in sorted(set(expected) | existing):
        if rel not in existing:
            out.append(f"A {rel} (missing; a render would write it)")
        elif rel not in expected:
            if rel in owned:
                out.append(f"D {rel} (a render would remove it)")
            else:
                out.append(f"? {rel} (not written by moegen; a render would refuse the directory)")
        else:
            have = (outdir / rel).read_bytes()
            want = expected[rel].encode("utf-8")
            if have != want:
                out.append(f"M {rel}")
                diff = difflib.unified_diff(
                    have.decode("utf-8", "replace").splitlines(), expected[rel].splitlines(),
                    f"{rel} (on disk)", f"{rel} (rendered)", lineterm="", n=1)
                out.extend("    " + line for line in list(diff)[:40])
    return out


def write_file(path: Path, text: str, marker: str) -> None:
    """Write one file atomically (temp file + rename), e.g. ``gen plan --emit spec.yaml``.

    An existing ``path`` is replaced only when it is a regular file (not a symbolic link, a
    device or a FIFO) that moegen wrote: its first 64 KiB contain ``marker`` (the header or
    footer moegen puts in such files). Anything else is refused, so a typo never replaces a
    user's spec or a device node.

    Raises:
        UsageError: the path exists and is not moegen's file, or cannot be written.
    """
    path = Path(path)
    if path.is_symlink():
        raise UsageError(f"{path} is a symbolic link; give the file it points to")
    if path.exists():
        if not path.is_file():
            raise UsageError(f"{path} exists and is not a regular file")
        try:
            with path.open("rb") as f:
                head = f.read(65536).decode("utf-8", "replace")
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None
        if marker not in head:
            raise UsageError(f"{path} exists and was not written by moegen; remove it or "
                             "choose another path")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"cannot write {path}: {parent} is not a directory")
    tmp = path.with_name(f".{path.name}.moegen-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None

"""Waivers written in the inputs, read from the text the reader holds (``generator/spec/load.py``
calls :func:`attach`; :mod:`generator.waivers` applies them to findings; docs/design.md §10):

* a comment ``# moegen:skip=CODE[,CODE...] reason`` in a spec, an overlay, a manifest (inside a
  launch script too: it is a shell comment there) or an env file a kustomization generates a
  ConfigMap from. It covers findings on its own line and on the line below; a comment alone on
  its line followed by more such comments covers the lines down to the first line after them,
  so waivers stack;
* on a manifest object, the annotation ``moegen.dev/skip: "CODE: reason; CODE,CODE: reason"``: it
  covers findings located anywhere in that object's document.

Comments are found by a line scan (the text ``# moegen:skip=`` after the start of a line or a
blank), so the text inside a quoted YAML string that spells one is read as one too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import Location

#: The comment form; ``reason`` is the rest of the line (a leading ``-``, ``:`` or ``--`` dropped).
SKIP_COMMENT = re.compile(r"(?:^|\s)#\s*moegen:skip=(?P<codes>[^\s]*)(?P<reason>.*)$")
#: The annotation form's key.
ANNOTATION = "moegen.dev/skip"


@dataclass(frozen=True)
class Skip:
    """One waiver.

    Attributes:
        codes: the rule codes it names (as written; :mod:`generator.waivers` reports one that is
            no rule code).
        reason: why ("" when none was written: the skip then suppresses nothing).
        at: where it is written (the comment's ``#``; the annotation's key).
        file: the file whose findings it covers; lines: the first and last line covered (1-based,
            inclusive).
        form: ``comment`` or ``annotation``.
    """

    codes: tuple[str, ...]
    reason: str
    at: Location
    file: str
    lines: tuple[int, int]
    form: str = "comment"

    def covers(self, loc: Location) -> bool:
        """A finding at ``loc`` is in this skip's file and lines."""
        return loc.file == self.file and self.lines[0] <= loc.line <= self.lines[1]


def _is_skip_line(line: str) -> bool:
    return line.lstrip().startswith("#") and SKIP_COMMENT.search(line) is not None


def comment_skips(text: str, file: str) -> list[Skip]:
    """Every ``# moegen:skip=`` comment of ``text`` (the file ``file``), in line order."""
    if "moegen:skip" not in text:
        return []
    lines = text.split("\n")
    out: list[Skip] = []
    for i, line in enumerate(lines):
        m = SKIP_COMMENT.search(line)
        if m is None:
            continue
        last = i + 1   # 0-based index of the line below; a stack of skip comments: below it
        while _is_skip_line(line) and last < len(lines) and _is_skip_line(lines[last]):
            last += 1
        codes = tuple(c for c in m.group("codes").split(",") if c)
        reason = m.group("reason").strip().lstrip("-:—").strip()
        col = line.index("#", m.start()) + 1
        out.append(Skip(codes, reason, Location(file, i + 1, col), file, (i + 1, last + 1)))
    return out


def annotation_skips(data: Any, at: Location, file: str, lines: tuple[int, int]) -> list[Skip]:
    """The ``moegen.dev/skip`` annotation of one object (``data``, located ``at``; its document
    spans ``lines`` of ``file``): ``CODE[,CODE]: reason`` entries separated by ``;``."""
    meta = data.get("metadata") if isinstance(data, dict) else None
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(notes, dict) or ANNOTATION not in notes:
        return []
    out: list[Skip] = []
    for entry in str(notes[ANNOTATION] or "").split(";"):
        if not entry.strip():
            continue
        codes, _, reason = entry.partition(":")
        out.append(Skip(tuple(c.strip() for c in codes.split(",") if c.strip()), reason.strip(),
                        at, file, lines, "annotation"))
    return out


def attach(docs: list, text: str, file: str, starts: list[int], multi: bool) -> None:
    """Give each parsed document (``(data, provenance)`` pairs of ``text``, whose documents start
    at 0-based ``starts``) the skips written in it (``provenance.skips``): the comments in its
    lines (those before the first document go to the first) and, in a manifest stream
    (``multi``), its object's annotation."""
    if not docs:
        return
    total = text.count("\n") + (not text.endswith("\n"))   # lines, the last one ended or not
    bounds = [1] + [s + 1 for s in starts[1:len(docs)]] + [total + 1]
    comments = comment_skips(text, file)
    for i, (data, prov) in enumerate(docs):
        first, end = bounds[i], bounds[i + 1]
        prov.skips = [s for s in comments if first <= s.at.line < end]
        if multi:
            key = ("metadata", "annotations", ANNOTATION)
            prov.skips += annotation_skips(data, prov.locate(key), file, (first, end - 1))

"""Waivers applied to findings, as linters do (docs/design.md §10).

The skips written in the inputs (:mod:`generator.spec.skips`: ``# moegen:skip=CODE reason``
comments, the ``moegen.dev/skip`` annotation) suppress the findings of the codes they name that
are located in the lines they cover. A suppressed finding is not reported (and no longer
rejects the input) but is kept with its reason: counted in the text summary, listed in JSON
(``suppressed``), carried as a SARIF result with ``suppressions`` (SARIF 2.1.0 §3.27.23, kind
``inSource``). ``--no-skips`` reads none of them.

Skips are findings themselves when they cannot be trusted:

* SKP001 (warning): a skip without a reason suppresses nothing;
* SKP002 (warning): a skip of a code that suppressed nothing, like ruff's unused-noqa (RUF100):
  a stale waiver would hide the next finding of that code on its lines. Reported only when every
  check ran on the input (it has no error left: an error may keep the checks that depend on it
  from running), except for a code that is no moegen rule, reported always.

Errors raised outside the rule functions cannot be waived (:func:`waivable`): the reader's and
the schema's (LOAD, SCH), an engine release or model moegen does not know (VER001, MOD002),
what the importer could not read (IMP001), a target that cannot express the deployment (TGT):
with them moegen has no deployment to check or render. A skip that names one is SKP002 on the
skip, and the finding stays.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .errors import Finding, Severity
from .spec.skips import ANNOTATION, Skip

#: Codes a skip cannot suppress (its own).
OWN = frozenset({"SKP001", "SKP002"})


@dataclass(frozen=True)
class Suppressed:
    """A finding a skip suppressed, and the skip (its reason, where it is written)."""

    finding: Finding
    skip: Skip

    def to_json(self) -> dict:
        """The finding's JSON form with ``reason`` and ``skip`` (file, line, column, form)."""
        at = self.skip.at
        return {**self.finding.to_json(), "reason": self.skip.reason,
                "skip": {"file": at.file, "line": at.line, "column": at.column,
                         "form": self.skip.form}}


@functools.cache
def _codes() -> tuple[frozenset[str], frozenset[str]]:
    """(every code of the catalogue, the codes of rule functions)."""
    from .checks import RULES
    return (frozenset(r.code for r in RULES),
            frozenset(r.code for r in RULES if r.check is not None))


def _known(code: str) -> bool:
    return code in _codes()[0]


def waivable(f: Finding) -> bool:
    """Whether a skip may suppress ``f``: a warning or notice, or an error of a rule function
    (generator/checks), not of the reader, schema, importer or target."""
    return f.code not in OWN and (f.severity is not Severity.ERROR or f.code in _codes()[1])


def _path(skip: Skip) -> str:
    return "$" if skip.form == "comment" else f"$.metadata.annotations['{ANNOTATION}']"


def unreasoned(skip: Skip) -> Finding:
    """SKP001 for ``skip``."""
    spelled = ("# moegen:skip=" if skip.form == "comment" else f"{ANNOTATION}: ") \
        + ",".join(skip.codes)
    return Finding("SKP001", Severity.WARNING, _path(skip), f"{spelled} gives no reason: it "
                   "suppresses nothing", "write why after the codes (`# moegen:skip=CODE "
                   "reason`, or `CODE: reason` in the annotation)", skip.at)


def unused(skip: Skip, code: str, refused: bool = False) -> Finding:
    """SKP002 for ``code`` of ``skip`` (``refused``: it names an error :func:`waivable`
    refuses)."""
    if not _known(code):
        return Finding("SKP002", Severity.WARNING, _path(skip), f"skip of {code}: {code} is not "
                       "a moegen rule code", "gen rules lists the codes; fix the spelling",
                       skip.at)
    if refused:
        return Finding("SKP002", Severity.WARNING, _path(skip), f"skip of {code}: the {code} "
                       "error cannot be waived (moegen has no deployment to check or render "
                       "while it stands)", f"fix what {code} reports", skip.at)
    first, last = skip.lines
    where = (f"on lines {first}-{last}" if skip.form == "comment" else
             f"in its object (lines {first}-{last})")
    return Finding("SKP002", Severity.WARNING, _path(skip), f"skip of {code} suppresses "
                   f"nothing: no {code} finding {where} of {skip.file}",
                   "remove the stale skip (or move it to the line of the finding)", skip.at)


@dataclass
class Waiver:
    """The skips of some inputs, applied to their findings (:meth:`apply`, any number of
    times), then what the skips themselves deserve (:meth:`leftovers`)."""

    skips: list[Skip]
    used: set = field(default_factory=set)
    refused: set = field(default_factory=set)
    suppressed: list[Suppressed] = field(default_factory=list)

    def _match(self, f: Finding) -> Skip | None:
        return next((s for s in self.skips if s.reason and f.code in s.codes
                     and s.covers(f.location)), None)

    def covers(self, f: Finding) -> Skip | None:
        """The reasoned skip that suppresses ``f``, or None."""
        return self._match(f) if waivable(f) else None

    def apply(self, findings: list[Finding]) -> list[Finding]:
        """``findings`` without those a reasoned skip covers (those go to ``suppressed``)."""
        kept = []
        for f in findings:
            s = self.covers(f)
            if s is None:
                kept.append(f)
                refused = self._match(f) if f.code not in OWN else None
                if refused is not None:
                    self.refused.add((refused, f.code))
            else:
                self.used.add((s, f.code))
                self.suppressed.append(Suppressed(f, s))
        return kept

    def leftovers(self, complete: bool) -> list[Finding]:
        """SKP001 for each skip without a reason; SKP002 for each code of a reasoned skip that
        suppressed nothing (``complete``: every check ran; else only codes that are no rule)."""
        out: list[Finding] = []
        for s in dict.fromkeys(self.skips):
            if not s.reason:
                out.append(unreasoned(s))
                continue
            out += [unused(s, c, (s, c) in self.refused) for c in s.codes
                    if (s, c) not in self.used and (complete or not _known(c)
                                                    or (s, c) in self.refused)]
        return out


def waive(findings: list[Finding], skips: list[Skip],
          complete: bool) -> tuple[list[Finding], list[Suppressed]]:
    """``(findings kept + what the skips deserve, suppressed)``: :class:`Waiver` in one call."""
    w = Waiver(list(skips))
    kept = w.apply(findings)
    return kept + w.leftovers(complete), w.suppressed


def no_error(findings: list[Finding]) -> bool:
    return not any(f.severity is Severity.ERROR for f in findings)


__all__ = ["Suppressed", "Waiver", "waive", "unused", "unreasoned"]

"""Engine version ranges and the "greatest known version not above" dialect rule (docs/spec.md §2).

A requested version inside a supported range uses the dialect of the greatest *known* release
not above it (vLLM 0.33.4 -> 0.33.0). A version outside every range is an error naming the ranges;
moegen never guesses the flags of a release it has not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")
#: PEP 440 pre-release and development suffixes: 0.11.1rc1 comes before 0.11.1.
_PRE = re.compile(r"^[.-]?(a|b|c|rc|alpha|beta|pre|preview|dev)\d*", re.IGNORECASE)

Version = tuple[int, int, int]


def parse_version(text: str) -> Version:
    """``"0.33.0"`` -> ``(0, 33, 0)``; a suffix (``rc1``, ``.post1``, ``+cu129``) is dropped
    (:func:`select_known` treats pre-releases as coming before the release).

    Raises:
        ValueError: ``text`` does not start with MAJOR.MINOR.PATCH.
    """
    m = _VERSION.match(text)
    if not m:
        raise ValueError(f"not a version: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def is_prerelease(text: str) -> bool:
    """True for ``0.11.1rc1``, ``0.12.0.dev3``, ``0.13.0b2`` (before their final release)."""
    m = _VERSION.match(text)
    return bool(m and _PRE.match(text[m.end():]))


def fmt(v: Version) -> str:
    """``(0, 33, 0)`` -> ``"0.33.0"``."""
    return ".".join(map(str, v))


@dataclass(frozen=True)
class SupportedRange:
    """``low <= version < high`` (``high`` exclusive), e.g. vLLM 0.11.0 .. <0.34.0."""

    low: Version
    high: Version

    def __contains__(self, v: Version) -> bool:
        return self.low <= v < self.high

    def __str__(self) -> str:
        return f">={fmt(self.low)},<{fmt(self.high)}"


class UnsupportedVersion(ValueError):
    """The requested engine version is outside every supported range (``hint``: what to pin)."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def select_known(requested: str, known: list[str], ranges: list[SupportedRange]) -> str:
    """Return the known release whose dialect applies to ``requested``.

    Args:
        requested: version string from the spec.
        known: releases whose dialect moegen has data for.
        ranges: supported ranges of the engine.

    Raises:
        UnsupportedVersion: outside every range, or no known release at or below it.
    """
    v = parse_version(requested)
    if not any(v in r for r in ranges):
        raise UnsupportedVersion(
            f"version {requested} is not supported (supported: {', '.join(map(str, ranges))})")
    # A pre-release of X.Y.Z precedes X.Y.Z: it gets the dialect of the release before it.
    if is_prerelease(requested):
        below = [k for k in known if parse_version(k) < v]
    else:
        below = [k for k in known if parse_version(k) <= v]
    if not below:
        first = min(known, key=parse_version)
        raise UnsupportedVersion(f"version {requested} precedes the first supported release {first}")
    return max(below, key=parse_version)


def default_image(engine: str, version: str) -> str:
    """The engine release's official image (Docker Hub vllm/vllm-openai, lmsysorg/sglang; both
    tag releases with a ``v``)."""
    return (f"vllm/vllm-openai:v{version}" if engine == "vllm"
            else f"lmsysorg/sglang:v{version}")

"""Data files shipped inside the package (model configs, engine release data). Read relative to
this module: the wheel installs them as plain files, and importlib.resources costs ~6 ms of
start-up that the policy check does not need to pay."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def package_text(*parts: str) -> str:
    """The text of ``generator/<parts...>`` (UTF-8)."""
    return PACKAGE.joinpath(*parts).read_text(encoding="utf-8")

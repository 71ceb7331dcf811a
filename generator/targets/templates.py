"""The one Jinja environment of moegen and the filters templates may use.

Templates (``templates/`` in the repository, shipped as ``generator/templates`` in the wheel)
only substitute prepared values, loop over prepared lists and branch on prepared booleans:
``StrictUndefined`` makes a missing value an error, and the filters are limited to
:func:`toyaml` (a value as YAML, block style, sorted keys) and :func:`yq` (one scalar as a YAML
flow scalar, quoted when YAML would otherwise change its type).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2
import yaml

#: libyaml's emitter when PyYAML has it (same output as the pure-Python emitter, checked byte
#: for byte by the golden tests; ~10x faster on large trees), else the pure-Python one.
_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):
    """SafeDumper that never emits anchors/aliases (sequences stay kubectl-style indentless)."""

    def ignore_aliases(self, data):  # noqa: D102 - PyYAML hook
        return True


def _str_presenter(dumper: yaml.SafeDumper, data: str):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def _scalar(value) -> str | None:
    """One mapping key or value as PyYAML writes it in a block mapping, or None when the fast
    path does not apply (empty strings, strings of 128+ characters or with characters outside
    printable ASCII (line breaks, escapes), other types).

    A single-line non-empty scalar gets the same style as a block mapping value and as a simple
    key (PyYAML's ``Emitter.choose_scalar_style`` only differs for empty or multi-line scalars in
    simple-key context), so it is formatted alone and cached.
    """
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is not str or not value or len(value) >= 128 \
            or not (value.isascii() and value.isprintable()):
        return None
    text = _SCALARS.get(value)
    if text is None:
        text = _SCALARS[value] = yq(value)
    return text


_SCALARS: dict[str, str] = {}


def _flat_mapping(value: dict) -> list[str] | None:
    """The lines of a flat mapping of scalars (labels, selectors), or None to use PyYAML."""
    if not all(type(key) is str for key in value):
        return None
    lines = []
    for key in sorted(value):
        k, v = _scalar(key), _scalar(value[key])
        if k is None or v is None:
            return None
        lines.append(f"{k}: {v}")
    return lines


def toyaml(value, indent: int = 0) -> str:
    """``value`` as block YAML (sorted keys), every line after the first indented by ``indent``.

    Flat mappings of scalars (the per-instance labels and selectors, thousands per render) take a
    fast path with the same bytes (checked against PyYAML by a property test); anything else is
    PyYAML's.
    """
    pad = " " * indent
    if type(value) is dict and value:
        lines = _flat_mapping(value)
        if lines is not None:
            return ("\n" + pad).join(lines)
    text = yaml.dump(value, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                     width=10_000, allow_unicode=False).rstrip("\n")
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    return ("\n" + pad).join(text.split("\n"))


def yq(value) -> str:
    """One scalar as a YAML flow scalar ("8000" stays a string, 8000 an int)."""
    text = yaml.dump(value, Dumper=_Dumper, default_flow_style=True, width=10_000,
                     allow_unicode=False).rstrip("\n")
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    return text


def template_dir() -> Path:
    """``generator/templates`` in an installed wheel; the repository's ``templates/`` otherwise."""
    pkg = Path(__file__).resolve().parent.parent
    for candidate in (pkg / "templates", pkg.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("moegen templates not found (broken installation)")


@cache
def environment() -> jinja2.Environment:
    """The Jinja environment (strict, deterministic whitespace, whitelisted filters)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        # HTML pages escape every substituted value; YAML/env/shell templates do their own quoting.
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
    )
    env.filters = {"toyaml": toyaml, "yq": yq, "indent": env.filters["indent"]}
    return env


def render(name: str, **context) -> str:
    """Render template ``name`` with ``context``."""
    return environment().get_template(name).render(**context)


def macro(template: str, name: str):
    """Macro ``name`` of template ``template`` as a callable (returns the rendered text)."""
    return getattr(environment().get_template(template).module, name)

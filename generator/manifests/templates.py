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


def toyaml(value, indent: int = 0) -> str:
    """``value`` as block YAML (sorted keys), every line after the first indented by ``indent``."""
    text = yaml.dump(value, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                     width=10_000, allow_unicode=False).rstrip("\n")
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    pad = " " * indent
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

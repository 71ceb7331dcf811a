"""``gen diff``: what applying a new spec or rendered tree over a running one does (the rollout
model in generator/rollout; docs/design.md §11)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .cli_common import _OVERLAYS, _reject


@click.command()
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@_OVERLAYS
@click.option("--old-overlay", "old_overlays", multiple=True, type=click.Path(path_type=Path),
              help="Overlay merged over OLD when it is a spec (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def diff(old: Path, new: Path, overlays: tuple[Path, ...], old_overlays: tuple[Path, ...],
         fmt: str) -> None:
    """What applying NEW over a running OLD (specs or rendered output directories; -f: NEW) does:
    which pods restart, why, in which order, for how long, and what happens to requests."""
    from .rollout import diff_report
    out, err, rejected = diff_report(old, new, overlays, old_overlays, fmt, sys.stderr.isatty())
    if rejected is not None:
        _reject(rejected)
    click.echo(out, nl=False)
    click.echo(err, err=True, nl=False)

"""What the ``gen`` commands share: the SPEC argument, overlays, ``--calibration``, reading and
checking a spec, printing a rejection, refusing an --engine-version moegen has no facts for
the importer's options (generator/cli.py, generator/cli_calibrate.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import pipeline
from .errors import SpecRejected, UsageError
from .output import findings as report
from .spec.load import display_name

_SPEC = click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
#: SPEC may be ``-``: the document is read from standard input (findings name it ``<stdin>``).
_OVERLAYS = click.option("-f", "--overlay", "overlays", multiple=True,
                         type=click.Path(dir_okay=False, path_type=Path),
                         help="Overlay merged over SPEC (repeatable; last wins).")
#: ``--calibration PROFILE``: a profile of gen calibrate, replacing spec.calibration.
_CALIBRATION = click.option("--calibration", "calibration", default=None,
                            type=click.Path(dir_okay=False, path_type=Path),
                            help="A calibration profile written by gen calibrate (replaces "
                            "spec.calibration): predictions take its factors where it was "
                            "measured on this configuration.")


def _exist(*paths: Path) -> None:
    """Refuse a command whose input files are missing (a usage error, exit 2)."""
    for path in paths:
        if path is not None and str(path) != "-" and not path.exists():
            raise UsageError(f"{path}: no such file")


def _checked(spec: Path, overlays: tuple[Path, ...], target: str | None = None,
             calibration: Path | None = None, skips: bool = True) -> pipeline.Checked:
    """Read and check SPEC with its overlays (and ``calibration``; ``skips``: apply the
    waivers written in the files); a PlanRequest is a usage error."""
    _exist(spec, *overlays, calibration)
    checked = pipeline.check(spec, list(overlays), target, calibration=calibration, skips=skips)
    if checked.spec is None and checked.loaded.data.get("kind") == "PlanRequest":
        raise UsageError(f"{display_name(spec)} is a PlanRequest: use gen plan (or gen report) on it")
    # Every command but gen validate renders, sizes or times the deployment on its GPU.
    ctx = click.get_current_context(silent=True)
    return pipeline.needs_gpu(checked, f"gen {ctx.info_name}" if ctx is not None
                              and ctx.info_name else "this command")


def _reject(findings: list) -> None:
    """Print findings for people (stderr) and exit 1."""
    click.echo(report.text(findings, colour=sys.stderr.isatty()), err=True)
    raise SpecRejected(findings)


def known_release(release: str) -> None:
    """An --engine-version outside every engine's supported range is refused (a usage error,
    exit 2): moegen never judges a release it has no facts for (facts/versions.py; docs/spec.md
    §2). One inside a range is judged at the greatest known release not above it; an engine
    whose range it is not in is an IMP008 error on that engine's manifest."""
    from .engines.registry import ENGINES
    from .facts.versions import parse_version
    v = parse_version(release)
    ranges = {name: getattr(ENGINES[name], "SUPPORTED", []) for name in sorted(ENGINES)}
    if not any(v in r for rs in ranges.values() for r in rs):
        known = "; ".join(f"{name} {', '.join(map(str, rs))}" for name, rs in ranges.items())
        raise UsageError(f"--engine-version {release}: a release moegen has no facts for "
                         f"(it reads {known})")


def import_options(gpu: str | None, engine_version: str | None, model_config: Path | None,
                   model: str | None = None):
    """The importer's :class:`~generator.importer.Options` from ``--gpu``, ``--engine-version``,
    ``--model-config`` and ``--model``; a value moegen has no facts for is a usage error. None
    when none is given (the importer's defaults: it is imported only for manifests)."""
    if gpu is None and engine_version is None and model_config is None and model is None:
        return None
    from .catalog import ARCHITECTURES, GPUS
    from .importer import Options
    if gpu is not None and gpu not in GPUS:
        raise UsageError(f"--gpu {gpu}: not a catalog GPU ({', '.join(sorted(GPUS))})")
    if model is not None and model not in ARCHITECTURES:
        raise UsageError(f"--model {model}: not a catalog model "
                         f"({', '.join(sorted(ARCHITECTURES))}); or give --model-config")
    if model is not None and model_config is not None:
        raise UsageError("--model and --model-config: give one")
    if engine_version is not None:
        from .facts.versions import parse_version
        try:
            parse_version(engine_version)
        except ValueError:
            raise UsageError(f"--engine-version {engine_version}: not a release "
                             "(MAJOR.MINOR.PATCH, e.g. 0.33.0)") from None
        known_release(engine_version)
    return Options(gpu, engine_version, str(model_config.resolve()) if model_config else None,
                   model)

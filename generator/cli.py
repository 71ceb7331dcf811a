"""The ``gen`` command: parses arguments, runs the pipeline, maps results to exit codes.

Exit codes (docs/spec.md §3): 0 ok; 1 spec rejected; 2 usage error; 3 ``render --check`` drift;
4 internal error (a bug: set MOEGEN_DEBUG=1 for the traceback). Each command imports what only it
needs, so the policy check (``gen validate``) starts fast.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

import click

from . import pipeline
from .errors import DriftDetected, GenError, Severity, SpecRejected, UsageError
from .output import findings as report

_SPEC = click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
_OVERLAYS = click.option("-f", "--overlay", "overlays", multiple=True,
                         type=click.Path(dir_okay=False, path_type=Path),
                         help="Overlay merged over SPEC (repeatable; last wins).")


def _exist(*paths: Path) -> None:
    """Refuse a command whose input files are missing (a usage error, exit 2)."""
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file")


def _checked(spec: Path, overlays: tuple[Path, ...]) -> pipeline.Checked:
    _exist(spec, *overlays)
    return pipeline.check(spec, list(overlays))


def _reject(findings: list) -> None:
    """Print findings for people (stderr) and exit 1."""
    click.echo(report.text(findings, colour=sys.stderr.isatty()), err=True)
    raise SpecRejected(findings)


def _emit_findings(checked: pipeline.Checked, fmt: str, quiet_ok_json: bool = False) -> None:
    findings = checked.findings
    if fmt == "json" and quiet_ok_json and checked.ok:
        return
    if fmt == "json":
        click.echo(report.as_json(findings, checked.ok))
    elif fmt == "github":
        if findings:
            click.echo(report.github(findings))
    elif fmt == "sarif":
        from .checks import RULES
        click.echo(report.sarif(findings, RULES))
    elif findings:
        click.echo(report.text(findings, colour=sys.stderr.isatty()), err=True)


def _plan_request(path: Path):
    """Load and check a PlanRequest file; exit 1 with its findings, 2 if it is no PlanRequest."""
    from .capacity.request import PlanRequest, request_findings
    from .spec.load import parse_yaml_file
    from .spec.validate import pydantic_findings
    _exist(path)
    data, prov, findings = parse_yaml_file(path)
    if not findings and data.get("kind") != "PlanRequest":
        raise UsageError(f"{path} is a {data.get('kind', 'document without kind')}, not a "
                         "PlanRequest (gen validate/render/size take InferenceDeployments)")
    req = None
    if not findings:
        req, findings = pydantic_findings(PlanRequest, data, prov)
    if not findings:
        findings = request_findings(req, prov)
    if findings:
        _reject(findings)
    return req


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="moegen", prog_name="gen")
def main() -> None:
    """moegen: Kubernetes manifests for DeepSeek-class MoE serving, checked before they exist."""


@main.command()
@_SPEC
@_OVERLAYS
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (default: out/<metadata.name>).")
@click.option("--check", is_flag=True, help="Compare OUTDIR with a fresh render; exit 3 on drift.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text",
              help="How findings are printed.")
def render(spec: Path, overlays: tuple[Path, ...], outdir: Path | None, check: bool,
           fmt: str) -> None:
    """Validate SPEC, then write its manifests and env files as a kustomize base."""
    from .emit import diff_tree, write_tree
    checked = _checked(spec, overlays)
    _emit_findings(checked, fmt, quiet_ok_json=check)
    if not checked.ok:
        raise SpecRejected(checked.findings)
    plan, files = pipeline.render(checked)
    outdir = outdir or Path("out") / plan.name
    if check:
        changes = diff_tree(outdir, files)
        if changes:
            heads = [c for c in changes if not c.startswith("    ")]
            if fmt == "json":
                click.echo(json.dumps({"ok": False, "outdir": str(outdir), "drift": heads},
                                      indent=2))
            elif fmt == "github":
                click.echo("\n".join(
                    f"::error file={outdir / c[2:].split(' ')[0]},title=drift::{c}" for c in heads))
            click.echo("\n".join(changes), err=True)
            raise DriftDetected(changes)
        click.echo(f"{outdir}: up to date ({len(files)} files)", err=True)
        return
    result = write_tree(outdir, files)
    click.echo(f"{outdir}: {result.written} files ({len(result.added)} added, "
               f"{len(result.changed)} changed, {len(result.removed)} removed)", err=True)


@main.command()
@_SPEC
@_OVERLAYS
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif"]),
              default="text", help="text for people (stderr); json for machines, github "
              "(workflow annotations) and sarif (code scanning) on stdout.")
@click.option("--strict", is_flag=True, help="Warnings also reject the spec (exit 1).")
def validate(spec: Path, overlays: tuple[Path, ...], fmt: str, strict: bool) -> None:
    """Run every check on SPEC and write nothing (the CI policy check)."""
    checked = _checked(spec, overlays)
    _emit_findings(checked, fmt)
    if not checked.ok or (strict and checked.findings):
        raise SpecRejected(checked.findings)
    if fmt == "text":
        click.echo(f"{spec}: ok ({report.summary(checked.findings)})", err=True)


@main.command()
@_SPEC
@_OVERLAYS
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="text: a table per role; json: the sizing report of docs/spec.md section 4.")
def size(spec: Path, overlays: tuple[Path, ...], fmt: str) -> None:
    """Per-role, per-GPU HBM breakdown (GiB) and KV capacity; exit 1 if a role does not fit."""
    from .output import sizing_report
    checked = _checked(spec, overlays)
    if fmt == "json":
        click.echo(json.dumps(sizing_report.sizing_json(checked), indent=2))
    else:
        click.echo(sizing_report.sizing_text(checked), nl=False)
        if checked.findings:
            click.echo(report.text(checked.findings, colour=sys.stderr.isatty()), err=True)
    if not checked.ok:
        raise SpecRejected(checked.findings)


@main.command()
@_SPEC
@_OVERLAYS
@click.option("--path", "prefix", default="$", show_default=True,
              help="Only fields under this JSON path, e.g. $.spec.roles[1].")
def explain(spec: Path, overlays: tuple[Path, ...], prefix: str) -> None:
    """Show every value of the merged spec and the file:line that set it (overlay provenance)."""
    from .output.explain import explain as explain_text
    from .spec.load import load_spec
    _exist(spec, *overlays)
    loaded = load_spec(spec, list(overlays))
    if loaded.findings:
        click.echo(report.text(loaded.findings, colour=sys.stderr.isatty()), err=True)
        if any(f.severity is Severity.ERROR for f in loaded.findings):
            raise SpecRejected(loaded.findings)
    text = explain_text(loaded, prefix)
    if not text:
        raise UsageError(f"no field of the merged spec under {prefix}")
    click.echo(text, nl=False)


@main.command()
@click.argument("request", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--emit", "emit_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the best candidate as an InferenceDeployment spec.")
def plan(request: Path, fmt: str, emit_path: Path | None) -> None:
    """Propose deployments for a PlanRequest (workload + SLO), ranked by throughput."""
    from .capacity import plan as run_plan
    from .capacity.to_spec import spec_yaml
    from .emit import write_file
    from .output.plan_table import plan_text
    req = _plan_request(request)
    if sys.stderr.isatty():   # progress on a terminal only; CI logs stay quiet
        with click.progressbar(length=1, label="searching layouts", file=sys.stderr) as bar:
            def tick(done: int, total: int) -> None:
                bar.length = total
                bar.update(done - bar.pos)
            result = run_plan(req, tick)
    else:
        result = run_plan(req)
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(plan_text(result), nl=False)
    if emit_path is not None:
        if not result.candidates:
            raise UsageError("no candidate to emit")
        write_file(emit_path, spec_yaml(req, result.candidates[0]))
        click.echo(f"{emit_path}: InferenceDeployment of candidate 1 written", err=True)


@main.command("report")
@_SPEC
@_OVERLAYS
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Output file (default: report.html; with --format json, stdout).")
@click.option("--format", "fmt", type=click.Choice(["html", "json"]), default="html")
def report_cmd(spec: Path, overlays: tuple[Path, ...], out: Path | None, fmt: str) -> None:
    """One-file HTML review page (topology, per-GPU memory, findings), or its data as JSON.

    SPEC may be an InferenceDeployment or a PlanRequest (then the page shows the plan).
    """
    from .emit import write_file
    from .manifests.templates import render as render_template
    from .output import review_page
    from .spec.load import parse_yaml_file
    _exist(spec, *overlays)
    data, _, _ = parse_yaml_file(spec)
    if data is not None and data.get("kind") == "PlanRequest":
        from .capacity import plan as run_plan
        req = _plan_request(spec)
        model = review_page.build_plan(req, run_plan(req))
    else:
        checked = _checked(spec, overlays)
        plan_obj = pipeline.deployment_plan(checked) if checked.ok else None
        model = review_page.build(checked, plan_obj)
    if fmt == "json":
        text = json.dumps(model, indent=2)
        if out is None:
            click.echo(text)
            return
    else:
        text = render_template("report.html.j2", r=model, colours=review_page.COLOURS)
    target = out or Path("report.html")
    write_file(target, text)
    click.echo(f"{target}: written", err=True)


@main.command()
def schema() -> None:
    """Print the JSON Schema of the InferenceDeployment spec."""
    click.echo(schema_text(), nl=False)


def schema_text() -> str:
    """The exact text of ``schemas/inferencedeployment.schema.json``."""
    from .spec.models import json_schema
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


@main.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def rules(fmt: str) -> None:
    """Print the rule catalogue (code, severity, summary, source)."""
    from .checks import RULES
    if fmt == "json":
        click.echo(json.dumps([{"code": r.code, "severity": r.severity.value,
                                "summary": r.summary, "source": r.source} for r in RULES],
                              indent=2))
        return
    for r in sorted(RULES, key=lambda r: r.code):
        click.echo(f"{r.code:8} {r.severity.value:7} {r.summary}\n{'':16} source: {r.source}")


def run(argv: list[str] | None = None) -> int:
    """Entry point of the console script: returns the exit code, never a traceback for input."""
    try:
        main.main(args=argv, prog_name="gen", standalone_mode=False)
        return 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:  # usage errors
        exc.show()
        return 2
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 2
    except SpecRejected as exc:
        errors = sum(f.severity is Severity.ERROR for f in exc.findings)
        if errors == 0:
            click.echo("rejected: warnings are errors with --strict", err=True)
        return exc.exit_code
    except (UsageError, DriftDetected) as exc:
        if isinstance(exc, UsageError):
            click.echo(f"gen: error: {exc}", err=True)
        return exc.exit_code
    except GenError as exc:  # pragma: no cover - every GenError subclass is handled above
        click.echo(f"gen: {exc}", err=True)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a bug, exit 4
        click.echo(f"gen: internal error (a bug in moegen, please report it): "
                   f"{type(exc).__name__}: {exc}", err=True)
        if os.environ.get("MOEGEN_DEBUG"):
            traceback.print_exc()
        return 4


def console() -> None:
    """``gen`` console script."""
    sys.exit(run())

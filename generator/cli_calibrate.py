"""``gen bench`` and ``gen calibrate`` (docs/calibration.md), and ``gen plan --calibration``'s
matching of candidates; registered on the ``gen`` group by generator/cli.py."""

from __future__ import annotations

from pathlib import Path

import click

from . import pipeline
from .cli_common import _OVERLAYS, _SPEC, _checked, _exist, _reject
from .errors import Finding, Location, Severity, UsageError

#: Text in the files gen bench and gen calibrate write (emit.write_file replaces only those).
BENCH_MARKER = "benchmark Job (gen bench)"
PROFILE_MARKER = "# Written by gen calibrate"


@click.command("bench")
@_SPEC
@_OVERLAYS
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write bench-job.yaml to (default: standard output).")
@click.option("--url", default=None, help="Base URL of the entry point (required behind an "
              "inference gateway: the Gateway's address); default: the router Service, else "
              "the API role's client Service.")
@click.option("--num-prompts", type=click.IntRange(1, 1_000_000), default=None,
              help="Requests to send (default: 5 per request in flight, at least 10).")
@click.option("--request-rate", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Requests per second (default: all at once, the concurrency in flight).")
@click.option("--keep", "keep_s", type=click.IntRange(0, 86_400), default=300,
              show_default=True, help="Seconds the pod stays up after the run, for kubectl cp.")
def bench_cmd(spec: Path, overlays: tuple[Path, ...], outdir: Path | None, url: str | None,
              num_prompts: int | None, request_rate: float | None, keep_s: int) -> None:
    """A Kubernetes Job that runs the engine's own benchmark client (vllm bench serve, SGLang's
    bench_serving) against the deployment's entry point at spec.traffic's lengths and the
    decoding roles' sizing.concurrency; its result is printed to the pod's log for gen
    calibrate."""
    from .emit import write_file
    from .manifests.bench import bench_plan
    from .targets.templates import render as render_template
    checked = _checked(spec, overlays)
    if not checked.ok:
        _reject(checked.findings)
    target = checked.spec.spec.target.name
    if target != "kubernetes" and not url:
        raise UsageError(f"spec.target is {target}: its controller names the Services; pass "
                         "--url with the deployment's entry point")
    plan = pipeline.deployment_plan(checked)
    bp = bench_plan(checked.model, plan, url=url, num_prompts=num_prompts,
                    request_rate=request_rate, keep_s=keep_s)
    text = render_template("bench-job.yaml.j2", plan=plan, b=bp)
    summary = (f"Job {bp.name}: {bp.num_prompts} requests of {bp.input_tokens}/"
               f"{bp.output_tokens} tokens, {bp.concurrency} in flight, to {bp.entry} ({bp.url})")
    if outdir is None:
        click.echo(text, nl=False)
    else:
        write_file(outdir / "bench-job.yaml", text, BENCH_MARKER)
        summary = f"{outdir / 'bench-job.yaml'}: " + summary
    click.echo(summary, err=True)


@click.command("calibrate")
@click.argument("results", nargs=-1, required=True)
@click.option("--spec", "spec", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The deployment the results were measured on.")
@_OVERLAYS
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Profile file to write (default: standard output).")
def calibrate_cmd(results: tuple[str, ...], spec: Path, overlays: tuple[Path, ...],
                  out: Path | None) -> None:
    """Compare benchmark results (vllm bench serve --save-result JSON, SGLang bench_serving
    JSONL, or the bench Job's log) and engine logs (ROLE=FILE, for the memory lines) with the
    prediction of SPEC, print predicted vs measured, and write a calibration profile."""
    import yaml

    from .calibration.config import configuration
    from .calibration.profile import fit
    from .calibration.report import comparison
    from .calibration.results import read_results
    from .emit import write_file
    checked = _checked(spec, overlays)
    if not checked.ok:
        _reject(checked.findings)
    read = read_results(list(results))
    if read.findings:
        _reject(read.findings)
    doc = checked.spec
    key = configuration(doc)["key"]
    runs, skipped = [], []
    for r in read.runs:
        why = (f"stored configuration {r.config}, not this deployment's {key}"
               if r.config and r.config != key else
               f"sent to model {r.model!r}, not {doc.spec.model.name!r}"
               if r.model and r.model != doc.spec.model.name else "")
        if why:
            skipped.append(Finding("CAL005", Severity.WARNING, "", f"{r.file}: {why}: skipped",
                                   "calibrate with runs of this deployment (gen bench)",
                                   Location(r.file.split(":")[0])))
        else:
            runs.append(r)
    if skipped:
        click.echo("\n".join(str(f) for f in skipped), err=True)
    if not runs:
        raise UsageError("no benchmark run of this deployment among the inputs: "
                         "nothing to calibrate on")
    memory = _memory_sizing(checked, read.memory)
    profile, rows = fit(checked.model, runs, memory, doc.metadata.name)
    click.echo(comparison(profile, rows), nl=False, err=out is None)   # stdout: the profile
    text = PROFILE_MARKER + f" from {len(runs)} run(s) of {doc.metadata.name}\n" + \
        yaml.safe_dump(profile, sort_keys=False, width=100)
    if out is None:
        click.echo(text, nl=False)
    else:
        write_file(out, text, PROFILE_MARKER)
        click.echo(f"{out}: calibration profile written ({len(runs)} run"
                   f"{'s' if len(runs) != 1 else ''})", err=True)


def _memory_sizing(checked, lines) -> list:
    """Each log's memory line with the sizing of its role (``{"weightsGiB",
    "kvTokensPerRank"}``); a log without ROLE= on a deployment of several roles is a usage
    error."""
    from .sizing import RoleSizing
    sized = {z.name: z for z in checked.sizing if isinstance(z, RoleSizing)}
    out = []
    for m in lines:
        role = m.role or (next(iter(sized)) if len(sized) == 1 else "")
        if role not in sized:
            raise UsageError(f"{m.file}: name the role this log is of, as ROLE={m.file} "
                             f"(roles: {', '.join(sized)})")
        z = sized[role]
        out.append((type(m)(m.file, m.engine, role, m.weights_gib, m.kv_tokens),
                    {"weightsGiB": round(z.weights, 2), "kvTokensPerRank": z.kv_tokens_per_rank}))
    return out


def calibrated_plan(result, req, path: Path) -> tuple[object, dict, list]:
    """``gen plan --calibration``: the plan's candidates of the profile's configuration with
    calibrated figures (perf/calibrated.py ``apply_candidate``), ``{rank: calibration JSON}``
    and the findings (CAL001 when no candidate is of the configuration; LOAD/SCH of the
    file). Raises SpecRejected when the profile cannot be read."""
    from .calibration.config import differences, request_configuration
    from .calibration.profile import load_profile
    from .perf.calibrated import Calibration, Factor, apply_candidate
    _exist(path)
    profile, findings = load_profile(path)
    if profile is None:
        _reject(findings)
    factors = {g: Factor(f.factor, f.runs, f.residual) for g, f in profile.spec.factors.items()}
    cal = Calibration(factors, profile.metadata.get("name", ""))
    fixed = [r.model_dump(mode="json", exclude_none=True) for r in req.spec.roles or []]
    applied, diffs = {}, []
    for i, cand in enumerate(result.candidates):
        conf = request_configuration(req, fixed or cand.roles)
        diff = differences(profile.spec.configuration, conf)
        if diff:
            diffs.append(diff)
            continue
        result.candidates[i] = apply_candidate(cand, cal)
        applied[cand.rank] = {"profile": cal.profile,
                              "factors": {g: f.to_json() for g, f in sorted(factors.items())}}
    if not applied:
        why = "; ".join(diffs[0]) if diffs else "no candidate"
        findings = [Finding("CAL001", Severity.WARNING, "", f"calibration profile "
                            f"{cal.profile!r} was measured on another configuration ({why}): "
                            "not applied to any candidate", "", Location(str(path)))]
    return result, applied, findings


"""``gen calibrate``'s comparison: per run, predicted vs measured per figure; the factors; the
memory lines against the sizing."""

from __future__ import annotations

#: (JSON figure, label, unit) in the order printed.
FIGURES = (("ttftMs", "TTFT mean", "ms"), ("ttftMedianMs", "TTFT median", "ms"),
           ("ttftP99Ms", "TTFT p99", "ms"), ("tpotMs", "TPOT mean", "ms"),
           ("outputTokensPerSec", "output", "tokens/s"))


def _num(v) -> str:
    return "-" if v is None else f"{v:,.1f}"


def _ratio(measured, predicted) -> str:
    return f"{measured / predicted:.2f}" if measured and predicted else "-"


def comparison(profile: dict, rows: list) -> str:
    """The text ``gen calibrate`` prints (``profile``: the fitted profile document; ``rows``:
    each run with its predicted figures)."""
    out = []
    for run, pred in rows:
        out.append(f"run {run.file} ({run.client}): {run.completed} requests of "
                   f"{run.input_tokens}/{run.output_tokens} tokens, {run.concurrency:g} in flight")
        out.append(f"  {'figure':<22} {'predicted':>11} {'measured':>11} {'measured/predicted':>19}")
        measured = run.figures()
        for key, label, unit in FIGURES:
            out.append(f"  {label + ' ' + unit:<22} {_num(pred.get(key)):>11} "
                       f"{_num(measured.get(key)):>11} {_ratio(measured.get(key), pred.get(key)):>19}")
    factors = profile["spec"]["factors"]
    out.append("factors (how much slower than predicted: measured / predicted times, predicted / "
               "measured tokens/s; geometric mean over the runs):")
    for group, f in factors.items():
        out.append(f"  {group:<7} x{f['factor']:.3f} on {f['runs']} run"
                   f"{'s' if f['runs'] != 1 else ''}, residual {f['residual']:.1%}")
    if not factors:
        out.append("  (none: no run measured a figure the model predicts)")
    mem = profile["spec"]["memory"]
    if mem:
        out.append("memory (per GPU, per data-parallel rank; shown, not applied: the HBM check "
                   "follows the engine's own arithmetic):")
    for m in mem:
        parts = []
        for key, label, unit in (("weightsGiB", "weights", "GiB"),
                                 ("kvTokensPerRank", "KV cache", "tokens")):
            v = m[key]
            if v["measured"] is not None:
                diff = (f" ({v['measured'] / v['predicted'] - 1:+.1%})" if v["predicted"] else "")
                parts.append(f"{label} {v['measured']:,} {unit} measured, "
                             f"{v['predicted']:,} predicted{diff}")
        out.append(f"  role {m['role']} ({m['engine']} log {m['file']}): " + "; ".join(parts))
    return "\n".join(out) + "\n"

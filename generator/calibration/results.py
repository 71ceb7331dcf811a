"""Reading what the engines' own tools measured: benchmark client results and start-up logs.

* ``vllm bench serve --save-result``: one JSON object per run (several, one per line, with
  ``--append-result``); keys as vLLM 0.33.0 vllm/benchmarks/serve.py writes them:
  ``mean_ttft_ms``/``median_ttft_ms``/``p99_ttft_ms``, ``mean_tpot_ms``, ``output_throughput``,
  ``total_token_throughput``, ``completed``, ``total_input_tokens``/``total_output_tokens``,
  ``max_concurrency``, ``request_rate``, ``model_id``, and every ``--metadata KEY=VALUE``;
* SGLang ``bench_serving --output-file``: JSON Lines, one object per run (SGLang 0.5.23
  python/sglang/benchmark/serving.py: the same figure names, ``total_throughput``, ``concurrency``
  = the measured mean in flight, ``tag``);
* engine start-up logs, for the memory lines: vLLM "Model loading took X GiB memory"
  (vllm/v1/worker/gpu_model_runner.py, 0.33.0) and "<device> KV cache size: N tokens"
  (vllm/v1/core/kv_cache_utils.py, 0.33.0); SGLang "Load weight end. ... mem usage=X GB" (GiB:
  python/sglang/srt/model_executor/model_runner.py, 0.5.23) and "KV Cache is allocated. ...
  #tokens: N" (python/sglang/srt/mem_cache/memory_pool.py, 0.5.23).

Files are read through the loader's hostile-input guard (``generator/spec/load.py``
``read_text``, at most 16 MiB each); what is not one of these is a CAL004 finding.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Finding, Location, Severity
from ..spec.load import MAX_STREAM_BYTES, display_name, read_text

#: The metadata key the rendered bench Job stores moegen's configuration key under (vLLM
#: ``--metadata moegen.config=<key>``; SGLang ``--tag moegen.config=<key>``): gen calibrate
#: skips a run measured on another configuration (CAL005).
CONFIG_KEY = "moegen.config"


@dataclass(frozen=True)
class Run:
    """One benchmark run as its client saved it. Times in ms, rates in tokens/s.

    Attributes:
        file: where it was read (file name, line for JSON Lines).
        client: ``vllm bench serve`` or ``sglang bench_serving``.
        ttft_mean, ttft_median, ttft_p99, tpot_mean: the client's figures (None when absent).
        output_tps, total_tps: output and input + output tokens/s over the run.
        completed: requests completed; input_tokens, output_tokens: mean per request.
        concurrency: requests in flight the run held (``max_concurrency`` for a closed loop
            sent at once; else the measured mean, SGLang ``concurrency``, or request rate x
            mean latency: Little's law).
        model: the model name the client sent (vLLM ``model_id``), or "".
        config: the configuration key the moegen bench Job stored (:data:`CONFIG_KEY`), or "".
    """

    file: str
    client: str
    ttft_mean: float | None
    ttft_median: float | None
    ttft_p99: float | None
    tpot_mean: float | None
    output_tps: float
    total_tps: float | None
    completed: int
    input_tokens: int
    output_tokens: int
    concurrency: float
    model: str = ""
    config: str = ""

    def figures(self) -> dict[str, float | None]:
        """``{"ttftMs", "ttftMedianMs", "ttftP99Ms", "tpotMs", "outputTokensPerSec"}``."""
        return {"ttftMs": self.ttft_mean, "ttftMedianMs": self.ttft_median,
                "ttftP99Ms": self.ttft_p99, "tpotMs": self.tpot_mean,
                "outputTokensPerSec": self.output_tps}


@dataclass(frozen=True)
class MemoryLine:
    """What one engine log says of its memory: ``weights_gib`` (per GPU, GiB) and
    ``kv_tokens`` (per data-parallel rank), each None when the log has no such line;
    ``role``: the role the user named for the log (``ROLE=FILE``), or ""."""

    file: str
    engine: str
    role: str
    weights_gib: float | None
    kv_tokens: int | None


@dataclass
class Results:
    """Every run and memory line read, and what could not be read (CAL004 findings)."""

    runs: list[Run] = field(default_factory=list)
    memory: list[MemoryLine] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


_VLLM_WEIGHTS = re.compile(r"Model loading took ([0-9.]+) GiB")
_VLLM_KV = re.compile(r"\b\w+ KV cache size: ([0-9,]+) tokens")
_SGL_WEIGHTS = re.compile(r"Load weight end\..*mem usage=([0-9.]+) GB")
_SGL_KV = re.compile(r"KV Cache is allocated\. .*#tokens: ([0-9]+)")


def _finding(file: str, message: str, hint: str, line: int = 0) -> Finding:
    return Finding("CAL004", Severity.ERROR, "", message, hint, Location(file, line, 1 if line else 0))


def _num(d: dict, key: str) -> float | None:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _metadata(value: str) -> str:
    """The configuration key in a ``moegen.config=<key>`` tag (SGLang ``tag``), or ""."""
    for part in str(value or "").split():
        k, _, v = part.partition("=")
        if k == CONFIG_KEY:
            return v
    return ""


def run_of(obj: dict, where: str) -> Run | None:
    """A :class:`Run` from one saved result object, or None when it is not one: vLLM's has
    ``total_token_throughput``, SGLang's ``total_throughput`` and ``dataset_name``."""
    if not isinstance(obj, dict) or _num(obj, "output_throughput") is None \
            or not _num(obj, "completed"):
        return None
    if "total_token_throughput" in obj:
        client, total, config = "vllm bench serve", _num(obj, "total_token_throughput"), \
            str(obj.get(CONFIG_KEY, ""))
    elif "total_throughput" in obj and "dataset_name" in obj:
        client, total, config = "sglang bench_serving", _num(obj, "total_throughput"), \
            _metadata(obj.get("tag"))
    else:
        return None
    done = int(obj["completed"])
    inp = round((_num(obj, "total_input_tokens") or 0) / done)
    out = round((_num(obj, "total_output_tokens") or 0) / done)
    return Run(where, client, _num(obj, "mean_ttft_ms"), _num(obj, "median_ttft_ms"),
               _num(obj, "p99_ttft_ms"), _num(obj, "mean_tpot_ms"),
               float(obj["output_throughput"]), total, done, inp, out,
               _concurrency(obj, done, out), str(obj.get("model_id") or ""), config)


def _concurrency(obj: dict, done: int, out: int) -> float:
    """Requests in flight during the run (see :class:`Run`)."""
    rate = obj.get("request_rate")
    closed = obj.get("max_concurrency")
    if isinstance(closed, int) and closed > 0 and rate in ("inf", float("inf"), None):
        return float(min(closed, done))
    measured = _num(obj, "concurrency")      # SGLang: sum of latencies / duration
    if measured:
        return measured
    ttft, tpot = _num(obj, "mean_ttft_ms") or 0.0, _num(obj, "mean_tpot_ms") or 0.0
    rps = _num(obj, "request_throughput") or 0.0
    little = rps * (ttft + tpot * max(out - 1, 0)) / 1000   # Little's law: L = lambda x W
    if isinstance(closed, int) and closed > 0:
        little = min(little, closed)
    return little or float(done)


def _objects(text: str) -> list[tuple[int, object]] | None:
    """The JSON values of ``text`` with their line numbers: one document, or JSON Lines;
    None when it is neither."""
    try:
        return [(1, json.loads(text))]
    except json.JSONDecodeError:
        pass
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((i, json.loads(line)))
        except json.JSONDecodeError:
            return None
    return out or None


def memory_of(text: str, where: str, role: str) -> MemoryLine | None:
    """The memory lines of an engine log (the last of each kind: a restart logs again), or
    None when it has none."""
    for engine, wre, kre in (("vllm", _VLLM_WEIGHTS, _VLLM_KV), ("sglang", _SGL_WEIGHTS, _SGL_KV)):
        weights, kv = wre.findall(text), kre.findall(text)
        if weights or kv:
            return MemoryLine(where, engine, role, float(weights[-1]) if weights else None,
                              int(kv[-1].replace(",", "")) if kv else None)
    return None


def _logged_runs(text: str, display: str) -> list[Run]:
    """The results printed in a log, one JSON object per line (the bench Job prints its result
    file between marker lines: generator/manifests/bench.py)."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("{") and line.rstrip().endswith("}"):
            try:
                run = run_of(json.loads(line), f"{display}:{i}")
            except json.JSONDecodeError:
                continue
            if run is not None:
                out.append(run)
    return out


def read_results(args: list[str]) -> Results:
    """Read each ``[ROLE=]FILE`` of ``gen calibrate``: a result file (every run in it) or an
    engine log (its memory lines, for ROLE). Never raises for bad input: CAL004 findings."""
    out = Results()
    for arg in args:
        role, sep, name = arg.partition("=")
        if not sep or "/" in role:
            role, name = "", arg
        path = Path(name)
        display = display_name(path)
        text, err = read_text(path, display, MAX_STREAM_BYTES)
        if err is not None:
            out.findings.append(_finding(display, err.message, err.hint))
            continue
        objs = _objects(text)
        if objs is not None:
            runs = [run_of(o, f"{display}:{line}" if len(objs) > 1 else display)
                    for line, o in objs]
            bad = [line for (line, _), r in zip(objs, runs) if r is None]
            if bad:
                out.findings.append(_finding(
                    display, f"{display} line {bad[0]}: not a benchmark result (no "
                    "output_throughput/completed, or neither vLLM's total_token_throughput nor "
                    "SGLang's total_throughput and dataset_name)",
                    "give the file `vllm bench serve --save-result` or SGLang bench_serving "
                    "--output-file wrote", bad[0]))
            out.runs += [r for r in runs if r is not None]
            continue
        logged = _logged_runs(text, display)   # the bench Job's log (kubectl logs)
        out.runs += logged
        mem = memory_of(text, display, role)
        if mem is None and logged:
            continue
        if mem is None:
            out.findings.append(_finding(
                display, f"{display}: neither a benchmark result (JSON, JSON Lines) nor an "
                "engine log with a memory line (vLLM 'Model loading took', 'KV cache size'; "
                "SGLang 'Load weight end', 'KV Cache is allocated')",
                "give result files, and engine logs as ROLE=FILE (kubectl logs POD > FILE)"))
            continue
        out.memory.append(mem)
    return out

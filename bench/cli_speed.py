"""Whole-process speed of the ``gen`` command, as a user runs it (median of N runs).

* ``gen validate`` of the S1 example (goal: < 0.25 s);
* ``gen render`` of 256, 512 and 1,024 nodes in every workload shape (goal: < 1.0 s at 1,024
  nodes, and linear in nodes): LeaderWorkerSets of 2-node instances, single-node StatefulSets,
  and one pod per data-parallel rank (8 rank pods per node);
* ``gen plan`` of one 64-node pool (goal: < 1 s).

Renders are timed into a new directory (every file created) and as an unchanged re-render
(files compared, nothing written). File creation is the file system's cost, not moegen's: on a
slow virtual disk 2,000 small files take 0.2-1 s to create whatever writes them.

Runs the ``gen`` on PATH (install the project first; Python caches bytecode on the first run, as
an installed package has it). ``PYTHONDONTWRITEBYTECODE`` is cleared for the child processes.

    python bench/cli_speed.py [runs]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
S1 = ROOT / "examples" / "s1-16xh20-pd.yaml"

#: Overlays that grow S1's decode role to N nodes in each workload shape (prefill stays 1 node).
SHAPES = {
    "lws (2-node DP16/EP16 groups)": lambda n: (
        f"spec:\n  nodePools:\n    decode-h20: {{nodes: {n}}}\n  roles:\n    - name: decode\n"
        f"      replicas: {n // 2}\n"),
    "statefulset (1-node TP8 instances)": lambda n: (
        f"spec:\n  nodePools:\n    prefill-h20: {{nodes: {n}}}\n  roles:\n    - name: prefill\n"
        f"      workload: statefulset\n      replicas: {n}\n"),
    "pod-per-rank (8 rank pods per node)": lambda n: (
        f"spec:\n  nodePools:\n    decode-h20: {{nodes: {n}}}\n  roles:\n    - name: decode\n"
        f"      workload: pod-per-rank\n      replicas: {n // 2}\n"
        "      moe: {all2all: allgather_reducescatter}\n"),
}
PLAN = """apiVersion: moegen.dev/v1alpha1
kind: PlanRequest
metadata: {name: big}
spec:
  model: {architecture: deepseek-v3, weights: fp8}
  engine: {name: vllm, version: "0.33.0"}
  nodePools:
    h20: {gpu: H20-141GB, gpusPerNode: 8, nodes: 64}
  network: {interNodeGbps: 400}
  workload: {inputTokens: 3500, outputTokens: 1200, concurrency: 4096}
  slo: {ttftMs: 2000, tpotMs: 50}
  speculative: {numSpeculativeTokens: 1, acceptance: 0.7}
"""


def _time(argv: list[str], runs: int, ok=(0,), fresh: Path | None = None) -> float:
    """Median wall time of ``argv``; ``fresh``: a directory removed before each (untimed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(argv, env=env, capture_output=True, check=False)   # warm the bytecode cache
    times = []
    for _ in range(runs):
        if fresh is not None:
            shutil.rmtree(fresh, ignore_errors=True)
        start = time.perf_counter()
        res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if res.returncode not in ok:
            raise SystemExit(f"{' '.join(argv)} exited {res.returncode}:\n{res.stderr[-2000:]}")
    return statistics.median(times)


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 5
    gen = shutil.which("gen")
    if gen is None:
        print("gen is not on PATH: install the project first", file=sys.stderr)
        return 2
    print(f"gen validate {S1.name}: {_time([gen, 'validate', str(S1)], runs):.3f} s "
          "(goal < 0.25 s)")
    with tempfile.TemporaryDirectory() as tmp:
        for shape, overlay in SHAPES.items():
            row = []
            for nodes in (256, 512, 1024):
                path = Path(tmp) / f"o{nodes}.yaml"
                path.write_text(overlay(nodes))
                out = Path(tmp) / f"out-{nodes}"
                argv = [gen, "render", str(S1), "-f", str(path), "-o", str(out)]
                row.append((nodes, _time(argv, runs, fresh=out), _time(argv, runs)))
            print(f"gen render, {shape}, new directory / unchanged re-render: "
                  + ", ".join(f"{n} nodes {t:.3f} / {u:.3f} s" for n, t, u in row)
                  + " (goal < 1.0 s at 1024)")
        plan = Path(tmp) / "plan.yaml"
        plan.write_text(PLAN)
        print(f"gen plan, one pool of 64 nodes: {_time([gen, 'plan', str(plan)], runs):.3f} s "
              "(goal < 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

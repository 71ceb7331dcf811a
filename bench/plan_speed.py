"""Time `gen plan` over the whole search space for 64 nodes: two pools of 32 x 8 GPUs, and one
pool of 64 x 8 GPUs (every prefill/decode split of it is searched).

    python bench/plan_speed.py [repeats]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.capacity import plan  # noqa: E402
from generator.capacity.request import PlanRequest  # noqa: E402

REQUEST = {
    "apiVersion": "moegen.dev/v1alpha1", "kind": "PlanRequest", "metadata": {"name": "big"},
    "spec": {
        "model": {"architecture": "deepseek-v3", "weights": "fp8"},
        "engine": {"name": "vllm", "version": "0.33.0"},
        "nodePools": {"prefill": {"gpu": "H20-96GB", "gpusPerNode": 8, "nodes": 32},
                      "decode": {"gpu": "H20-141GB", "gpusPerNode": 8, "nodes": 32}},
        "network": {"interNodeGbps": 400},
        "workload": {"inputTokens": 3500, "outputTokens": 1200, "concurrency": 4096},
        "slo": {"ttftMs": 2000, "tpotMs": 50},
        "speculative": {"numSpeculativeTokens": 1, "acceptance": 0.7},
    },
}


def main(argv: list[str]) -> int:
    repeats = int(argv[1]) if len(argv) > 1 else 3
    one_pool = {**REQUEST, "spec": {**REQUEST["spec"], "nodePools": {
        "h20": {"gpu": "H20-141GB", "gpusPerNode": 8, "nodes": 64}}}}
    for label, doc in (("2 pools x 32 nodes", REQUEST), ("1 pool x 64 nodes", one_pool)):
        req = PlanRequest.model_validate(doc)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            result = plan(req)
            times.append(time.perf_counter() - start)
        print(f"{label}: best {result.candidates[0].total_tps:,.0f} tokens/s; plan time min "
              f"{min(times):.2f} s, max {max(times):.2f} s over {repeats} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

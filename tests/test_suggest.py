"""Did-you-mean: the value a user most likely meant (generator/errors.py ``closest``)."""

from __future__ import annotations

from generator import pipeline
from generator.catalog import GPUS
from generator.engines.options import value_problem
from generator.errors import closest
from tests.helpers import EXAMPLES


def test_gpu_ids_are_compared_part_by_part():
    # H300-200GB is nearest H200-141GB (H, 300 vs 200, 200 vs 141 GB), not H800-80GB, which
    # plain spelling distance picked; a bare family or another case finds its id.
    gpus = list(GPUS)
    assert closest("H300-200GB", gpus) == "H200-141GB"
    assert closest("h200", gpus) == "H200-141GB"
    assert closest("MI300", gpus) == "MI300X-192GB"
    assert closest("h800-80g", gpus) == "H800-80GB"
    assert closest("A100-40GB", gpus) == "A100-80GB"


def test_aliases_people_use_map_to_moegens_names():
    # DeepEP's normal kernels are moegen's deepep_high_throughput (not deepep_v2, the nearest
    # spelling); separators and case do not matter.
    names = ["naive", "deepep_high_throughput", "deepep_low_latency", "deepep_v2"]
    assert closest("deepep_normal", names) == "deepep_high_throughput"
    assert closest("deepep-normal", names) == "deepep_high_throughput"
    assert closest("DeepEP-Low-Latency", names) == "deepep_low_latency"
    assert closest("deepep_ll", names) == "deepep_low_latency"
    assert closest("banana", names) is None


def test_schema_and_engine_hints_use_it(tmp_path):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  nodePools:\n    prefill-h20: {gpu: H300-200GB}\n  roles:\n"
                       "    - name: decode\n      moe: {all2all: deepep_normal}\n")
    hints = {f.path: f.hint for f in pipeline.check(EXAMPLES / "s1-16xh20-pd.yaml",
                                                    [overlay]).findings if f.code == "SCH004"}
    assert hints["$.spec.nodePools.prefill-h20.gpu"] == "did you mean 'H200-141GB'?"
    assert hints["$.spec.roles[1].moe.all2all"] == "did you mean 'deepep_high_throughput'?"
    # vLLM 0.33.0's --all2all-backend choices (vllm-releases.json): the same alias.
    assert value_problem("vllm", "0.33.0", "--all2all-backend", "deepep_normal")[1].startswith(
        "did you mean 'deepep_high_throughput'?")

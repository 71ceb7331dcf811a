"""The restart model's NIXL crash row keyed on the NIXL inside the image (review38 F1):
generator/facts/nixl.py over generator/facts/data/nixl.json (tools/extract_nixl.py)."""

from __future__ import annotations

import pytest

from generator import pipeline
from generator.facts.nixl import fixed_in, image_nixl
from tests.helpers import EXAMPLES

S1 = (EXAMPLES / "s1-16xh20-pd.yaml").read_text()


def test_the_first_nixl_with_the_fix_is_1_5_0():
    """ai-dynamo/nixl PR#1987 is in no tag of the mirror through v1.4.0 nor on release/1.4.1;
    the 1.5.0 wheel's UCX plugin no longer imports the callback's ucp_ep_close_nb."""
    assert fixed_in() == "1.5.0"


@pytest.mark.parametrize("engine, version, image, said, fixed", [
    # vLLM 0.33.0's connector refuses NIXL < 1.5.0 (check_nixl_version("1.5.0")), later too
    ("vllm", "0.33.0", "vllm/vllm-openai:v0.33.0", "NIXL >= 1.5.0", True),
    ("vllm", "0.34.0", "vllm/vllm-openai:v0.34.0", "NIXL >= 1.5.0", True),
    # vLLM 0.32.0 checks nothing: the NIXL of its image is not known
    ("vllm", "0.32.0", "vllm/vllm-openai:v0.32.0", "an unknown NIXL", None),
    # Dynamo 1.4.0's vLLM runtime bundles NIXL 1.3.2 (the pins table), before the fix
    ("vllm", "0.26.0", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0", "NIXL 1.3.2", False),
    ("sglang", "0.5.16", "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.4.0", "NIXL 1.3.0", False),
])
def test_the_nixl_an_image_runs(engine, version, image, said, fixed):
    nixl = image_nixl(engine, version, image)
    assert (nixl.describe(), nixl.fixed) == (said, fixed)


def _rst011(tmp_path, version: str, image: str):
    spec = tmp_path / "s.yaml"
    spec.write_text(S1.replace('version: "0.33.0"', f'version: "{version}"', 1)
                    .replace("image: vllm/vllm-openai:v0.33.0", f"image: {image}", 1))
    return [f for f in pipeline.check(spec).findings if f.code == "RST011"]


def test_vllm_0_33_runs_a_fixed_nixl_so_a_prefill_restart_is_not_a_decode_crash(tmp_path):
    """S1 (vLLM 0.33.0, NIXL over UCX on the H20s' RoCE): no RST011 (it fired before)."""
    assert _rst011(tmp_path, "0.33.0", "vllm/vllm-openai:v0.33.0") == []


def test_an_unknown_nixl_is_a_notice_that_says_what_it_assumed(tmp_path):
    (f,) = _rst011(tmp_path, "0.32.0", "vllm/vllm-openai:v0.32.0")
    assert f.severity.value == "notice"
    assert ("moegen does not know the NIXL in vllm/vllm-openai:v0.32.0 and assumed one before "
            "1.5.0, the first release with the fix") in f.message

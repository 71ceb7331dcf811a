"""Dynamo's worker CLIs per Dynamo release (issue 31 item 2): the options ``python -m
dynamo.vllm`` consumes itself, read by tools/extract_wrappers.py at each release's branch cut
(generator/facts/data/wrappers.json), so the engine command is read as the engine sees it."""

from __future__ import annotations

from generator.facts import images
from generator.importer.argv import parse_engine_args

ARGV = ["python3", "-m", "dynamo.vllm", "--model", "deepseek-ai/DeepSeek-R1",
        "--is-prefill-worker", "--tensor-parallel-size", "8"]


def _options(release):
    cmd = parse_engine_args("vllm", "dynamo", "0.25.1", ARGV, 3, 3, release)
    return {o.name: o for o in cmd.options}


def test_a_wrapper_flag_of_its_release_is_the_wrappers():
    """Dynamo 0.9.0's dynamo.vllm has ``--is-prefill-worker`` (a flag:
    ai-dynamo/dynamo@c35a363:components/src/dynamo/vllm/backend_args.py); later releases replace
    it with ``--disaggregation-mode prefill``. Read at 0.9.0 it is the wrapper's flag and takes
    no value; the tensor size after it stays the engine's."""
    opts = _options("0.9.0")
    assert opts["--is-prefill-worker"].wrapper and opts["--is-prefill-worker"].value is None
    assert opts["--tensor-parallel-size"].value == "8" and not opts["--tensor-parallel-size"].wrapper
    # At main (an image of no release moegen read) it is not the wrapper's.
    assert not _options(None)["--is-prefill-worker"].wrapper


def test_the_runtime_image_names_its_dynamo_release():
    assert images.dynamo_release("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.0") == "0.9.0"
    assert images.dynamo_release("nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.0-dev.1") is None
    assert images.dynamo_release("vllm/vllm-openai:v0.26.0") is None

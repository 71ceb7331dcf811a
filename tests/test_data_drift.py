"""Package data that is copied from shared/reference stays in step with it."""

from __future__ import annotations

import json

from generator.catalog import ARCHITECTURES, CONFIG_SOURCES, builtin_config
from tests.helpers import ROOT, load_script, shared


def _tool(name: str):
    return load_script(f"tools/{name}.py")


def test_vllm_dialect_data_matches_reference():
    ref = shared("reference", "engines", "vllm-dialects.yaml")
    committed = (ROOT / "generator" / "engines" / "data" / "vllm-releases.json").read_text()
    assert committed == _tool("extract_vllm_dialects").render(ref), \
        "run: python tools/extract_vllm_dialects.py"


def test_sglang_dialect_data_matches_reference():
    src = shared("reference", "engines")
    committed = (ROOT / "generator" / "engines" / "data" / "sglang-releases.json").read_text()
    assert committed == _tool("extract_sglang_dialects").render(src), \
        "run: python tools/extract_sglang_dialects.py"


def test_model_configs_match_reference():
    """A config shared/reference carries matches it; every other names its source revision."""
    compared = 0
    models = shared("reference", "models")
    for arch, name in ARCHITECTURES.items():
        path = models / name
        if path.exists():
            assert builtin_config(arch) == json.loads(path.read_text()), arch
            compared += 1
        else:
            assert CONFIG_SOURCES.get(arch), f"{arch}: no reference copy and no CONFIG_SOURCES entry"
    assert compared >= 9


def test_engine_option_data_matches_reference():
    src = shared("reference", "engines")
    committed = (ROOT / "generator" / "engines" / "data" / "engine-options.json").read_text()
    assert committed == _tool("extract_engine_options").render(src), \
        "run: python tools/extract_engine_options.py"


def test_kubernetes_object_schemas_match_kubernetes_validate():
    committed = (ROOT / "generator" / "spec" / "data" / "k8s-objects.json").read_text()
    assert committed == _tool("extract_k8s_schemas").render(), \
        "run: python tools/extract_k8s_schemas.py"


def test_every_release_option_list_reconstructs():
    """The base + per-release additions/removals give back each release's exact option set."""
    from generator.engines.options import known_releases, release_options
    for engine in ("vllm", "sglang"):
        raw = json.loads((ROOT / "tools" / "data" / f"{engine}-options-by-release.json").read_text())
        assert set(raw) <= set(known_releases(engine))
        for version, groups in raw.items():
            assert release_options(engine, version).options == {o for g in groups for o in g}, \
                (engine, version)


def test_controller_facts_match_the_tagged_source():
    """generator/facts/data/controllers.json is what tools/extract_controllers.py reads from
    the controllers' tagged source (git mirrors of kserve/kserve, sgl-project/rbg,
    ai-dynamo/dynamo, vllm-project/aibrix: $MOEGEN_MIRRORS, else ../.mirror beside the checkout;
    skipped without them)."""
    import pytest
    tool = _tool("extract_controllers")
    mirrors = tool.mirrors_dir()
    missing = [m for _, m, _ in tool.SOURCES.values() if not (mirrors / m / "repo").is_dir()]
    if missing:
        pytest.skip(f"controller git mirrors not present under {mirrors}: {missing}")
    committed = (ROOT / "generator" / "facts" / "data" / "controllers.json").read_text()
    assert committed == tool.render(mirrors), "run: python tools/extract_controllers.py"


def test_controller_facts_cite_a_release_and_a_line():
    """Every fact names the upstream file and line at the release it was read at; every
    release has the commit it was read at."""
    doc = json.loads((ROOT / "generator" / "facts" / "data" / "controllers.json").read_text())
    sources = []

    def walk(node):
        if isinstance(node, dict):
            if "value" in node and "source" in node:
                sources.append(node["source"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for target, data in doc["targets"].items():
        for release, facts in data["releases"].items():
            assert len(facts["commit"]) == 40, (target, release)
            walk(facts)
    assert len(sources) > 60
    for s in sources:
        repo, _, rest = s.partition("@")
        ref, _, where = rest.partition(":")
        assert "/" in repo and ref and where, s
        assert where.rsplit(":", 1)[-1].isdigit(), f"{s}: no line"


def test_image_table_matches_the_tagged_source():
    """generator/facts/data/images.json is what tools/extract_images.py reads from the
    publishers' sources (git mirrors of ai-dynamo/dynamo (the fork wxsms/dynamo) and
    kserve/kserve: $MOEGEN_MIRRORS, else ../.mirror beside the checkout; skipped without them)."""
    import pytest
    tool = _tool("extract_images")
    mirrors = tool.mirrors_dir()
    missing = [m for m in tool.MIRRORS if not (mirrors / m / "repo").is_dir()]
    if missing:
        pytest.skip(f"image-table git mirrors not present under {mirrors}: {missing}")
    committed = (ROOT / "generator" / "facts" / "data" / "images.json").read_text()
    assert committed == tool.render(mirrors), "run: python tools/extract_images.py"


def test_tool_parser_table_matches_the_installed_releases():
    """generator/engines/data/tool-parsers.json is what tools/extract_tool_parsers.py reads
    from the vLLM releases installed here (the engines venv, the CPU runtime; skipped without
    them)."""
    import pytest
    tool = _tool("extract_tool_parsers")
    found = tool.sites()
    if len(found) < 2:
        pytest.skip("the engines venv and the CPU runtime are not both present")
    committed = (ROOT / "generator" / "engines" / "data" / "tool-parsers.json").read_text()
    assert committed == tool.render(found), "run: python tools/extract_tool_parsers.py"


def test_vllm_env_table_matches_reference():
    ref = shared("reference", "engines", "vllm-dialects.yaml")
    committed = (ROOT / "generator" / "engines" / "data" / "vllm-envs.json").read_text()
    assert committed == _tool("extract_vllm_envs").render(ref), \
        "run: python tools/extract_vllm_envs.py"


def test_wrapper_options_match_the_tagged_source():
    """generator/facts/data/wrappers.json is what tools/extract_wrappers.py reads from
    ai-dynamo/dynamo (the fork wxsms/dynamo) at each release's branch cut; skipped without the
    mirror."""
    import pytest
    tool = _tool("extract_wrappers")
    mirrors = tool.mirrors_dir()
    if not (mirrors / "wxsms+dynamo" / "repo").is_dir():
        pytest.skip(f"the ai-dynamo/dynamo mirror is not under {mirrors}")
    committed = (ROOT / "generator" / "facts" / "data" / "wrappers.json").read_text()
    assert committed == tool.render(mirrors), "run: python tools/extract_wrappers.py"


def test_nixl_table_matches_the_tagged_source():
    """generator/facts/data/nixl.json is what tools/extract_nixl.py reads from the ai-dynamo/nixl
    mirror and the vLLM releases installed here (skipped without them)."""
    import pytest
    tool = _tool("extract_nixl")
    mirrors = load_script("tools/extract_images.py").mirrors_dir()
    if not (mirrors / "ai-dynamo+nixl" / "repo").is_dir() or len(tool._site_packages()) < 2:
        pytest.skip("the ai-dynamo/nixl mirror, the engines venv or the CPU runtime is missing")
    committed = (ROOT / "generator" / "facts" / "data" / "nixl.json").read_text()
    assert committed == tool.render(mirrors), "run: python tools/extract_nixl.py"

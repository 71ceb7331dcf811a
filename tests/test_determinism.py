"""Rendering is deterministic: same input, same bytes, whatever the key order of the input."""

from __future__ import annotations

import random

import yaml

from tests.helpers import EXAMPLES, render_spec


def _shuffle(obj, rng):
    if isinstance(obj, dict):
        items = list(obj.items())
        rng.shuffle(items)
        return {k: _shuffle(v, rng) for k, v in items}
    if isinstance(obj, list):
        return [_shuffle(v, rng) for v in obj]
    return obj


def test_render_twice_and_shuffled(tmp_path):
    for spec in sorted(EXAMPLES.glob("*.yaml")):
        _, _, first = render_spec(spec)
        _, _, second = render_spec(spec)
        assert first == second
        data = yaml.safe_load(spec.read_text())
        shuffled = tmp_path / spec.name
        shuffled.write_text(yaml.safe_dump(_shuffle(data, random.Random(7)), sort_keys=False))
        _, _, third = render_spec(shuffled)
        assert third == first, spec.name
        for text in first.values():
            # no path of the test's own leaks in (the pods' /tmp emptyDir is rendered)
            assert text.endswith("\n") and "\r" not in text and str(tmp_path) not in text

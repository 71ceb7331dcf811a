"""The template filters: toyaml's fast path for flat mappings writes PyYAML's bytes exactly."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.targets.templates import _Dumper, toyaml

# Scalars that stress YAML's plain/quoted choice: numbers-as-strings, booleans-as-strings,
# indicators, leading/trailing spaces, unicode, very long keys and values.
_text = st.one_of(
    st.text(min_size=0, max_size=40),
    st.sampled_from(["0", "8000", "true", "yes", "No", "null", "~", "1e3", ".inf", "0x1f",
                     "a: b", "- x", "#c", "x #c", " lead", "trail ", "é", "app.kubernetes.io/name",
                     "'q'", '"d"', "{x}", "[y]", "*a", "&b", "!t", "%p", "@", "`", "k" * 130]),
)
_scalars = st.one_of(_text, st.integers(min_value=-(2**40), max_value=2**40), st.booleans(),
                     st.none(), st.floats(allow_nan=False))


def _pyyaml(value, indent: int) -> str:
    text = yaml.dump(value, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                     width=10_000, allow_unicode=False).rstrip("\n")
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    return ("\n" + " " * indent).join(text.split("\n"))


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(_text, _scalars, max_size=8), st.sampled_from([0, 2, 4, 6]))
def test_flat_mapping_fast_path_matches_pyyaml(value, indent):
    assert toyaml(value, indent) == _pyyaml(value, indent)


def test_fast_path_quotes_what_yaml_would_retype():
    # Label values that YAML would read as int/bool/null stay strings (quoted).
    assert toyaml({"replica": "0", "on": "yes", "x": 3, "y": "null"}, 2) == (
        "'on': 'yes'\n  replica: '0'\n  x: 3\n  y: 'null'")

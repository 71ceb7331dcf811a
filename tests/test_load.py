"""Spec loading: overlay merge semantics, provenance, and refusal of hostile input."""

from __future__ import annotations

from generator.spec.load import MAX_BYTES, Provenance, load_spec, merge, parse_yaml_file


def _write(tmp, name, text):
    p = tmp / name
    p.write_text(text)
    return p


def test_merge_rules_and_provenance(tmp_path):
    base = _write(tmp_path, "base.yaml", """\
a: {x: 1, y: 2}
roles:
  - name: p
    v: 1
  - name: d
    v: 2
plain: [1, 2, 3]
""")
    over = _write(tmp_path, "over.yaml", """\
a: {y: 20}
roles:
  - name: d
    v: 22
  - name: n
    v: 3
plain: [9]
""")
    loaded = load_spec(base, [over])
    assert loaded.findings == []
    d = loaded.data
    assert d["a"] == {"x": 1, "y": 20}                       # maps merge per key
    assert [r["name"] for r in d["roles"]] == ["p", "d", "n"]  # named lists merge by name
    assert d["roles"][1]["v"] == 22 and d["roles"][0]["v"] == 1
    assert d["plain"] == [9]                                 # other lists are replaced
    prov = loaded.provenance
    assert prov.locate(("a", "x")).file.endswith("base.yaml")
    assert prov.locate(("a", "y")).file.endswith("over.yaml")
    assert prov.locate(("a", "y")).line == 1
    assert prov.locate(("roles", 1, "v")).file.endswith("over.yaml")
    assert prov.locate(("roles", 1, "v")).line == 4
    assert prov.locate(("roles", 2, "v")).file.endswith("over.yaml")
    assert prov.locate(("roles", 0, "v")).file.endswith("base.yaml")
    assert prov.locate(("plain", 0)).file.endswith("over.yaml")
    # A default (never set) falls back to the nearest located ancestor.
    assert prov.locate(("roles", 0, "missing", "deep")) == prov.locate(("roles", 0))


def test_last_overlay_wins(tmp_path):
    base = _write(tmp_path, "b.yaml", "k: 1\n")
    o1 = _write(tmp_path, "o1.yaml", "k: 2\n")
    o2 = _write(tmp_path, "o2.yaml", "k: 3\n")
    loaded = load_spec(base, [o1, o2])
    assert loaded.data["k"] == 3
    assert loaded.provenance.locate(("k",)).file.endswith("o2.yaml")


def test_merge_scalar_over_map_replaces():
    prov = Provenance()
    out = merge({"a": {"b": 1}}, prov, {"a": None}, Provenance())
    assert out == {"a": None}


def test_refuses_large_binary_and_non_utf8(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: " + b"x" * (MAX_BYTES + 1))
    _, _, f = parse_yaml_file(big)
    assert f[0].code == "LOAD002"
    assert parse_yaml_file(tmp_path / "missing.yaml")[2][0].code == "LOAD001"
    binf = tmp_path / "bin.yaml"
    binf.write_bytes(b"a: \x00\x01")
    assert parse_yaml_file(binf)[2][0].code == "LOAD003"
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("a: caf\xe9".encode("latin-1"))
    assert parse_yaml_file(latin)[2][0].code == "LOAD003"


def test_refuses_deep_nesting_quickly(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    _, _, f = parse_yaml_file(deep)   # refused while scanning, before the composer recurses
    assert f[0].code == "LOAD007"


def test_alias_bomb_refused_before_expansion(tmp_path):
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    bomb = _write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    _, _, f = parse_yaml_file(bomb)   # 10^12 nodes if expanded: refused from the alias count
    assert f[0].code == "LOAD005"


def test_manifest_anchors_are_read_and_their_bombs_refused(tmp_path):
    """Kubernetes manifests may use anchors and aliases (kubectl resolves them): read, the alias
    resolved; a manifest whose aliases expand past MAX_EXPANDED nodes is still refused (LOAD005)
    without expanding it."""
    from generator.spec.events import MAX_EXPANDED
    from generator.spec.load import read_unit
    ok = _write(tmp_path, "m.yaml", "apiVersion: v1\nkind: List\nitems:\n"
                "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: &d {k: v}}\n"
                "- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: *d}\n")
    unit = read_unit(ok)
    assert [i["data"] for d in unit.documents for i in d.data["items"]] == [{"k": "v"}] * 2
    assert not getattr(unit, "findings", [])
    # 10 scalars, then 11 levels of 10 aliases each: 10^12 nodes > 2^20 = 1,048,576.
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: c}", "data:",
             '  a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 12):
        lines.append(f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    bomb = _write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    unit = read_unit(bomb)
    assert unit.documents == [] and MAX_EXPANDED == 1 << 20
    assert [f.code for f in unit.findings] == ["LOAD005"]


def test_missing_model_config_is_a_finding(tmp_path):
    spec = _write(tmp_path, "s.yaml", "spec:\n  model:\n    config: nope/config.json\n")
    loaded = load_spec(spec)
    assert [f.code for f in loaded.findings] == ["LOAD011"]
    assert loaded.findings[0].path == "$.spec.model.config"
    assert loaded.findings[0].location.line == 3


def test_model_config_relative_to_the_file_that_sets_it(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"model_type": "deepseek_v3"}')
    spec = _write(tmp_path, "s.yaml", "spec:\n  model:\n    config: m/config.json\n")
    loaded = load_spec(spec)
    assert loaded.findings == [] and loaded.model_config == {"model_type": "deepseek_v3"}

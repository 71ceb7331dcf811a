"""The result cache prototype of ``gen validate`` (bench/validate_cache.py, issue #35 item 5):
a stored answer is given only while every input is unchanged. Each test changes one input of a
run that was stored (the spec, an overlay, the model's config.json, a waiver, moegen's files,
the environment, the arguments, the working directory) and fails if the cache answers from the
stored entry instead of running the checks again."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers import EXAMPLES, ROOT, load_script

cache = load_script("bench/validate_cache.py")
S1 = EXAMPLES / "s1-16xh20-pd.yaml"
CONFIG = ROOT / "generator" / "catalog" / "models" / "deepseek-v3.config.json"


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A cache in ``tmp_path``; ``runs.count`` counts the runs of the checks (misses)."""
    class Runs:
        count = 0
        env = {"MOEGEN_CACHE_DIR": str(tmp_path / "cache")}
    real = cache.run_and_record

    def counted(argv):
        Runs.count += 1
        return real(argv)

    monkeypatch.setattr(cache, "run_and_record", counted)
    monkeypatch.chdir(tmp_path)
    return Runs


def _gen(runs, capsys, *argv, env=None) -> tuple[int, str]:
    code = cache.main(["validate", *map(str, argv)], {**runs.env, **(env or {})})
    got = capsys.readouterr()
    return code, got.out + got.err


@pytest.fixture
def spec(tmp_path):
    """S1 with its model given as a config.json beside it (model.config)."""
    shutil.copy(CONFIG, tmp_path / "config.json")
    path = tmp_path / "s1.yaml"
    path.write_text(S1.read_text().replace("architecture: deepseek-v3", "config: config.json"))
    return path


def test_a_repeated_run_is_answered_from_the_cache(runs, capsys, spec):
    first = _gen(runs, capsys, spec)
    assert first[0] == 0 and "ok (0 errors, 0 warnings)" in first[1]
    assert _gen(runs, capsys, spec) == first
    assert runs.count == 1   # the second answer did not run the checks


def test_a_changed_spec_runs_again(runs, capsys, spec):
    _gen(runs, capsys, spec)
    spec.write_text(spec.read_text().replace("name: dsv3-pd", "name: Dsv3-pd"))
    code, text = _gen(runs, capsys, spec)
    assert runs.count == 2 and code == 1 and "metadata.name" in text


def test_a_changed_overlay_runs_again(runs, capsys, spec, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("metadata:\n  namespace: llm\n")
    assert _gen(runs, capsys, spec, "-f", overlay)[0] == 0
    overlay.write_text("metadata:\n  namespace: Not_A_Name\n")
    code, text = _gen(runs, capsys, spec, "-f", overlay)
    assert runs.count == 2 and code == 1 and "namespace" in text


def test_a_changed_model_config_runs_again(runs, capsys, spec, tmp_path):
    # The config.json is read by the spec loader, not named on the command line.
    assert _gen(runs, capsys, spec)[0] == 0
    (tmp_path / "config.json").write_text("{not json")
    code, _ = _gen(runs, capsys, spec)
    assert runs.count == 2 and code == 1
    (tmp_path / "config.json").unlink()   # and a file that goes missing
    assert _gen(runs, capsys, spec)[0] == 1 and runs.count == 3


def test_a_changed_waiver_runs_again(runs, capsys, spec, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("metadata:\n  namespace: llm\n")
    _, clean = _gen(runs, capsys, spec, "-f", overlay)
    # A skip that names a code nothing raised: reported as unused (SKP), so the text differs.
    overlay.write_text("metadata:\n  namespace: llm  # moegen:skip=NET100 reviewed by infra\n")
    _, waived = _gen(runs, capsys, spec, "-f", overlay)
    assert runs.count == 2 and waived != clean and "NET100" in waived


def test_changed_moegen_files_run_again(runs, capsys, spec, tmp_path, monkeypatch):
    # moegen's version is its installed files: one file changed (its size) is a new key.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "version.py").write_text("V = 1\n")
    monkeypatch.setattr(cache, "package_root", lambda: pkg)
    _gen(runs, capsys, spec)
    _gen(runs, capsys, spec)
    (pkg / "version.py").write_text("V = 12\n")
    _gen(runs, capsys, spec)
    assert runs.count == 2


@pytest.mark.parametrize("change", ["env", "argv", "cwd"])
def test_a_changed_run_is_a_new_key(runs, capsys, spec, tmp_path, monkeypatch, change):
    _gen(runs, capsys, spec)
    if change == "env":
        _gen(runs, capsys, spec, env={"MOEGEN_DEBUG": "1"})
    elif change == "argv":
        _gen(runs, capsys, spec, "--strict")
    else:
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        _gen(runs, capsys, spec)
    assert runs.count == 2


def test_the_cache_settings_are_not_part_of_the_key(tmp_path):
    key = [["validate", "s1.yaml"], str(tmp_path), tmp_path, (False, False)]
    assert cache.run_key(key[0], {"MOEGEN_CACHE_DIR": "/a"}, *key[1:]) == \
        cache.run_key(key[0], {"MOEGEN_CACHE_DIR": "/b", "HOME": "/x"}, *key[1:]) != \
        cache.run_key(key[0], {"MOEGEN_DEBUG": "1"}, *key[1:])


def test_standard_input_and_directories_are_not_cached(runs, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "run_and_record", lambda argv: pytest.fail("cached a run"))
    (tmp_path / "d").mkdir()
    shutil.copy(S1, tmp_path / "d" / "s1.yaml")
    assert _gen(runs, capsys, tmp_path / "d")[0] == 0
    assert not cache.cacheable(["validate", "-"])


def test_the_entry_names_every_file_read_with_its_hash(runs, capsys, spec, tmp_path):
    # The spec and its config.json, each with the SHA-256 of its bytes.
    import hashlib
    _gen(runs, capsys, spec)
    (entry,) = (tmp_path / "cache" / "validate").glob("*.json")
    reads = dict(json.loads(entry.read_text())["reads"])
    assert reads == {str(spec): hashlib.sha256(spec.read_bytes()).hexdigest(),
                     str(tmp_path / "config.json"): hashlib.sha256(CONFIG.read_bytes()).hexdigest()}

"""The writer: ownership, atomic replacement, stale files, and --check."""

from __future__ import annotations

import pytest

from generator.emit import MARKER, diff_tree, write_tree
from generator.errors import UsageError


def test_write_then_rewrite_removes_stale(tmp_path):
    out = tmp_path / "out"
    r1 = write_tree(out, {"a.yaml": "a\n", "env/x.env": "X=1\n"})
    assert r1.added == ["a.yaml", "env/x.env"] and (out / MARKER).is_file()
    r2 = write_tree(out, {"a.yaml": "a2\n", "b.yaml": "b\n"})
    assert r2.changed == ["a.yaml"] and r2.added == ["b.yaml"] and r2.removed == ["env/x.env"]
    assert not (out / "env" / "x.env").exists()
    assert (out / "a.yaml").read_text() == "a2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temp dirs left


def test_refuses_directory_it_does_not_own(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.yaml").write_text("user file\n")
    with pytest.raises(UsageError, match="not written by moegen"):
        write_tree(out, {"a.yaml": "a\n"})
    assert (out / "mine.yaml").read_text() == "user file\n"


def test_refuses_foreign_file_in_owned_directory(tmp_path):
    out = tmp_path / "out"
    write_tree(out, {"a.yaml": "a\n"})
    (out / "notes.txt").write_text("keep me\n")
    with pytest.raises(UsageError, match="notes.txt"):
        write_tree(out, {"a.yaml": "a\n"})
    assert (out / "notes.txt").exists() and (out / "a.yaml").exists()


def test_empty_existing_directory_is_fine(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write_tree(out, {"a.yaml": "a\n"})
    assert (out / "a.yaml").read_text() == "a\n"


def test_diff_tree(tmp_path):
    out = tmp_path / "out"
    files = {"a.yaml": "a\n", "b.yaml": "b\n"}
    write_tree(out, files)
    assert diff_tree(out, files) == []
    (out / "a.yaml").write_text("changed\n")
    (out / "b.yaml").unlink()
    (out / "c.yaml").write_text("c\n")
    changes = diff_tree(out, files)
    heads = [c for c in changes if not c.startswith("    ")]
    assert heads == ["M a.yaml", "A b.yaml (missing; a render would write it)",
                     "? c.yaml (not written by moegen; a render would refuse the directory)"]
    # A file of an earlier render that the new one drops is reported as a removal.
    (out / "c.yaml").unlink()
    write_tree(out, {**files, "old.yaml": "o\n"})
    assert "D old.yaml (a render would remove it)" in diff_tree(out, files)


def test_unchanged_rerender_writes_nothing(tmp_path):
    out = tmp_path / "out"
    files = {"a.yaml": "a: 1\n", "env/b.env": "B=2\n"}
    write_tree(out, files)
    inode = out.stat().st_ino, (out / "a.yaml").stat().st_ino
    res = write_tree(out, dict(files))
    assert (res.added, res.changed, res.removed) == ([], [], [])
    assert (out.stat().st_ino, (out / "a.yaml").stat().st_ino) == inode   # same tree, untouched
    res = write_tree(out, {**files, "a.yaml": "a: 2\n"})
    assert res.changed == ["a.yaml"]
    assert (out / "a.yaml").read_text() == "a: 2\n" and out.stat().st_ino != inode[0]
    # An edited marker is restored even when every file is unchanged.
    (out / MARKER).write_text("# edited\na.yaml\nenv/b.env\n")
    write_tree(out, {**files, "a.yaml": "a: 2\n"})
    assert (out / MARKER).read_text().splitlines()[1:] == ["a.yaml", "env/b.env"]

"""Prototype, not part of the package (issue #35 item 5): a content-addressed result cache for
``gen validate``, as ruff and mypy keep one, answering a repeated run without importing click,
ruamel.yaml or pydantic; and what it costs, cold and warm, beside ``gen validate`` itself.

Why: the libraries every ``gen validate`` needs (the interpreter, click, ruamel.yaml, pydantic
through its first validated model and the importlib.metadata its plugin loader imports) cost
more than the 0.15 s goal by themselves (bench/startup.py, its ``floor`` row), so only a run
that skips them can reach it.

The key of a run (:func:`run_key`): moegen's installed files (each file of the ``generator``
package: path, size and mtime; any reinstall or edit changes it), the interpreter, the working
directory, the arguments, whether stdout/stderr are terminals, and the environment that can
change the answer (``MOEGEN_*``, ``PYDANTIC_*``, ``COLUMNS``, ``NO_COLOR``, ``TERM``, ``LANG``,
``LC_*``). The entry stored under it names every file ``generator/spec/load.py`` read
(``read_text``: the specs, overlays and their waivers, the model's ``config.json``, the env files
of a kustomization, a calibration profile) with the SHA-256 of its bytes (or that it was missing
or a directory); a hit re-reads each and answers only when all are unchanged. Not cached: a run
that reads standard input or names a directory (its listing is not in the key), a run whose
stdout is a terminal (the stored text is a pipe's), and exit code 2 and 4 (usage errors, bugs).

    python bench/validate_cache.py validate SPEC...   # gen validate through the cache
    python bench/validate_cache.py --measure [runs]   # cold and warm CPU beside gen validate

``MOEGEN_CACHE_DIR`` names the cache directory (default ``$XDG_CACHE_HOME/moegen`` or
``~/.cache/moegen``); ``MOEGEN_CACHE=miss`` runs and stores without looking up (a cold run).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import sys
from pathlib import Path

#: The environment that can change what ``gen validate`` prints (besides moegen's own).
ENV_PREFIXES = ("MOEGEN_", "PYDANTIC_", "LC_")
ENV_NAMES = ("COLUMNS", "NO_COLOR", "TERM", "LANG")
NOT_IN_KEY = ("MOEGEN_CACHE_DIR", "MOEGEN_CACHE")
#: Exit codes a result is stored for: ok, rejected (1: findings; 3 is render --check's).
CACHED_CODES = (0, 1)


def package_files(root: Path) -> list[tuple[str, int, int]]:
    """(path under ``root``, size, mtime ns) of every file of the package but bytecode."""
    out = []
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            st = os.stat(os.path.join(top, name))
            out.append((os.path.relpath(os.path.join(top, name), root), st.st_size,
                        st.st_mtime_ns))
    return out


def package_root() -> Path:
    """The ``generator`` package's directory, found without importing it."""
    spec = importlib.util.find_spec("generator")
    assert spec is not None and spec.origin is not None, "moegen is not installed"
    return Path(spec.origin).parent


def run_key(argv: list[str], env: dict[str, str], cwd: str, root: Path, ttys: tuple) -> str:
    """The key of one run (see the module's docstring)."""
    kept = {k: v for k, v in sorted(env.items())
            if (k.startswith(ENV_PREFIXES) or k in ENV_NAMES) and k not in NOT_IN_KEY}
    doc = {"argv": argv, "env": kept, "cwd": cwd, "ttys": list(ttys),
           "python": [sys.executable, sys.version], "package": package_files(root)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def file_state(path: str) -> str:
    """The SHA-256 of a file's bytes, or ``missing`` / ``directory`` / ``unreadable``."""
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except IsADirectoryError:
        return "directory"
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"


def cache_dir(env: dict[str, str]) -> Path:
    if env.get("MOEGEN_CACHE_DIR"):
        return Path(env["MOEGEN_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "moegen"


def lookup(entry_path: Path) -> dict | None:
    """The stored result when every file it read is unchanged, else None."""
    try:
        entry = json.loads(entry_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if all(file_state(path) == state for path, state in entry["reads"]):
        return entry
    return None


def cacheable(argv: list[str]) -> bool:
    """A ``gen validate`` whose inputs are files (no standard input, no directory)."""
    return bool(argv) and argv[0] == "validate" and "-" not in argv[1:] \
        and not any(os.path.isdir(a) for a in argv[1:])


def run_and_record(argv: list[str]) -> tuple[int, str, str, list[tuple[str, str]]]:
    """Run ``gen argv`` in this process: (exit code, stdout, stderr, the files load.py read)."""
    from generator.spec import load
    reads: dict[str, str] = {}
    read_text = load.read_text

    def recording(path, display, limit):
        if str(path) != load.STDIN:
            reads[os.path.abspath(path)] = file_state(str(path))
        return read_text(path, display, limit)

    load.read_text = recording   # before generator.cli: modules bind it when they import it
    from generator.cli import run
    out, err = io.StringIO(), io.StringIO()
    real = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = run(argv)
    finally:
        sys.stdout, sys.stderr = real
        load.read_text = read_text
    return code, out.getvalue(), err.getvalue(), sorted(reads.items())


def main(argv: list[str], env: dict[str, str] | None = None) -> int:
    """``gen argv`` through the cache; the exit code."""
    env = dict(os.environ if env is None else env)
    if not cacheable(argv) or sys.stdout.isatty():
        from generator.cli import run
        return run(argv)
    ttys = (sys.stdout.isatty(), sys.stderr.isatty())
    entry_path = cache_dir(env) / "validate" / (
        run_key(argv, env, os.getcwd(), package_root(), ttys) + ".json")
    hit = None if env.get("MOEGEN_CACHE") == "miss" else lookup(entry_path)
    if hit is None:
        code, out, err, reads = run_and_record(argv)
        if code in CACHED_CODES:
            entry_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = entry_path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"reads": reads, "out": out, "err": err, "code": code}),
                           encoding="utf-8")
            os.replace(tmp, entry_path)
        hit = {"out": out, "err": err, "code": code}
    sys.stdout.write(hit["out"])
    sys.stderr.write(hit["err"])
    return hit["code"]


def measure(runs: int) -> int:
    """Median CPU of gen validate S1, the cache's cold run (look-up skipped, result stored) and
    its warm run (a hit), in the same rounds (bench/startup.py's round robin)."""
    import shutil
    import tempfile
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from startup import S1, round_robin
    gen = shutil.which("gen")
    if not gen:
        raise SystemExit("install the project first (gen is not on PATH)")
    me = [sys.executable, str(Path(__file__).resolve()), "validate", str(S1)]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MOEGEN_CACHE_DIR"] = tmp
        rows = [("python -c pass", [sys.executable, "-c", "pass"]),
                ("gen validate S1", [gen, "validate", str(S1)]),
                ("cache cold (miss, stored)", ["env", "MOEGEN_CACHE=miss", *me]),
                ("cache warm (hit)", me)]
        got = round_robin(rows, runs)
    print(f"median of {runs} rounds (wall / CPU user+system), load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for label, (wall, cpu) in got.items():
        print(f"{label:42} {wall:6.3f} s  {cpu:6.3f} s")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        sys.exit(measure(int(sys.argv[2]) if len(sys.argv) > 2 else 15))
    sys.exit(main(sys.argv[1:]))

"""Whole-process speed of ``gen validate`` (issue #24 goals: one spec < 0.25 s; 100 specs in one
process < 3 s), and of validating manifests (the importer's path), as a user runs them.

Each figure is the median of N runs of a fresh ``gen`` process (bytecode cached: the first,
untimed run writes it, as an installed package has it) in wall time and in CPU time (user +
system of the child, from ``os.wait4``). On a machine other jobs share, wall time grows with the
load; the CPU time is what the process itself costs. Printed:

* ``python -c pass`` (the interpreter's own start) and ``import generator.cli``;
* ``gen validate`` of the S1 example;
* ``gen validate`` of 100 different specs in one process (S1 with 100 different concurrencies and
  context lengths, so no two are sized alike);
* ``gen validate`` of S1's rendered tree (14 files: the manifests are imported, then checked);
* ``gen validate`` of the twenty third-party manifests of ../shared/reference/manifests, when
  present (one process).

    python bench/validate_speed.py [runs]

``MOEGEN_GEN`` names another ``gen`` command to time (e.g. ``python -m generator`` run in an
older checkout, for a before/after comparison); an input that command does not take (exit 2)
prints n/a.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
S1 = ROOT / "examples" / "s1-16xh20-pd.yaml"
REFERENCE = ROOT.parent / "shared" / "reference" / "manifests"


def _once(argv: list[str], env: dict) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def measure(argv: list[str], runs: int, ok=(0,)) -> tuple[float, float] | None:
    """Median (wall, CPU) seconds of ``runs`` runs after one untimed warm-up run (None when the
    command refuses the input: exit 2)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if _once(argv, env)[2] == 2:
        return None
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, code = _once(argv, env)
        if code not in ok:
            raise SystemExit(f"{' '.join(argv)} exited {code}")
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def hundred_specs(directory: Path) -> Path:
    """100 variants of S1 (concurrency 101..200 and maxModelLen 16k..32k): distinct specs."""
    text = S1.read_text()
    for i in range(100):
        variant = (text.replace("sizing: {concurrency: 200}", f"sizing: {{concurrency: {101 + i}}}")
                   .replace("maxModelLen: 32768", f"maxModelLen: {16384 + 160 * i}"))
        (directory / f"s1-{i:03d}.yaml").write_text(variant)
    return directory


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 7
    gen_cmd = os.environ.get("MOEGEN_GEN", "").split() or [shutil.which("gen") or ""]
    if not gen_cmd[0]:
        raise SystemExit("install the project first (gen is not on PATH)")
    py = sys.executable
    load = os.getloadavg()[0]
    print(f"median of {runs} runs (wall / CPU user+system), load average {load:.1f} on "
          f"{os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "specs").mkdir()
        specs = hundred_specs(tmp_path / "specs")
        tree = tmp_path / "s1"
        subprocess.run([*gen_cmd, "render", str(S1), "-o", str(tree)], check=True,
                       capture_output=True)
        gen = gen_cmd
        rows = [
            ("python -c pass", [py, "-c", "pass"], (0,)),
            ("import generator.cli", [py, "-c", "import generator.cli"], (0,)),
            ("gen validate S1 (one spec)", [*gen, "validate", str(S1)], (0,)),
            ("gen validate 100 specs, one process", [*gen, "validate", str(specs)], (0, 1)),
            ("gen validate S1's rendered tree", [*gen, "validate", str(tree)], (0,)),
        ]
        if REFERENCE.is_dir():
            rows.append(("gen validate 20 reference manifests",
                         [*gen, "validate", str(REFERENCE), "--gpu", "H200-141GB"], (0, 1)))
        for label, cmd, ok in rows:
            got = measure(cmd, runs if "100" not in label else max(3, runs // 2), ok)
            print(f"{label:42} " + (f"{got[0]:6.2f} s  {got[1]:6.2f} s" if got else "   n/a"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

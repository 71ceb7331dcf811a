"""Start-up cost of ``gen validate`` of the S1 example in CPU time (issue #35 item 5: goal
< 0.15 s of user + system CPU on the 2-core CI machine), beside what no moegen change can remove.

Each row is the median of N fresh processes, run round-robin (one run of every row per round,
so a change in the machine's load moves every row alike), after one untimed warm-up run that
writes the bytecode an installed package has (``PYTHONDONTWRITEBYTECODE`` is cleared for the
children). CPU time is user + system of the child (``os.wait4``); wall time grows with the load
of a shared machine, CPU time much less. Rows:

* ``python -c pass``: the interpreter's own start;
* ``libraries``: importing what every ``gen`` run needs and nothing of moegen's: click, ruamel.yaml,
  pydantic's BaseModel and importlib.metadata (pydantic's plugin loader imports it when it
  builds the first validator);
* ``pydantic alone``: one one-field pydantic model defined and validated with plugins off, nothing
  else: the price of SPEC.md section 1's "pydantic models (types, defaults)" step by itself. On the
  CI machine kind (2-core AMD EPYC, CPython 3.11, pydantic 2.14) it counts 560M instructions under
  callgrind against ``gen validate``'s 1,525M (0.145 s of the 0.15 s goal at the ratio
  ``gen validate`` runs at): ``import pydantic_core`` (its 5 MB extension module) is 218M of them;
* ``floor``: the same libraries as ``gen validate`` uses them, still nothing of moegen's: click,
  ruamel.yaml, and one one-field pydantic model defined and validated with plugins off as
  ``gen`` runs (``PYDANTIC_DISABLE_PLUGINS``): pydantic's schema builder and the
  importlib.metadata its plugin loader imports (``pydantic/plugin/_loader.py`` imports
  ``entry_points`` at module level, whatever the switch says) load only then. No moegen change
  removes this while the spec is validated with pydantic and read with ruamel.yaml;
* ``import generator.cli``;
* ``gen validate S1``: the whole command, and its ratio to the interpreter's start.

    python bench/startup.py [runs]

``MOEGEN_GEN`` names another ``gen`` command to compare (e.g. ``python -m generator`` run in
another checkout: ``MOEGEN_GEN="/path/.venv/bin/python -m generator"``); its row is timed in the
same rounds, beside this checkout's ``python -m generator`` (the same form: runpy costs what the
``gen`` script does not). Every command runs in ``/`` (so ``python -m generator`` imports the
package its ``PYTHONPATH`` or installation names, not the current directory's). Differences of
a few ms are below the noise of a shared machine; ``valgrind --tool=callgrind`` counts a
command's instructions whatever the load (``I refs``).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
S1 = ROOT / "examples" / "s1-16xh20-pd.yaml"
LIBRARIES = "import click, ruamel.yaml, importlib.metadata; from pydantic import BaseModel"
PYDANTIC = ("import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
            "from pydantic import BaseModel\n"
            "class M(BaseModel):\n    x: int = 0\nM.model_validate({'x': 1})")
FLOOR = ("import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
         "import click, ruamel.yaml\nfrom pydantic import BaseModel\n"
         "class M(BaseModel):\n    x: int = 0\nM.model_validate({'x': 1})")


def _once(argv: list[str], env: dict) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd="/", stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime,
            os.waitstatus_to_exitcode(status))


def round_robin(rows: list[tuple[str, list[str]]], runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall s, CPU s) per row label over ``runs`` rounds (after one warm-up round)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for label, argv in rows:
        if _once(argv, env)[2] != 0:
            raise SystemExit(f"{label}: {' '.join(argv)} failed")
    times: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in rows}
    for _ in range(runs):
        for label, argv in rows:
            wall, cpu, code = _once(argv, env)
            if code != 0:
                raise SystemExit(f"{label}: {' '.join(argv)} exited {code}")
            times[label].append((wall, cpu))
    return {label: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
            for label, t in times.items()}


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 15
    gen = shutil.which("gen")
    if not gen:
        raise SystemExit("install the project first (gen is not on PATH)")
    py = sys.executable
    rows = [("python -c pass", [py, "-c", "pass"]),
            ("libraries (click, ruamel, pydantic)", [py, "-c", LIBRARIES]),
            ("pydantic alone (a model validated)", [py, "-c", PYDANTIC]),
            ("floor (the libraries, a model validated)", [py, "-c", FLOOR]),
            ("import generator.cli", [py, "-c", "import generator.cli"]),
            ("gen validate S1", [gen, "validate", str(S1)])]
    other = os.environ.get("MOEGEN_GEN", "").split()
    if other:   # like for like: this checkout the same way (python -m runs runpy, gen does not)
        rows.append(("python -m generator validate S1", [py, "-m", "generator", "validate",
                                                         str(S1)]))
        rows.append((f"{' '.join(other)[-30:]} validate S1", [*other, "validate", str(S1)]))
    load = os.getloadavg()[0]
    got = round_robin(rows, runs)
    bare = got["python -c pass"][1]
    print(f"median of {runs} rounds (wall / CPU user+system), load average {load:.1f} on "
          f"{os.cpu_count()} CPUs")
    for label, (wall, cpu) in got.items():
        ratio = f"  {cpu / bare:5.1f}x bare start" if bare > 0 and label != "python -c pass" else ""
        print(f"{label:42} {wall:6.3f} s  {cpu:6.3f} s{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Regenerate docs/screenshots/<example>.png: the review page of every example, rendered by
headless Chromium (Debian package chromium). Commit the PNGs so visual changes show in review.

    python tools/screenshots.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.cli import run  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--window-size=1500,1300"]


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium not found (apt-get install chromium)", file=sys.stderr)
        return 2
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in sorted((ROOT / "examples").glob("*.yaml")):
            page = Path(tmp) / f"{spec.stem}.html"
            if run(["report", str(spec), "-o", str(page)]) != 0:
                return 1
            subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp}/profile",
                            f"--screenshot={out / (spec.stem + '.png')}", page.as_uri()],
                           check=True, capture_output=True, timeout=120)
            print(out / (spec.stem + ".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

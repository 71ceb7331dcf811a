"""Every option of every known engine release, for checking ``roles[].engineArgs``.

Data: ``engines/data/engine-options.json`` (``tools/extract_engine_options.py``, from the engines'
own parsers: vLLM's ``vllm serve`` and SGLang's ``launch_server`` of each release). An option
string belongs to a release when its parser accepts it; aliases (``-tp``,
``--tensor-parallel-size``/``--tp-size``, ``--no-x``/``--disable-x`` negations) fold to one
canonical name so a derived flag is recognised under any spelling.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from functools import cache

from ..resources import package_text


@cache
def _data() -> dict:
    return json.loads(package_text("engines", "data", "engine-options.json"))


@dataclass(frozen=True)
class ReleaseOptions:
    """The option strings one engine release accepts."""

    engine: str
    version: str
    options: frozenset[str]
    aliases: dict[str, str]

    def canonical(self, flag: str) -> str | None:
        """The canonical name of ``flag`` (``--x=v`` allowed), or None if the release lacks it."""
        name = flag.split("=", 1)[0]
        if name not in self.options:
            return None
        return self.aliases.get(name, name)

    def suggest(self, flag: str) -> list[str]:
        """Up to three option names close to ``flag``."""
        return difflib.get_close_matches(flag.split("=", 1)[0], sorted(self.options), n=3,
                                         cutoff=0.75)


def known_releases(engine: str) -> list[str]:
    """Releases whose complete option list moegen ships, oldest first."""
    return list(_data()[engine]["order"])


@cache
def release_options(engine: str, version: str) -> ReleaseOptions | None:
    """The options of ``engine`` release ``version`` (None when its list is not shipped)."""
    data = _data()[engine]
    releases = data["releases"]
    if version not in releases:
        return None
    opts: set[str] = set()
    for v in data["order"]:   # the base release, then additions/removals in release order
        entry = releases[v]
        if "options" in entry:
            opts = set(entry["options"])
        else:
            opts = (opts | set(entry["added"])) - set(entry["removed"])
        if v == version:
            break
    return ReleaseOptions(engine, version, frozenset(opts), dict(data["aliases"]))

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
import re
from dataclasses import dataclass
from functools import cache

from ..errors import closest
from ..resources import package_text

#: A token that is an option (``-tp``, ``--x``, ``--x=v``), not a negative number value.
FLAG = re.compile(r"^--?[A-Za-z]")
#: vLLM's API-server count (its spellings): moegen passes it to the pods that serve the API
#: only (a headless worker refuses it, vllm/entrypoints/cli/serve.py), and 0 is refused.
API_SERVER_COUNT = frozenset({"--api-server-count", "-asc"})


def option_value(args: list[str], j: int) -> str | None:
    """The value of the option at ``args[j]`` (``--x=v`` or ``--x v``)."""
    name, eq, value = args[j].partition("=")
    if eq:
        return value
    return args[j + 1] if j + 1 < len(args) and not FLAG.match(args[j + 1]) else None


def split_api_args(args: list[str]) -> tuple[list[str], list[str]]:
    """engineArgs -> (arguments of every pod, arguments of the pods that serve the API only):
    ``--api-server-count N`` goes to the serving pods (vLLM headless workers refuse it)."""
    common: list[str] = []
    serving: list[str] = []
    skip = False
    for j, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a.partition("=")[0] in API_SERVER_COUNT:
            serving.append(a)
            if "=" not in a and j + 1 < len(args) and not FLAG.match(args[j + 1]):
                serving.append(args[j + 1])
                skip = True
            continue
        common.append(a)
    return common, serving


def option_flags(args: list[str]):
    """(index, token) of every option token of an engineArgs list."""
    for j, a in enumerate(args):
        if FLAG.match(a):
            yield j, a



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
        """The canonical name of ``flag`` (``--x=v`` allowed), or None if the release lacks it.
        Aliases fold to one name across every release (``--tp-size`` and
        ``--tensor-parallel-size`` give the same answer whichever a release lists first)."""
        name = flag.split("=", 1)[0]
        if name not in self.options:
            return None
        return self.aliases.get(name, name)

    def names(self, flag: str) -> frozenset[str]:
        """Every spelling of ``flag``'s option (itself, its aliases, its negation)."""
        name = flag.split("=", 1)[0]
        c = self.aliases.get(name, name)
        return frozenset({c} | {a for a, t in self.aliases.items() if t == c})

    def suggest(self, flag: str) -> list[str]:
        """Up to three option names close to ``flag``."""
        return difflib.get_close_matches(flag.split("=", 1)[0], sorted(self.options), n=3,
                                         cutoff=0.75)


#: What an option takes (argparse nargs of the current release's parser, engine-options.json
#: ``arity``): nothing (a flag), one value, a list of one or more, or an optional value.
TAKES_NONE, TAKES_ONE, TAKES_LIST, TAKES_OPTIONAL = "flag", "one", "list", "optional"


@cache
def _arity(engine: str) -> dict[str, str]:
    table = _data()[engine]["arity"]
    return {**{o: TAKES_LIST for o in table["lists"]},
            **{o: TAKES_OPTIONAL for o in table["optional"]},
            **{o: TAKES_NONE for o in table["flags"]}}


def option_arity(engine: str, name: str) -> str:
    """How many values ``name`` (an option string, any spelling) takes: :data:`TAKES_NONE`,
    :data:`TAKES_ONE`, :data:`TAKES_LIST` or :data:`TAKES_OPTIONAL`, as the current release's parser reads it
    (the option strings of every action, aliases and ``--no-`` negations included). An option
    the current release no longer has is a flag when named like one (``--enable-``,
    ``--disable-``, ``--no-``), else takes one value."""
    arity = _arity(engine)
    if name in arity:
        return arity[name]
    current = release_options(engine, _data()[engine]["current"])
    if current is not None and name in current.options:
        return TAKES_ONE   # the current parser's, not a flag (--disable-access-log-for-endpoints)
    if name.startswith(("--enable-", "--disable-", "--no-")):
        return TAKES_NONE
    return TAKES_ONE


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
    return ReleaseOptions(engine, version, frozenset(opts), _fold(data["aliases"]))


def _fold(aliases: dict[str, str]) -> dict[str, str]:
    """Alias pairs (any direction, any release) -> one canonical name per option: its
    alphabetically first spelling that starts with ``--``."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for a, b in aliases.items():
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    groups: dict[str, list[str]] = {}
    for name in set(aliases) | set(aliases.values()):
        groups.setdefault(find(name), []).append(name)
    out = {}
    for names in groups.values():
        longs = sorted(n for n in names if n.startswith("--")) or sorted(names)
        for n in names:
            if n != longs[0]:
                out[n] = longs[0]
    return out


# -- option values (rule ENG006, the importer) ---------------------------------------------------

#: vLLM 0.33.0 / SGLang 0.5.23 ``human_readable_int``: an integer, or a number with a decimal
#: (k/m/g/t: x1000) or binary (K/M/G/T: x1024, integers only) suffix.
_HUMAN = re.compile(r"\s*(\d+(?:\.\d+)?[kmgt]|\d+[KMGT])\s*")
_TYPE_WORDS = {"int": "an integer", "float": "a number",
               "human_int": "an integer (or with a suffix: 25.6k, 2M)",
               "human_int_or_auto": "an integer (or with a suffix: 25.6k, 2M), or auto"}
_SHORT_WORDS = {"int": "an integer", "float": "a number", "human_int": "an integer",
                "human_int_or_auto": "an integer"}


@cache
def _vllm_releases() -> dict:
    return json.loads(package_text("engines", "data", "vllm-releases.json"))["releases"]


def _parses(kind: str, value: str) -> bool:
    if kind in ("human_int", "human_int_or_auto"):
        if kind == "human_int_or_auto" and value.strip().lower() in ("auto", "-1"):
            return True
        if _HUMAN.fullmatch(value):
            return True
        kind = "int"
    try:
        (int if kind == "int" else float)(value)
    except ValueError:
        return False
    return True


def value_choices(engine: str, version: str | None, name: str) -> tuple[list[str], str] | None:
    """(the values option string ``name`` takes at ``version``, the release they are of), or
    None when moegen has no list for that release: the current release's parser dump
    (engine-options.json ``values``), vLLM's ``--kv-cache-dtype`` and ``--all2all-backend`` of
    every release (vllm-releases.json ``kvCacheDtypes``, ``all2all.flagChoices``)."""
    if engine == "vllm" and version in _vllm_releases():
        facts = _vllm_releases()[version]
        if name == "--kv-cache-dtype":
            return list(facts["kvCacheDtypes"]), version
        if name == "--all2all-backend" and facts["all2all"]["flagChoices"]:
            return list(facts["all2all"]["flagChoices"]), version
    data = _data()[engine]
    entry = data["values"].get(name, {})
    if "choices" in entry and version == data["current"]:
        return [str(c) for c in entry["choices"]], version
    return None


def value_problem(engine: str, version: str | None, name: str, value: str) -> tuple[str, str] | None:
    """(what the engine's parser says about ``value`` of option string ``name`` at
    ``version`` (None: a release moegen does not know), a hint with the allowed values), or
    None when it accepts it or moegen cannot tell. The type is the current release's (a type does not change between releases), the
    choices those of :func:`value_choices`."""
    data = _data()[engine]
    entry = data["values"].get(name, {})
    kind = entry.get("type")
    if entry.get("none") and value in ("None", ""):
        return None
    if kind and not _parses(kind, value):
        return f"{value!r} is not {_SHORT_WORDS[kind]}", f"give {_TYPE_WORDS[kind]}"
    choices = value_choices(engine, version, name)
    if choices is None:
        return None
    allowed = choices[0]
    if kind in ("int", "float"):
        try:
            ok = (int if kind == "int" else float)(value) in [
                (int if kind == "int" else float)(c) for c in allowed]
        except ValueError:
            ok = False
    else:
        ok = value in allowed
    if ok:
        return None
    near = None if kind else closest(value, allowed)
    return (f"{value!r} is not one of its choices",
            (f"did you mean {near!r}? " if near else "")
            + f"one of: {', '.join(allowed)}")


def arity_problem(engine: str, name: str, values: list[str], inline: bool) -> str | None:
    """What the parser says about the number of values given to option string ``name`` (the
    tokens after it up to the next option, or one ``--x=v`` value), or None."""
    current = release_options(engine, _data()[engine]["current"])
    if current is None or name not in current.options:
        return None   # the arity is the current release's parser's
    takes = option_arity(engine, name)
    if takes == TAKES_ONE and not values:
        return f"{name} expects one value (argparse: expected one argument)"
    if takes == TAKES_NONE and inline:
        return f"{name} takes no value (argparse: ignored explicit argument)"
    return None

"""Find the engine in a command line and read its options the way the engine's own parser does.

Entry points (the programs an engine container runs):

* vLLM: ``vllm serve [MODEL]`` (vllm/entrypoints/cli/serve.py) and the older
  ``python -m vllm.entrypoints.openai.api_server`` (vllm/entrypoints/openai/api_server.py),
  whose model is ``--model``; the image ``vllm/vllm-openai``'s entrypoint is ``vllm serve``
  (docker/Dockerfile of the vLLM release: ``ENTRYPOINT ["vllm", "serve"]``);
* SGLang: ``python -m sglang.launch_server`` (python/sglang/launch_server.py) and
  ``sglang serve`` (python/sglang/cli/serve.py);
* the Dynamo wrappers ``python -m dynamo.vllm`` / ``python -m dynamo.sglang``
  (ai-dynamo/dynamo components/src/dynamo/vllm, .../sglang), which take the engine's options
  plus their own, per Dynamo release (:func:`_wrapper_options`).

Options are read with the release's own option table (``engines/options.py``: every option
string of every argparse action, aliases folded, and each option's arity from the parser):
``--x=v`` and ``--x v``, flags that take no value (``store_true`` and
``BooleanOptionalAction`` with its ``--no-x`` form), options that take a list. vLLM's parser
also accepts ``--x_y`` for ``--x-y`` (vllm/utils/argparse_utils.py FlexibleArgumentParser
replaces underscores in long option names); SGLang's plain argparse does not.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache

from ..engines.options import TAKES_LIST as LIST
from ..engines.options import TAKES_NONE as FLAG
from ..engines.options import TAKES_OPTIONAL as OPTIONAL
from ..engines.options import option_arity, release_options

#: A token that is an option (``-tp``, ``--x``, ``--x=v``), not a negative number value.
_OPTION = re.compile(r"^--?[A-Za-z]")
_PYTHON = re.compile(r"^(.*/)?python[0-9.]*$")

#: Module entry points -> (engine, wrapper or "").
MODULES = {
    "vllm.entrypoints.openai.api_server": ("vllm", ""),
    "vllm.entrypoints.api_server": ("vllm", ""),
    "sglang.launch_server": ("sglang", ""),
    "dynamo.vllm": ("vllm", "dynamo"),
    "dynamo.sglang": ("sglang", "dynamo"),
}
#: The Dynamo wrappers' own options per Dynamo release, with their arity: read by
#: tools/extract_wrappers.py from ai-dynamo/dynamo at each release's branch cut
#: (components/src/dynamo/common/configuration/groups/runtime_args.py, the options every worker
#: shares; components/src/dynamo/{vllm,sglang}/backend_args.py, the backend's), into
#: generator/facts/data/wrappers.json. The wrapper consumes them; the engine never sees them.
_ARITY = {"one": "one", "flag": FLAG, "list": LIST}


@cache
def _wrappers() -> dict:
    from ..resources import package_text
    return json.loads(package_text("facts", "data", "wrappers.json"))["dynamo"]


def _wrapper_options(engine: str, release: str | None = None) -> dict[str, str]:
    """The Dynamo wrapper's options for ``engine`` at Dynamo ``release`` (a release moegen read;
    otherwise main at the commit tools/extract_wrappers.py names), ``--no-X`` of each flag."""
    data = _wrappers()
    rel = data.get(release or "", data["main"])
    table = {k: _ARITY[v] for group in ("common", engine)
             for k, v in rel[group]["options"].items()}
    return {**table, **{"--no-" + k[2:]: FLAG for k, v in table.items() if v == FLAG}}


@dataclass(frozen=True)
class Option:
    """One option as the engine reads it.

    Attributes:
        name: as written (``--tp``, ``--kv_transfer_config``).
        canonical: the release-independent name (``--tensor-parallel-size``).
        value: its value (None for a flag; a list for a list option).
        index: argv index of the option token (values follow it, or ``=`` joins them).
        known: the release has the option (or the wrapper does).
        wrapper: the option is the Dynamo wrapper's, not the engine's.
    """

    name: str
    canonical: str
    value: str | list[str] | None
    index: int
    known: bool = True
    wrapper: bool = False

    def is_negative(self, positive: str | None = None) -> bool:
        """A negative spelling of flag ``positive`` (its value is False): ``--no-x``, or
        ``--disable-x`` for ``--enable-x`` and the other way round (default: ``--no-`` and
        ``--disable-`` spellings)."""
        if positive is None:
            return self.name.startswith(("--no-", "--disable-"))
        if self.name == positive:
            return False
        return self.name.startswith("--no-") or (
            self.name.startswith("--disable-") != positive.startswith("--disable-"))

    def text(self) -> list[str]:
        """The option as argv tokens (for ``engineArgs``)."""
        if self.value is None:
            return [self.name]
        if isinstance(self.value, list):
            return [self.name, *self.value]
        return [self.name, self.value]


@dataclass
class EngineCommand:
    """The engine a command runs and its options.

    Attributes:
        engine: ``vllm`` | ``sglang``; wrapper: ``dynamo`` or "".
        program: the tokens that start the engine (``vllm serve``, ``python3 -m ...``).
        start: argv index of the first engine argument (after ``program`` and the model).
        model: the positional model (``vllm serve MODEL``) or None.
        options: every option in order; positional: tokens that are no option's value.
    """

    engine: str
    wrapper: str
    program: list[str]
    start: int
    model: str | None
    options: list[Option] = field(default_factory=list)
    model_index: int | None = None
    positional: list[tuple[int, str]] = field(default_factory=list)

    def get(self, *names: str) -> Option | None:
        """The last option whose canonical name is one of ``names`` (the engines' parsers keep
        the last value of a repeated option)."""
        want = {canonical(self.engine, None, n)[0] for n in names}
        found = None
        for o in self.options:
            if o.canonical in want:
                found = o
        return found

    def value(self, *names: str) -> str | None:
        o = self.get(*names)
        if o is None or o.value is None:
            return None
        return o.value if isinstance(o.value, str) else " ".join(o.value)

    def flag(self, name: str) -> bool | None:
        """A boolean option's value (True, False for its negative spelling, None if absent)."""
        o = self.get(name)
        return None if o is None else not o.is_negative(name)

    def json(self, *names: str) -> dict | None:
        """A JSON-valued option (``--kv-transfer-config``) parsed, or None."""
        text = self.value(*names)
        if text is None:
            return None
        try:
            out = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return None
        return out if isinstance(out, dict) else None


def find_engine(argv: list[str]) -> tuple[str, str, int, int] | None:
    """(engine, wrapper, index of the program's first token, index of its first argument) of
    the engine ``argv`` starts, or None."""
    for i, tok in enumerate(argv):
        base = tok.rsplit("/", 1)[-1]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if base in ("vllm", "sglang") and nxt == "serve":
            return base, "", i, i + 2
        if _PYTHON.match(tok) and nxt == "-m" and i + 2 < len(argv) and argv[i + 2] in MODULES:
            engine, wrapper = MODULES[argv[i + 2]]
            return engine, wrapper, i, i + 3
        if tok == "-m" and nxt in MODULES and i == 0:
            engine, wrapper = MODULES[nxt]
            return engine, wrapper, i, i + 2
    return None


def resolve(engine: str, version: str | None, name: str) -> str | None:
    """The option string the engine's parser reads ``name`` as: itself, or the one long option
    it abbreviates (argparse ``allow_abbrev``, on in both engines' parsers: a unique prefix of a
    long option selects it, ``--tp`` for SGLang's ``--tp-size``; two or more candidates are an
    error); None when the release has no such option."""
    opts = release_options(engine, version) if version else None
    if opts is None:
        opts = release_options(engine, _newest(engine))
    if name in opts.options:
        return name
    if name.startswith("--") and len(name) > 3:
        found = [o for o in opts.options if o.startswith(name) and o.startswith("--")]
        if len(found) == 1:
            return found[0]
    return None


def canonical(engine: str, version: str | None, name: str) -> tuple[str, bool]:
    """(canonical name, known to the release) of option string ``name`` (abbreviations
    resolved: :func:`resolve`)."""
    opts = release_options(engine, version) if version else None
    if opts is None:
        opts = release_options(engine, _newest(engine))
    full = resolve(engine, version, name)
    c = opts.canonical(full) if full else None
    return (c, True) if c is not None else (name, False)


def _newest(engine: str) -> str:
    from ..engines.options import known_releases
    return known_releases(engine)[-1]


def parse_engine_args(engine: str, wrapper: str, version: str | None, argv: list[str],
                      start: int, program_end: int,
                      wrapper_release: str | None = None) -> EngineCommand:
    """Read ``argv[start:]`` as the options of ``engine`` release ``version`` (the newest known
    when None), and of the wrapper (``dynamo``) at its ``wrapper_release`` when there is one.
    ``vllm serve``'s first positional token is the model."""
    cmd = EngineCommand(engine, wrapper, argv[program_end:start], start, None)
    wrapper_opts = _wrapper_options(engine, wrapper_release) if wrapper else {}
    j = start
    while j < len(argv):
        tok = argv[j]
        if tok == "--":
            cmd.positional += [(k, a) for k, a in enumerate(argv[j + 1:], j + 1)]
            break
        if not _OPTION.match(tok):
            # ``vllm serve``'s model_tag (nargs "?") takes the first free positional token,
            # before or after the options (vllm/entrypoints/cli/serve.py; argparse).
            if cmd.model is None and engine == "vllm" and not wrapper \
                    and argv[program_end - 1:program_end] == ["serve"]:
                cmd.model = tok
                cmd.model_index = j
            else:
                cmd.positional.append((j, tok))
            j += 1
            continue
        name, eq, inline = tok.partition("=")
        if engine == "vllm" and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        if "." in name and engine == "vllm":
            name = name.split(".", 1)[0]   # --speculative-config.method x (dotted JSON args)
        in_wrapper = name in wrapper_opts
        arity = wrapper_opts[name] if in_wrapper else option_arity(
            engine, resolve(engine, version, name) or name)
        canon, known = (name, True) if in_wrapper else canonical(engine, version, name)
        value: str | list[str] | None = inline if eq else None
        k = j + 1
        if not eq:
            if arity == FLAG:
                value = None
            elif arity in (LIST,) or not known:
                vals = []
                while k < len(argv) and not _OPTION.match(argv[k]) and argv[k] != "--":
                    vals.append(argv[k])
                    k += 1
                value = vals if arity == LIST else (" ".join(vals) if vals else None)
                if not known and len(vals) > 1:
                    value = vals
            elif arity == OPTIONAL:
                if k < len(argv) and not _OPTION.match(argv[k]):
                    value = argv[k]
                    k += 1
            elif k < len(argv):
                value = argv[k]
                k += 1
        cmd.options.append(Option(name, canon, value, j, known, in_wrapper))
        j = k
    return cmd

"""Run a container's launch script far enough to see the commands it starts, as POSIX ``sh`` /
``bash`` would (IEEE Std 1003.1-2017, Shell Command Language, ch. 2: token recognition 2.3,
quoting 2.2, parameter, command and arithmetic expansion 2.6, field splitting 2.6.5, compound
commands 2.9.4, functions 2.9.5; ``eval``, ``exec``, ``set --`` and ``shift`` from 2.14).

Nothing is executed: the script is tokenized and parsed, variables are tracked through
assignments, ``export``, ``set --`` and ``${X:-default}``/``$((arithmetic))`` expansions, ``if``
and ``case`` branches are taken when their conditions can be decided from the known variables
(``[``/``test``/``[[``: string and integer comparisons), functions are expanded at their calls,
``eval`` re-reads its arguments and ``exec`` ends the script. What only the pod knows at run time
(command substitutions ``$(...)``, variables from the downward API) is kept as a *runtime* value
(:func:`runtime`), never guessed. Every command reached is returned with its arguments and where
each argument starts in the script (0-based line and column), so findings can point at it.

:class:`ShellError` is raised for text the grammar does not cover (a here-document, an
unterminated quote): the importer reports it as a finding.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .shell_parse import (
    _NAME,
    ShellError,
    _Case,
    _dquote_end,
    _For,
    _Func,
    _Group,
    _If,
    _Simple,
    _balanced,
    parse,
)

__all__ = ["Command", "ShellError", "is_runtime", "parse", "run_script", "runtime", "show"]

#: Delimiters of a value only the pod knows at run time (Unicode private-use characters, which
#: no manifest carries).
_RT0, _RT1 = "\ue000", "\ue001"
#: How deep ``eval`` and function calls nest, and how many times a ``for`` body runs, at most.
MAX_DEPTH = 16
MAX_LOOP = 64
MAX_COMMANDS = 2000

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", re.S)


#: Characters a runtime value's description may hold that the shell would read again (an
#: ``eval`` of it): kept as private-use characters, shown as themselves by :func:`show`.
_SPECIAL = " \t\n`$()'\"\\;&|<>{}[]*?#~!"
_ESCAPE = str.maketrans({c: chr(0xE100 + i) for i, c in enumerate(_SPECIAL)})
_UNESCAPE = str.maketrans({chr(0xE100 + i): c for i, c in enumerate(_SPECIAL)})


def runtime(what: str) -> str:
    """A value only the running pod knows (shown as ``<what>``; never split into fields nor
    expanded again)."""
    return _RT0 + what.translate(_ESCAPE) + _RT1


def is_runtime(value: str) -> bool:
    """Whether ``value`` holds a part only the running pod knows."""
    return _RT0 in value


def show(value: str) -> str:
    """``value`` for a message: runtime parts as ``<...>``."""
    return value.replace(_RT0, "<").replace(_RT1, ">").translate(_UNESCAPE)


@dataclass(frozen=True)
class Command:
    """One command the script runs.

    Attributes:
        argv: its words after expansion.
        positions: (line, column) in the script where each word starts (0-based).
        env: the variables set at that point (script assignments, ``export``, prefixes).
        unset: variables the command's words referred to that nothing sets.
        conditional: reached only through a branch whose condition could not be decided.
    """

    argv: tuple[str, ...]
    positions: tuple[tuple[int, int], ...]
    env: Mapping[str, str]
    unset: frozenset[str] = frozenset()
    conditional: bool = False


# -- expansion ------------------------------------------------------------------------------


@dataclass
class _State:
    env: dict[str, str]
    positional: list[str]
    funcs: dict[str, list] = field(default_factory=dict)
    out: list[Command] = field(default_factory=list)
    done: bool = False
    depth: int = 0
    unset: set[str] = field(default_factory=set)
    conditional: bool = False


_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod,
              ast.Pow: operator.pow}


def _arith(expr: str, st: _State) -> str:
    """``$((expr))``: integers and variables, + - * / % ** and parentheses."""
    text = _expand_text(expr, st, quoted=True)
    if is_runtime(text):
        return runtime(f"$(({show(text)}))")

    def value(node) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            v = st.env.get(node.id)
            if v is None:
                st.unset.add(node.id)
                return 0
            if is_runtime(v) or not re.fullmatch(r"-?\d+", v.strip()):
                raise ShellError("runtime")
            return int(v)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            a, b = value(node.left), value(node.right)
            if isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod)) and b == 0:
                raise ShellError("division by zero")
            if isinstance(node.op, ast.Pow) and (b > 64 or abs(a) > 1 << 20):
                raise ShellError("arithmetic too large")
            return _ARITH_OPS[type(node.op)](a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = value(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        raise ShellError("arithmetic")

    try:
        tree = ast.parse(text.strip(), mode="eval")
        return str(value(tree.body))
    except (SyntaxError, ShellError, ValueError, RecursionError):
        return runtime(f"$(({show(text)}))")


def _param(body: str, st: _State) -> str:
    """``${body}``: ``NAME``, ``#NAME``, ``NAME:-w``, ``NAME-w``, ``NAME:=w``, ``NAME:+w``,
    ``NAME:?w``; other operators give a runtime value."""
    if body.startswith("#") and _NAME.fullmatch(body[1:]):
        v = _lookup(body[1:], st)
        return runtime(f"${{{body}}}") if v is None or is_runtime(v) else str(len(v))
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(.*)", body, re.S)
    if not m:
        raise ShellError(f"bad substitution ${{{body}}}")
    name, rest = m.groups()
    v = _lookup(name, st)
    if not rest:
        if v is None:
            st.unset.add(name)
        return v or ""
    op = re.match(r"(:?[-=+?])(.*)", rest, re.S)
    if not op:
        return runtime(f"${{{body}}}") if v is None or is_runtime(v) else _trim(v, rest, st)
    kind, word = op.groups()
    empty = v is None or (kind.startswith(":") and v == "")
    if kind.endswith("+"):
        return "" if empty else _expand_text(word, st, quoted=True)
    if not empty:
        return v
    alt = _expand_text(word, st, quoted=True)
    if kind.endswith("="):
        st.env[name] = alt
    if kind.endswith("?"):
        return runtime(f"${{{body}}}")
    return alt


def _trim(v: str, rest: str, st: _State) -> str:
    """``${NAME%pat}`` (shortest suffix), ``%%`` (longest), ``#`` (shortest prefix), ``##``."""
    m = re.match(r"(%%|%|##|#)(.*)", rest, re.S)
    if not m:
        return runtime(f"${{...{rest}}}")
    op, pat = m.group(1), _expand_text(m.group(2), st, quoted=True)
    up, down = range(len(v) + 1), range(len(v), -1, -1)
    if op.startswith("%"):
        return next((v[:k] for k in (down if op == "%" else up)
                     if fnmatch.fnmatchcase(v[k:], pat)), v)
    return next((v[k:] for k in (up if op == "#" else down)
                 if fnmatch.fnmatchcase(v[:k], pat)), v)


def _lookup(name: str, st: _State) -> str | None:
    if name.isdigit():
        k = int(name)
        return st.positional[k - 1] if 0 < k <= len(st.positional) else None
    if name in ("@", "*"):
        return " ".join(st.positional)
    if name == "#":
        return str(len(st.positional))
    if name in ("?", "$", "!", "-"):
        return runtime(f"${name}")
    return st.env.get(name)


def _expand_text(text: str, st: _State, quoted: bool) -> str:
    """Expand ``text`` as inside double quotes (no field splitting)."""
    return "".join(s for s, _ in _segments(text, st, in_dquote=quoted))


def _segments(word: str, st: _State, in_dquote: bool = False) -> list[tuple[str, bool]]:
    """(text, splittable) pieces of ``word`` after expansion; ``"$@"`` gives one piece per
    positional parameter marked with a field break (``None`` text)."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "\\":
            if in_dquote:
                nxt = word[i + 1:i + 2]
                out.append((nxt if nxt in '$`"\\\n' else "\\" + nxt, False))
            else:
                out.append((word[i + 1:i + 2], False))
            i += 2
        elif c == "'" and not in_dquote:
            k = word.index("'", i + 1)
            out.append((word[i + 1:k], False))
            i = k + 1
        elif c == '"' and not in_dquote:
            k = _dquote_end(word, i)
            inner = word[i + 1:k]
            if inner in ("$@", "${@}"):
                out += [(p, False) for p in _fields_marker(st.positional)]
                if not st.positional:
                    out.append(("\0drop", False))
            else:
                out.append((_expand_text(inner, st, quoted=True), False))
                if not inner:
                    out.append(("", False))
            i = k + 1
        elif c == "$" and word.startswith("$'", i) and not in_dquote:
            k = word.index("'", i + 2)
            out.append((word[i + 2:k].encode().decode("unicode_escape", "replace"), False))
            i = k + 1
        elif c == "$" and word.startswith("$((", i):
            k = _balanced(word, i + 1, "(", ")")
            out.append((_arith(word[i + 3:k - 2], st), not in_dquote))
            i = k
        elif c == "$" and word.startswith("$(", i):
            k = _balanced(word, i + 1, "(", ")")
            out.append((runtime(word[i:k]), not in_dquote))
            i = k
        elif c == "$" and word.startswith("${", i):
            k = _balanced(word, i + 1, "{", "}")
            out.append((_param(word[i + 2:k - 1], st), not in_dquote))
            i = k
        elif c == "$" and i + 1 < n and (word[i + 1].isalnum() or word[i + 1] in "_@*#?$!-"):
            m = _NAME.match(word, i + 1)
            name = m.group(0) if m else word[i + 1]
            if name == "@" and not in_dquote:
                out += [(p, True) for p in _fields_marker(st.positional)]
            else:
                out.append((_param(name, st), not in_dquote))
            i += 1 + len(name)
        elif c == "`":
            k = word.index("`", i + 1)
            out.append((runtime(word[i:k + 1]), not in_dquote))
            i = k + 1
        else:
            out.append((c, False))
            i += 1
    return out


_FIELD_BREAK = "\0break"


def _fields_marker(values: list[str]) -> list[str]:
    out: list[str] = []
    for j, v in enumerate(values):
        if j:
            out.append(_FIELD_BREAK)
        out.append(v)
    return out


def expand_word(word: str, st: _State) -> list[str]:
    """The fields ``word`` expands to (field splitting on unquoted expansions; no globbing)."""
    fields_: list[str] = []
    cur, have = "", False
    for text, split in _segments(word, st):
        if text == _FIELD_BREAK:
            fields_.append(cur)
            cur, have = "", False
            continue
        if text == "\0drop":
            continue
        if split:
            parts = re.split(r"[ \t\n]+", text)
            for j, part in enumerate(parts):
                if j:
                    if have or cur:
                        fields_.append(cur)
                    cur, have = "", False
                cur += part
                have = have or bool(part)
        else:
            cur += text
            have = True
    if have or cur:
        fields_.append(cur)
    return fields_


# -- evaluation -----------------------------------------------------------------------------


def _test(args: list[str]) -> bool | None:
    """``[ ... ]`` / ``test`` / ``[[ ... ]]``: True/False, or None when undecidable."""
    pattern = bool(args) and args[0] == "[["
    if args and args[0] in ("[", "[["):
        args = args[1:-1] if args[-1] in ("]", "]]") else args[1:]
    if args and args[0] == "!":
        r = _test(["[[", *args[1:]] if pattern else args[1:])
        return None if r is None else not r
    if any(is_runtime(a) for a in args):
        return None
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2 and args[0] in ("-z", "-n"):
        return (args[1] == "") == (args[0] == "-z")
    if len(args) == 3:
        a, op, b = args
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(a, b) if pattern else a == b
        if op == "!=":
            return a != b
        ints = {"-eq": operator.eq, "-ne": operator.ne, "-gt": operator.gt,
                "-ge": operator.ge, "-lt": operator.lt, "-le": operator.le}
        if op in ints:
            try:
                return ints[op](int(a), int(b))
            except ValueError:
                return None
    return None


def _status(cmds: list, st: _State) -> bool | None:
    """Run a condition list; its outcome when decidable (the last command's)."""
    result: bool | None = None
    for node in cmds:
        if isinstance(node, _Simple):
            argv = _words(node, st)[0]
            if argv and argv[0] in ("[", "[[", "test"):
                result = _test(argv if argv[0] != "test" else ["[", *argv[1:], "]"])
            elif argv and argv[0] in ("true", ":"):
                result = True
            elif argv and argv[0] == "false":
                result = False
            else:
                result = None
        else:
            result = None
    return result


def _words(node: _Simple, st: _State) -> tuple[list[str], list[tuple[int, int]]]:
    argv: list[str] = []
    pos: list[tuple[int, int]] = []
    for tok in node.words:
        for f in expand_word(tok.text, st):
            argv.append(f)
            pos.append((tok.line, tok.col))
    return argv, pos


def _run(nodes: Iterable, st: _State) -> None:
    for node in nodes:
        if st.done or len(st.out) > MAX_COMMANDS:
            return
        if isinstance(node, _Simple):
            _simple(node, st)
        elif isinstance(node, _Group):
            _run(node.body, st)
        elif isinstance(node, _Func):
            st.funcs[node.name] = node.body
        elif isinstance(node, _If):
            _if(node, st)
        elif isinstance(node, _Case):
            _case(node, st)
        elif isinstance(node, _For) and node.cond is not None:
            _run(node.cond, st)   # a loop's condition and body, once each
            _run(node.body, st)
        elif isinstance(node, _For) and node.words is not None:
            values = [f for tok in node.words for f in expand_word(tok.text, st)]
            for v in values[:MAX_LOOP]:
                st.env[node.var] = v
                _run(node.body, st)


def _if(node: _If, st: _State) -> None:
    for cond, body in node.branches:
        outcome = _status(cond, st)
        if outcome is True:
            _run(body, st)
            return
        if outcome is None:
            was, st.conditional = st.conditional, True
            _run(body, st)
            st.conditional = was
            return
    if node.orelse is not None:
        _run(node.orelse, st)


def _case(node: _Case, st: _State) -> None:
    value = "".join(expand_word(node.word.text, st))
    for pats, body in node.items:
        texts = ["".join(expand_word(p.text, st)) for p in pats]
        if is_runtime(value):
            if texts != ["*"]:
                was, st.conditional = st.conditional, True
                _run(body, st)
                st.conditional = was
                return
            continue
        if any(fnmatch.fnmatchcase(value, t) for t in texts):
            _run(body, st)
            return


def _simple(node: _Simple, st: _State) -> None:
    st.unset = set()
    words = list(node.words)
    prefix: dict[str, str] = {}
    while words and _ASSIGN.fullmatch(words[0].text) and not words[0].text.startswith("="):
        name, plus, value = _ASSIGN.fullmatch(words[0].text).groups()
        prefix[name] = (st.env.get(name, "") if plus else "") + _expand_text(value, st, False)
        words.pop(0)
    if not words:
        st.env.update(prefix)
        return
    argv, pos = _words(_Simple(words), st)
    if not argv:
        return
    head = argv[0]
    if head in ("export", "declare", "typeset", "local", "readonly"):
        for a in argv[1:]:
            m = _ASSIGN.fullmatch(a)
            if m:
                st.env[m.group(1)] = m.group(3)
        return
    if head == "unset":
        for a in argv[1:]:
            st.env.pop(a, None)
        return
    if head == "set":
        if "--" in argv:
            st.positional = argv[argv.index("--") + 1:]
        elif len(argv) > 1 and not argv[1].startswith(("-", "+")):
            st.positional = argv[1:]
        return
    if head == "shift":
        k = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
        st.positional = st.positional[k:]
        return
    if head == "exit":
        st.done = True
        return
    if head == "eval":
        _nested(" ".join(argv[1:]), st)
        return
    if head in st.funcs and st.depth < MAX_DEPTH:
        saved = st.positional
        st.positional, st.depth = argv[1:], st.depth + 1
        _run(st.funcs[head], st)
        st.positional, st.depth = saved, st.depth - 1
        return
    replace = head == "exec"
    if replace:
        argv, pos = argv[1:], pos[1:]
    if argv:
        st.out.append(Command(tuple(argv), tuple(pos), {**st.env, **prefix},
                              frozenset(st.unset), st.conditional))
    if replace and argv:
        st.done = True


def _nested(script: str, st: _State) -> None:
    if st.depth >= MAX_DEPTH:
        raise ShellError("eval nested too deep")
    st.depth += 1
    _run(parse(script), st)
    st.depth -= 1


def run_script(script: str, env: Mapping[str, str], positional: list[str] = ()) -> list[Command]:
    """Every command ``script`` runs, in order, given the variables ``env`` (the container's
    environment, runtime values marked) and the positional parameters. Raises
    :class:`ShellError` for text this reader does not cover."""
    st = _State(dict(env), list(positional))
    try:
        _run(parse(script), st)
    except (IndexError, ValueError, RecursionError) as exc:
        if isinstance(exc, ShellError):
            raise
        raise ShellError(f"cannot read the script ({type(exc).__name__})") from None
    return st.out

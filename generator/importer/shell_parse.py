"""The grammar part of :mod:`.shell`: POSIX shell tokens (IEEE Std 1003.1-2017 ch. 2.3, quoting
2.2) and the parse tree of lists, pipelines, ``if``, ``case``, loops, groups and functions
(2.9). :class:`ShellError` for text outside it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPS = ("&&", "||", ";;", ">>", "<<", "<&", ">&", "&>", ";", "&", "|", "(", ")", "<", ">")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ShellError(ValueError):
    """The script uses a construct this reader does not cover, or is not valid shell."""


@dataclass(frozen=True)
class _Tok:
    kind: str   # "word", "op", "nl"
    text: str
    line: int
    col: int


def _balanced(s: str, i: int, open_: str, close: str) -> int:
    """Index after the ``close`` that balances the ``open_`` at ``s[i]`` (quotes respected)."""
    depth, j, n = 0, i, len(s)
    while j < n:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and open_ != "{":
            k = s.find("'", j + 1)
            if k < 0:
                raise ShellError("unterminated single quote")
            j = k + 1
            continue
        if c == '"':
            j = _dquote_end(s, j) + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise ShellError(f"unbalanced {open_}")


def _dquote_end(s: str, i: int) -> int:
    """Index of the ``"`` closing the one at ``s[i]``."""
    j, n = i + 1, len(s)
    while j < n:
        c = s[j]
        if c == "\\":
            j += 2
        elif c == '"':
            return j
        elif c == "$" and s.startswith("$(", j):
            j = _balanced(s, j + 1, "(", ")")
        elif c == "$" and s.startswith("${", j):
            j = _balanced(s, j + 1, "{", "}")
        elif c == "`":
            k = s.find("`", j + 1)
            j = (k if k >= 0 else n) + 1
        else:
            j += 1
    raise ShellError("unterminated double quote")


def tokenize(script: str) -> list[_Tok]:
    """Tokens of ``script`` (words keep their quotes; positions as in the text)."""
    toks: list[_Tok] = []
    i, n, line, lstart = 0, len(script), 0, 0

    def pos(k: int) -> tuple[int, int]:
        return line, k - lstart

    while i < n:
        c = script[i]
        if c == "\\" and i + 1 < n and script[i + 1] == "\n":
            i += 2
            line, lstart = line + 1, i
            continue
        if c == "\n":
            toks.append(_Tok("nl", "\n", *pos(i)))
            i += 1
            line, lstart = line + 1, i
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        op = next((o for o in _OPS if script.startswith(o, i)), None)
        if op is not None:
            if op == "<<":
                raise ShellError("here-documents (<<) are not read")
            toks.append(_Tok("op", op, *pos(i)))
            i += len(op)
            continue
        start, (tl, tc) = i, pos(i)
        while i < n:
            c = script[i]
            if c in " \t\r\n" or c in ";&|()<>":
                break
            if c == "\\":
                i += 2
            elif c == "'":
                k = script.find("'", i + 1)
                if k < 0:
                    raise ShellError("unterminated single quote")
                i = k + 1
            elif c == '"':
                i = _dquote_end(script, i) + 1
            elif c == "$" and i + 1 < n and script[i + 1] in "({":
                i = _balanced(script, i + 1, script[i + 1], ")" if script[i + 1] == "(" else "}")
            elif c == "`":
                k = script.find("`", i + 1)
                if k < 0:
                    raise ShellError("unterminated backquote")
                i = k + 1
            else:
                i += 1
        nls = script.count("\n", start, i)
        if nls:   # quoted newlines and continuations inside the word
            line, lstart = line + nls, script.rfind("\n", start, i) + 1
        word = script[start:i].replace("\\\n", "")
        if word.isdigit() and i < n and script[i] in "<>":
            continue   # a redirection's file descriptor (2>&1)
        toks.append(_Tok("word", word, tl, tc))
    return toks


# -- the parse tree -------------------------------------------------------------------------


@dataclass
class _Simple:
    words: list[_Tok]


@dataclass
class _If:
    branches: list[tuple[list, list]]   # (condition list, body list)
    orelse: list | None


@dataclass
class _Case:
    word: _Tok
    items: list[tuple[list[_Tok], list]]


@dataclass
class _For:
    var: str
    words: list[_Tok] | None   # None: ``for ((...))`` or ``while``: the body is not run
    body: list
    #: ``while``/``until``: the condition, read once with the body once (the commands a
    #: supervising loop runs: ``while true; do vllm serve ...; done``, ``until vllm serve ...``).
    cond: list | None = None


@dataclass
class _Func:
    name: str
    body: list


@dataclass
class _Group:
    body: list


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.t = toks
        self.i = 0

    def peek(self) -> _Tok | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def is_word(self, *texts: str) -> bool:
        p = self.peek()
        return p is not None and p.kind == "word" and (not texts or p.text in texts)

    def is_op(self, *texts: str) -> bool:
        p = self.peek()
        return p is not None and p.kind == "op" and p.text in texts

    def skip_nl(self) -> None:
        while self.peek() is not None and (self.peek().kind == "nl" or self.is_op(";")):
            self.i += 1

    def expect_word(self, text: str) -> None:
        self.skip_nl()
        if not self.is_word(text):
            p = self.peek()
            raise ShellError(f"expected {text!r}" + (f" at line {p.line + 1}" if p else ""))
        self.i += 1

    def parse_list(self, *stop: str) -> list:
        out: list = []
        while True:
            self.skip_nl()
            p = self.peek()
            if p is None or (p.kind == "word" and p.text in stop) or self.is_op(")", ";;"):
                return out
            out.append(self.parse_command())
            while self.is_op("&&", "||", "|", "&"):
                self.i += 1
                self.skip_nl()
                if self.peek() is None or self.is_word(*stop):
                    break
                out.append(self.parse_command())

    def parse_command(self):
        p = self.peek()
        if p.kind == "op" and p.text == "(":
            self.i += 1
            body = self.parse_list()
            if not self.is_op(")"):
                raise ShellError("unclosed (")
            self.i += 1
            return _Group(body)
        if p.kind == "word":
            if p.text == "!":
                self.i += 1
                return self.parse_command()
            if p.text == "{":
                self.i += 1
                body = self.parse_list("}")
                self.expect_word("}")
                return _Group(body)
            if p.text == "if":
                return self.parse_if()
            if p.text == "case":
                return self.parse_case()
            if p.text in ("for", "while", "until"):
                return self.parse_loop()
            if p.text == "function":
                self.i += 1
                name = self.peek().text
                self.i += 1
                if self.is_op("("):
                    self.i += 2
                self.skip_nl()
                return _Func(name, [self.parse_command()])
            nxt = self.t[self.i + 1] if self.i + 1 < len(self.t) else None
            if _NAME.fullmatch(p.text) and nxt is not None and nxt.kind == "op" \
                    and nxt.text == "(":
                self.i += 3   # name ( )
                self.skip_nl()
                return _Func(p.text, [self.parse_command()])
        return self.parse_simple()

    def parse_simple(self) -> _Simple:
        words: list[_Tok] = []
        while True:
            p = self.peek()
            if p is None or p.kind == "nl":
                break
            if p.kind == "op":
                if p.text in (">", ">>", "<", ">&", "<&", "&>"):
                    self.i += 2   # the operator and its target
                    continue
                break
            if p.text == "[[":
                words.append(p)
                self.i += 1
                while self.peek() is not None and not self.is_word("]]"):
                    if self.peek().kind != "nl":
                        words.append(self.peek())
                    self.i += 1
                if self.peek() is not None:
                    words.append(self.peek())
                    self.i += 1
                continue
            words.append(p)
            self.i += 1
        return _Simple(words)

    def parse_if(self) -> _If:
        self.i += 1
        branches = []
        cond = self.parse_list("then")
        self.expect_word("then")
        body = self.parse_list("elif", "else", "fi")
        branches.append((cond, body))
        orelse = None
        while True:
            self.skip_nl()
            if self.is_word("elif"):
                self.i += 1
                cond = self.parse_list("then")
                self.expect_word("then")
                branches.append((cond, self.parse_list("elif", "else", "fi")))
            elif self.is_word("else"):
                self.i += 1
                orelse = self.parse_list("fi")
            else:
                self.expect_word("fi")
                return _If(branches, orelse)

    def parse_case(self) -> _Case:
        self.i += 1
        word = self.peek()
        self.i += 1
        self.expect_word("in")
        items = []
        while True:
            self.skip_nl()
            if self.is_word("esac"):
                self.i += 1
                return _Case(word, items)
            if self.is_op("("):
                self.i += 1
            pats = []
            while self.peek() is not None and not self.is_op(")"):
                if self.peek().kind == "word":
                    pats.append(self.peek())
                self.i += 1
            self.i += 1
            body = self.parse_list("esac")
            if self.is_op(";;"):
                self.i += 1
            items.append((pats, body))
            if self.peek() is None:
                raise ShellError("case without esac")

    def parse_loop(self) -> _For:
        kw = self.peek().text
        self.i += 1
        var, words = "", None
        if kw == "for" and self.is_word():
            var = self.peek().text
            self.i += 1
            self.skip_nl()
            if self.is_word("in"):
                self.i += 1
                words = []
                while self.is_word():
                    words.append(self.peek())
                    self.i += 1
            else:
                words = []
        elif kw == "for":   # for (( ... ))
            depth = 0
            while self.peek() is not None:
                if self.is_op("("):
                    depth += 1
                elif self.is_op(")"):
                    depth -= 1
                self.i += 1
                if depth == 0:
                    break
        cond = None
        if kw != "for":
            cond = self.parse_list("do")
        self.expect_word("do")
        body = self.parse_list("done")
        self.expect_word("done")
        return _For(var, words, body, cond)


def parse(script: str) -> list:
    """The parse tree of ``script`` (raises :class:`ShellError`)."""
    p = _Parser(tokenize(script))
    out = p.parse_list()
    if p.peek() is not None:
        tok = p.peek()
        raise ShellError(f"unexpected {tok.text!r} at line {tok.line + 1}")
    return out

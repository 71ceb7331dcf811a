"""ruamel.yaml plumbing of the reader (``generator/spec/load.py``): replaying the events its
hostile-input scan recorded, and a reader without the printable check the scan already ran."""

from __future__ import annotations

from typing import Any

from ruamel.yaml.reader import Reader as _RuamelReader


class Replay:
    """A parser that replays recorded events, so the composer builds nodes from the events the
    safety scan already read (one pass of ruamel's pure-Python scanner instead of two)."""

    def __init__(self, events: list) -> None:
        self._events = events
        self._i = 0

    def check_event(self, *choices: Any) -> bool:
        return self._i < len(self._events) and (not choices
                                                or isinstance(self._events[self._i], choices))

    def peek_event(self) -> Any:
        return self._events[self._i]

    def get_event(self) -> Any:
        ev = self._events[self._i]
        self._i += 1
        return ev

    def dispose(self) -> None:
        self._events = []


class Reader(_RuamelReader):
    """ruamel's reader without its printable check, which ``load._non_printable`` already ran
    (ruamel compiles a large Unicode regex for it on every start: ~6 ms)."""

    def check_printable(self, data: Any) -> None:  # noqa: D102 - see the class docstring
        return None

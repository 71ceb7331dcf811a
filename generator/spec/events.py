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


#: Most nodes the aliases of one manifest document may expand to (an alias bomb expands to
#: 10^9 and more; a large manifest has a few 10^4 nodes): LOAD005 above it.
MAX_EXPANDED = 1 << 20


class Expansion:
    """The number of nodes one document expands to once its aliases are resolved, counted
    from the events (never by expanding): an anchored node counts its own size at each alias.
    Kubernetes manifests may use anchors and aliases (kubectl's YAML reader, go-yaml, resolves
    them); only their expansion is bounded."""

    def __init__(self) -> None:
        self.count = 0
        self._sizes: dict[str, int] = {}
        self._open: list[tuple[str | None, int]] = []

    def add(self, ev: Any) -> bool:
        """Count ``ev``; True at the event whose count first passes :data:`MAX_EXPANDED`."""
        from ruamel.yaml.events import (AliasEvent, CollectionEndEvent, CollectionStartEvent,
                                        ScalarEvent)
        before = self.count
        if isinstance(ev, AliasEvent):
            self.count += self._sizes.get(ev.anchor, 1)
        elif isinstance(ev, CollectionStartEvent):
            self._open.append((ev.anchor, self.count))
            self.count += 1
        elif isinstance(ev, CollectionEndEvent) and self._open:
            anchor, start = self._open.pop()
            if anchor:
                self._sizes[anchor] = self.count - start
        elif isinstance(ev, ScalarEvent):
            self.count += 1
            if ev.anchor:
                self._sizes[ev.anchor] = 1
        return self.count > MAX_EXPANDED >= before

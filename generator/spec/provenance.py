"""Where each value of an input came from: JSON paths as tuples, and their file:line:column."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Location

PathKey = tuple  # a JSON path as a tuple of str keys and int indices


def json_path(path: PathKey) -> str:
    """Format ``("spec", "roles", 1, "parallel")`` as ``$.spec.roles[1].parallel``."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


@dataclass
class Provenance:
    """Where each value of the merged spec came from.

    ``locations`` maps a path tuple to the :class:`Location` of the key (for mapping entries) or
    item (for sequence items) that set it. Lookups of paths that no file set (defaults) fall back
    to the nearest ancestor that has a location. ``blocks`` maps the path of a multi-line block
    scalar (``|`` or ``>``, such as a launch script) to the line of its first content line and
    that line's indentation (both as in the file, 1-based line), so a position inside the text
    can be located. ``skips``: the waivers written in the document (:mod:`.skips`). ``names``:
    for a document imported from manifests, what the manifest (or the command line) calls the
    value at a spec path (``$.spec.roles[0].replicas`` -> ``$.spec.replicas``): a finding on
    that path is named by it (generator/inputs.py).
    """

    locations: dict[PathKey, Location] = field(default_factory=dict)
    blocks: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    skips: list = field(default_factory=list)
    names: dict[PathKey, str] = field(default_factory=dict)

    def locate(self, path: PathKey) -> Location:
        """Location of ``path`` or of its nearest located ancestor (``Location()`` if none)."""
        path = tuple(path)
        while path:
            loc = self.locations.get(path)
            if loc is not None:
                return loc
            path = path[:-1]
        return self.locations.get((), Location())

    def locate_in_text(self, path: PathKey, line: int, column: int) -> Location:
        """Location of the character at 0-based ``line``/``column`` of the scalar at ``path``
        (a block scalar's own lines; other scalars: the scalar's location)."""
        loc = self.locate(path)
        block = self.blocks.get(tuple(path))
        if block is None:
            return loc
        first, indent = block
        return Location(loc.file, first + line, indent + column + 1)

    def replace_subtree(self, path: PathKey, other: "Provenance") -> None:
        """Drop every location at or under ``path`` and copy ``other``'s locations there."""
        n = len(path)
        for key in [k for k in self.locations if k[:n] == path]:
            del self.locations[key]
        for key, loc in other.locations.items():
            if key[:n] == path:
                self.locations[key] = loc

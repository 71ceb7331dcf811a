"""Read a spec and its overlays: the only module of moegen that reads input files.

Loading is safe and positional:

* YAML is parsed with ruamel.yaml's round-trip composer, which builds only plain mappings,
  sequences and scalars (no Python objects). Before composing, the event stream is scanned and
  refused when it holds custom tags, anchors/aliases (alias bombs), more than one document, or
  nesting deeper than :data:`MAX_DEPTH`; files larger than :data:`MAX_BYTES` or not UTF-8 text are
  refused unread. Duplicate keys are errors.
* Every scalar, mapping and sequence keeps the file, line and column that set it
  (:class:`Provenance`), so findings can point at the overlay that set a field.

Overlays merge as docs/spec.md §2 fixes: in command-line order, last wins; mappings merge key by
key; lists whose items are all mappings with a ``name`` merge item by item by ``name`` (new names
are appended); every other list is replaced whole.
"""

from __future__ import annotations

import difflib
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceStartEvent,
)
from ruamel.yaml.reader import Reader

from ..errors import Finding, Location, Severity

#: Largest spec or overlay file accepted, bytes. Real specs are a few KiB; 1 MiB leaves room for
#: generated ones while keeping hostile inputs cheap to refuse.
MAX_BYTES = 1 << 20
#: Deepest nesting of mappings/sequences accepted (the schema itself is < 10 levels deep).
MAX_DEPTH = 64
#: Largest model ``config.json`` accepted, bytes (HF configs are < 10 KiB).
MAX_CONFIG_BYTES = 1 << 20

PathKey = tuple  # a JSON path as a tuple of str keys and int indices

#: Explicit tags a spec may carry (the YAML 1.2 core schema); anything else is refused.
_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_PLAIN_TAGS |= {f"!!{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}


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
    to the nearest ancestor that has a location.
    """

    locations: dict[PathKey, Location] = field(default_factory=dict)

    def locate(self, path: PathKey) -> Location:
        """Location of ``path`` or of its nearest located ancestor (``Location()`` if none)."""
        path = tuple(path)
        while path:
            loc = self.locations.get(path)
            if loc is not None:
                return loc
            path = path[:-1]
        return self.locations.get((), Location())

    def replace_subtree(self, path: PathKey, other: "Provenance") -> None:
        """Drop every location at or under ``path`` and copy ``other``'s locations there."""
        n = len(path)
        for key in [k for k in self.locations if k[:n] == path]:
            del self.locations[key]
        for key, loc in other.locations.items():
            if key[:n] == path:
                self.locations[key] = loc


@dataclass
class LoadedSpec:
    """The merged spec as plain data, with provenance and what was read besides it.

    Attributes:
        data: the merged document (dicts, lists, str/int/float/bool/None).
        provenance: file/line/column of every value.
        files: the files read, in merge order (spec first).
        model_config: the parsed ``config.json`` named by ``spec.model.config`` (None if unset).
        findings: problems found while reading (nothing else runs if any is an error).
    """

    data: dict
    provenance: Provenance
    files: list[str]
    model_config: dict | None = None
    findings: list[Finding] = field(default_factory=list)


def _finding(code: str, file: str, message: str, hint: str = "", line: int = 0,
             column: int = 0, path: str = "$") -> Finding:
    return Finding(code, Severity.ERROR, path, message, hint, Location(file, line, column))


#: The path that means standard input (``gen validate -``), and the name findings give it.
STDIN, STDIN_NAME = "-", "<stdin>"
#: Standard input, read once (a command may parse its input twice: gen report, gen plan).
_stdin_cache: dict[int, bytes] = {}


def _read_stdin(limit: int) -> bytes:
    if limit not in _stdin_cache:
        _stdin_cache[limit] = sys.stdin.buffer.read(limit + 1)
    return _stdin_cache[limit]


def display_name(path: Path) -> str:
    """How findings name an input file (standard input: ``<stdin>``)."""
    return STDIN_NAME if str(path) == STDIN else str(path)


def _read_text(path: Path, display: str, limit: int) -> tuple[str | None, Finding | None]:
    """Read at most ``limit`` bytes of UTF-8 text (pipes such as ``<(...)`` are fine; ``-`` is
    standard input)."""
    if str(path) != STDIN and path.is_dir():
        return None, _finding("LOAD001", display, f"{display} is a directory, not a file")
    try:
        if str(path) == STDIN:
            raw = _read_stdin(limit)
        else:
            with open(path, "rb") as fh:
                raw = fh.read(limit + 1)
    except OSError as exc:
        return None, _finding("LOAD001", display, f"cannot read {display}: {exc.strerror}",
                              "check the path (it is relative to the current directory)")
    if len(raw) > limit:
        return None, _finding("LOAD002", display,
                              f"{display} is larger than the limit of {limit} bytes",
                              "a spec is a few KiB: is this the right file?")
    if b"\x00" in raw:
        return None, _finding("LOAD003", display, f"{display} is binary (contains NUL bytes)",
                              "give a YAML text file")
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, _finding("LOAD003", display,
                              f"{display} is not UTF-8 text (byte {exc.start})",
                              "save the file as UTF-8")


class _Replay:
    """A parser that replays recorded events, so the composer builds nodes from the events the
    safety scan already read (one pass of ruamel's pure-Python scanner instead of two)."""

    def __init__(self, events: list) -> None:
        self._events = events
        self._i = 0

    def check_event(self, *choices: Any) -> bool:
        if self._i >= len(self._events):
            return False
        return not choices or isinstance(self._events[self._i], choices)

    def peek_event(self) -> Any:
        return self._events[self._i]

    def get_event(self) -> Any:
        ev = self._events[self._i]
        self._i += 1
        return ev

    def dispose(self) -> None:
        self._events = []


def _printable(o: int) -> bool:
    """YAML 1.2's printable set (spec 5.1: tab, LF, CR, x20-x7E, NEL, xA0-xD7FF, xE000-xFFFD,
    x10000-x10FFFF)."""
    return (o in (0x09, 0x0A, 0x0D, 0x85) or 0x20 <= o <= 0x7E or 0xA0 <= o <= 0xD7FF
            or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF)


def _non_printable(text: str, display: str) -> Finding | None:
    """The first character YAML forbids, located (checked on the distinct characters: fast on
    any size). ruamel's reader then skips its own check (:class:`_Reader`)."""
    bad = [ch for ch in set(text) if not _printable(ord(ch))]
    if not bad:
        return None
    pos = min(text.index(ch) for ch in bad)
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return _finding("LOAD008", display,
                    f"invalid YAML: character U+{ord(text[pos]):04X} is not allowed in YAML",
                    "remove control characters (YAML 1.2 allows tab, newline and printable text)",
                    line, col)


class _Reader(Reader):
    """ruamel's reader without its printable check, which :func:`_non_printable` already ran
    (ruamel compiles a large Unicode regex for it on every start: ~6 ms)."""

    def check_printable(self, data: Any) -> None:  # noqa: D102 - see the class docstring
        return None


def _scan_events(yaml: YAML, text: str, display: str) -> tuple[list, Finding | None]:
    """Parse ``text`` into events, refusing what the spec format never needs as soon as it
    appears (before any node is built: cheap on bombs). Returns (events, finding or None)."""
    depth = 0
    docs = 0
    events: list = []
    keys: list[bool | None] = []   # per open collection: next node is a mapping key (None: list)
    try:
        for ev in yaml.parse(io.StringIO(text)):
            events.append(ev)
            mark = getattr(ev, "start_mark", None)
            line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
            if isinstance(ev, NodeEvent) and keys and keys[-1] is not None:
                is_key, keys[-1] = keys[-1], not keys[-1]
                if is_key and isinstance(ev, ScalarEvent) and ev.value == "<<" and not ev.style:
                    return [], _finding("LOAD005", display,
                                        "YAML merge keys (<<) are not accepted in specs",
                                        "write the values out, or use an overlay (-f) to share "
                                        "them", line, col)
            if isinstance(ev, MappingStartEvent):
                keys.append(True)
            elif isinstance(ev, SequenceStartEvent):
                keys.append(None)
            elif isinstance(ev, CollectionEndEvent) and keys:
                keys.pop()
            if isinstance(ev, DocumentStartEvent):
                docs += 1
                if docs > 1:
                    return [], _finding("LOAD004", display, "more than one YAML document",
                                        "put one InferenceDeployment per file", line, col)
            if isinstance(ev, AliasEvent) or (isinstance(ev, NodeEvent) and ev.anchor):
                return [], _finding("LOAD005", display,
                                    "YAML anchors and aliases are not accepted in specs",
                                    "write the values out, or use an overlay (-f) to share them",
                                    line, col)
            tag = getattr(ev, "tag", None)
            if tag is not None and str(tag) not in _PLAIN_TAGS:
                return [], _finding("LOAD006", display, f"custom YAML tag {tag} is not accepted",
                                    "remove the tag; specs hold plain maps, lists and scalars",
                                    line, col)
            if isinstance(ev, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return [], _finding("LOAD007", display,
                                        f"nesting deeper than {MAX_DEPTH} levels", "", line, col)
            elif isinstance(ev, CollectionEndEvent):
                depth -= 1
    except MarkedYAMLError as exc:
        return [], _yaml_error(exc, display)
    except YAMLError as exc:  # pragma: no cover - ruamel raises MarkedYAMLError for syntax
        return [], _finding("LOAD008", display, f"invalid YAML: {exc}")
    return events, None


def _yaml_error(exc: MarkedYAMLError, display: str) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
    problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
    code = "LOAD009" if "duplicate key" in problem else "LOAD008"
    hint = "each key may appear once per mapping" if code == "LOAD009" else ""
    return _finding(code, display, f"invalid YAML: {problem}", hint, line, col)


def _plain(node: Any, path: PathKey, display: str, prov: Provenance) -> Any:
    """Convert ruamel nodes to plain data, recording each key's/item's location."""
    if isinstance(node, CommentedMap):
        out = {}
        for key in node:
            kline, kcol = node.lc.key(key)
            sub = (*path, str(key))
            prov.locations[sub] = Location(display, kline + 1, kcol + 1)
            out[str(key)] = _plain(node[key], sub, display, prov)
        return out
    if isinstance(node, CommentedSeq):
        out_list = []
        for i, item in enumerate(node):
            iline, icol = node.lc.item(i)
            sub = (*path, i)
            prov.locations[sub] = Location(display, iline + 1, icol + 1)
            out_list.append(_plain(item, sub, display, prov))
        return out_list
    # ruamel returns int/float/bool subclasses (ScalarInt, ScalarFloat, ScalarBoolean): plain
    # Python values from here on, so no later consumer sees a ruamel type.
    if node is None:
        return None
    if isinstance(node, bool) or type(node).__name__ == "ScalarBoolean":
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    # Timestamps and other implicit scalar types: keep the text, the schema decides.
    return str(node)


def parse_yaml_file(path: Path, overlay: bool = False) -> tuple[Any, Provenance, list[Finding]]:
    """Read one YAML file safely. Returns (data, provenance, findings); data is None on error.
    ``overlay``: the file is an overlay (only the hint of a non-mapping document differs)."""
    display = display_name(path)
    text, err = _read_text(path, display, MAX_BYTES)
    if err:
        return None, Provenance(), [err]
    err = _non_printable(text, display)
    if err:
        return None, Provenance(), [err]
    yaml = YAML(typ="rt", pure=True)
    yaml.Reader = _Reader
    yaml.allow_duplicate_keys = False
    events, err = _scan_events(yaml, text, display)
    if err:
        return None, Provenance(), [err]
    constructor, _ = yaml.get_constructor_parser(io.StringIO(""))
    yaml._parser = _Replay(events)   # the composer reads yaml.parser: replay the scanned events
    try:
        node = constructor.get_single_data()
    except MarkedYAMLError as exc:
        return None, Provenance(), [_yaml_error(exc, display)]
    prov = Provenance()
    prov.locations[()] = Location(display, 1, 1)
    data = _plain(node, (), display, prov)
    if not isinstance(data, dict):
        hint = ("an overlay is a mapping of the fields it changes, e.g. spec: {serving: ...}"
                if overlay else "a spec starts with apiVersion:, kind:, metadata:, spec:")
        what = "empty" if data is None else "not a mapping"
        return None, prov, [_finding("LOAD010", display, f"the document is {what}", hint, 1, 1)]
    return data, prov, []


def _is_named_list(value: Any) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in value))


def merge(base: Any, base_prov: Provenance, over: Any, over_prov: Provenance,
          path: PathKey = ()) -> Any:
    """Deep-merge ``over`` into ``base`` (both plain data), updating ``base_prov`` in place.

    Mappings merge per key; lists of named mappings merge per ``name``; anything else in
    ``over`` replaces ``base`` and takes ``over``'s locations.
    """
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            sub = (*path, key)
            if key in out:
                both_maps = isinstance(out[key], dict) and isinstance(value, dict)
                out[key] = merge(out[key], base_prov, value, over_prov, sub)
                # A mapping merged into a mapping keeps its key's original location (a finding
                # about a field the overlay did not set points at the base); replaced values
                # point at the overlay.
                if sub in over_prov.locations and not both_maps:
                    base_prov.locations[sub] = over_prov.locations[sub]
            else:
                out[key] = value
                base_prov.replace_subtree(sub, over_prov)
        return out
    if _is_named_list(base) and _is_named_list(over):
        out_list = list(base)
        index = {item["name"]: i for i, item in enumerate(base)}
        for j, item in enumerate(over):
            if item["name"] in index:
                i = index[item["name"]]
                # Re-key the overlay item's locations to the merged index before merging.
                moved = _shift(over_prov, (*path, j), (*path, i))
                out_list[i] = merge(out_list[i], base_prov, item, moved, (*path, i))
            else:
                i = len(out_list)
                out_list.append(item)
                base_prov.replace_subtree((*path, i), _shift(over_prov, (*path, j), (*path, i)))
        return out_list
    base_prov.replace_subtree(path, over_prov)
    return over


def _shift(prov: Provenance, old: PathKey, new: PathKey) -> Provenance:
    n = len(old)
    return Provenance({(*new, *k[n:]): loc for k, loc in prov.locations.items() if k[:n] == old})


def _new_names(base: Any, over: Any, over_prov: Provenance, path: PathKey = ()) -> list[Finding]:
    """Warn when an overlay adds a named item whose name is close to an existing one (a typo
    such as ``decdoe`` would otherwise add a new, incomplete role)."""
    out: list[Finding] = []
    if isinstance(base, dict) and isinstance(over, dict):
        for key, value in over.items():
            if key in base:
                out += _new_names(base[key], value, over_prov, (*path, key))
    elif _is_named_list(base) and _is_named_list(over):
        names = [item["name"] for item in base]
        added = 0
        seen: set = set()
        for j, item in enumerate(over):
            if item["name"] in seen:
                out.append(Finding(
                    "LOAD013", Severity.ERROR, json_path((*path, j, "name")),
                    f"the overlay names {item['name']!r} twice in this list",
                    "merge the two items into one", over_prov.locate((*path, j, "name"))))
            seen.add(item["name"])
            if item["name"] in names:
                i = names.index(item["name"])
                out += _new_names(base[i], item, over_prov, (*path, j))
                continue
            close = difflib.get_close_matches(item["name"], names, n=1, cutoff=0.75)
            merged_index = len(names) + added
            added += 1
            if close:
                loc = over_prov.locate((*path, j, "name"))
                out.append(Finding(
                    "LOAD012", Severity.WARNING, json_path((*path, merged_index, "name")),
                    f"the overlay adds a new item {item['name']!r}; the base has {close[0]!r}",
                    f"to change {close[0]!r}, use name: {close[0]}", loc))
    return out


def load_spec(spec_path: Path, overlays: list[Path] = ()) -> LoadedSpec:
    """Read ``spec_path`` and merge ``overlays`` in order; load ``spec.model.config`` if set.

    Never raises for bad input: problems are returned in ``LoadedSpec.findings``.
    """
    files = [display_name(spec_path), *map(str, overlays)]
    data, prov, findings = parse_yaml_file(spec_path)
    if data is None:
        return LoadedSpec({}, prov, files, None, findings)
    for overlay in overlays:
        odata, oprov, ofindings = parse_yaml_file(overlay, overlay=True)
        findings += ofindings
        if odata is not None:
            findings += _new_names(data, odata, oprov)
            data = merge(data, prov, odata, oprov)
    loaded = LoadedSpec(data, prov, files, None, findings)
    if not findings:
        _load_model_config(loaded)
    return loaded


def _load_model_config(loaded: LoadedSpec) -> None:
    """Read the HF ``config.json`` named by ``spec.model.config`` (relative to the file that set it)."""
    model = loaded.data.get("spec", {}).get("model") if isinstance(loaded.data.get("spec"), dict) else None
    if not isinstance(model, dict) or not isinstance(model.get("config"), str):
        return
    cpath = ("spec", "model", "config")
    loc = loaded.provenance.locate(cpath)
    base = Path(loc.file).parent if loc.file else Path(".")
    target = Path(model["config"])
    target = target if target.is_absolute() else base / target
    text, err = _read_text(target, str(target), MAX_CONFIG_BYTES)
    where = dict(path=json_path(cpath), line=loc.line, column=loc.column)
    if err:
        loaded.findings.append(_finding("LOAD011", loc.file, err.message,
                                        "the path is relative to the spec file that sets it", **where))
        return
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        loaded.findings.append(_finding("LOAD011", loc.file,
                                        f"{target} is not valid JSON: {exc.msg} at line {exc.lineno}",
                                        "give a Hugging Face config.json", **where))
        return
    if not isinstance(config, dict):
        loaded.findings.append(_finding("LOAD011", loc.file, f"{target} is not a JSON object",
                                        "give a Hugging Face config.json", **where))
        return
    loaded.model_config = config

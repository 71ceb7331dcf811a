"""Read specs, overlays and manifest streams: the only module of moegen that reads input files.

Loading is safe and positional:

* YAML is parsed with ruamel.yaml's round-trip composer, which builds only plain mappings,
  sequences and scalars (no Python objects). Before composing, the event stream is scanned and
  refused when it holds custom tags, anchors/aliases (alias bombs), mapping keys that are not
  scalars, more than one document (a spec or overlay), or nesting deeper than :data:`MAX_DEPTH`;
  files larger than :data:`MAX_BYTES` (:data:`MAX_STREAM_BYTES` for manifest streams) or not
  UTF-8 text are refused unread. Duplicate keys are errors.
* Every scalar, mapping and sequence keeps the file, line and column that set it
  (:class:`Provenance`), so findings can point at the overlay that set a field, or at the line
  of a manifest (and of a launch script inside it) an imported deployment came from.

Overlays merge as docs/spec.md §2 fixes (:mod:`.overlays`). Manifests (``gen validate`` and
``gen import`` of Kubernetes YAML) are read as :class:`InputUnit`: a file, a directory (every
``*.yaml``/``*.yml`` below it, and the env files its ``kustomization.yaml`` generates ConfigMaps
from) or standard input, each a list of :class:`Document`; a stream with a broken document keeps
the documents before it. What the documents mean is the importer's business
(``generator/importer``).
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (AliasEvent, CollectionEndEvent, CollectionStartEvent,
                                 DocumentEndEvent, DocumentStartEvent, MappingStartEvent,
                                 NodeEvent, ScalarEvent, SequenceStartEvent, StreamEndEvent)
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

from ..errors import Finding, Location, Severity
from .events import MAX_EXPANDED, Expansion, Reader, Replay
from .overlays import _new_names, merge  # noqa: F401 - merge: re-exported
from .provenance import PathKey, Provenance, json_path  # noqa: F401 - re-exported
from .skips import attach, comment_skips

#: Largest spec or overlay file accepted, bytes. Real specs are a few KiB; 1 MiB leaves room for
#: generated ones while keeping hostile inputs cheap to refuse.
MAX_BYTES = 1 << 20
#: Deepest nesting of mappings/sequences accepted (the schema itself is < 10 levels deep).
MAX_DEPTH = 64
MAX_CONFIG_BYTES = 1 << 20   # the largest model config.json accepted (HF's are < 10 KiB)
#: Largest manifest file or stream accepted, bytes (a whole ``helm template`` is a few MiB).
MAX_STREAM_BYTES = 16 << 20
#: Most files one directory input reads (a repository of manifests, not a file system).
MAX_FILES = 4096

#: Block scalars (``|``, ``>``): their content starts on the line after the indicator.
_BLOCK_STRINGS = (LiteralScalarString, FoldedScalarString)
#: Explicit tags a spec may carry (the YAML 1.2 core schema); anything else is refused.
_PLAIN_TAGS = {f"{p}{t}" for p in ("tag:yaml.org,2002:", "!!")
               for t in ("str", "int", "float", "bool", "null", "map", "seq")}


@dataclass
class LoadedSpec:
    """The merged spec as plain data, with provenance and what was read besides it.

    Attributes:
        data: the merged document (dicts, lists, str/int/float/bool/None).
        provenance: file/line/column of every value.
        files: the files read, in merge order (spec first).
        model_config: the parsed ``config.json`` named by ``spec.model.config`` (None if unset).
        findings: problems found while reading (nothing else runs if any is an error).
        skips: the waivers written in the spec and its overlays (:mod:`.skips`).
    """

    data: dict
    provenance: Provenance
    files: list[str]
    model_config: dict | None = None
    findings: list[Finding] = field(default_factory=list)
    skips: list = field(default_factory=list)


def _finding(code: str, file: str, message: str, hint: str = "", line: int = 0,
             column: int = 0, path: str = "$") -> Finding:
    return Finding(code, Severity.ERROR, path, message, hint, Location(file, line, column))


#: The path that means standard input (``gen validate -``), and the name findings give it.
STDIN, STDIN_NAME = "-", "<stdin>"
#: Standard input, read once (a command may parse its input twice: gen report, gen plan), up
#: to the largest limit any reader applies.
_stdin_cache: dict[int, bytes] = {}


def _read_stdin(limit: int) -> bytes:
    if 0 not in _stdin_cache:
        _stdin_cache[0] = sys.stdin.buffer.read(MAX_STREAM_BYTES + 1)
    return _stdin_cache[0][:limit + 1]


def display_name(path: Path) -> str:
    """How findings name an input file (standard input: ``<stdin>``)."""
    return STDIN_NAME if str(path) == STDIN else str(path)


def read_text(path: Path, display: str, limit: int) -> tuple[str | None, Finding | None]:
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


def _printable(o: int) -> bool:
    """YAML 1.2's printable set (spec 5.1: tab, LF, CR, x20-x7E, NEL, xA0-xD7FF, xE000-xFFFD,
    x10000-x10FFFF)."""
    return (o in (0x09, 0x0A, 0x0D, 0x85) or 0x20 <= o <= 0x7E or 0xA0 <= o <= 0xD7FF
            or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF)


def _non_printable(text: str, display: str) -> Finding | None:
    """The first character YAML forbids, located (checked on the distinct characters: fast on
    any size). ruamel's reader then skips its own check (:class:`.events.Reader`)."""
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


def _scan_events(yaml: YAML, text: str, display: str,
                 multi: bool = False) -> tuple[list, list[Finding]]:
    """Parse ``text`` into events, refusing what the formats never need as soon as it appears
    (before any node is built: cheap on bombs). Returns (events, findings).

    A spec or overlay (``multi`` false) is one document, refused whole on the first problem. A
    manifest stream (``multi``) may hold many: a document with a problem is dropped (its events
    are skipped to its end) and the others are kept; a syntax error ends the stream, keeping the
    documents before it."""
    depth = 0
    expansion = Expansion()
    docs = 0
    events: list = []
    findings: list[Finding] = []
    doc_start = 0            # index in ``events`` where the current document starts
    skipping = False         # the current document is refused: drop events to its end
    keys: list[bool | None] = []   # per open collection: next node is a mapping key (None: list)

    def refuse(code: str, message: str, hint: str, line: int, col: int) -> bool:
        nonlocal skipping
        findings.append(_finding(code, display, message, hint, line, col))
        if not multi:
            return True
        del events[doc_start:]
        skipping = True
        return False

    try:
        for ev in yaml.parse(io.StringIO(text)):
            if isinstance(ev, DocumentStartEvent):
                docs += 1
                doc_start, skipping, depth, keys = len(events), False, 0, []
                expansion = Expansion()
                if docs > 1 and not multi:
                    mark = ev.start_mark
                    refuse("LOAD004", "more than one YAML document", "put one InferenceDeployment"
                           f" per file (manifests: gen import {display} -o spec.yaml)", mark.line + 1, mark.column + 1)
                    return [], findings
            if skipping:
                if isinstance(ev, (DocumentEndEvent, StreamEndEvent)):
                    skipping = False
                    if isinstance(ev, StreamEndEvent):
                        events.append(ev)
                continue
            events.append(ev)
            problem = _event_problem(ev, keys, depth, anchors=multi)
            if problem is None and multi and expansion.add(ev):
                problem = ("LOAD005", f"YAML aliases expand this document to more than "
                           f"{MAX_EXPANDED} nodes (an alias bomb)",
                           "write the values out")
            if isinstance(ev, CollectionStartEvent):
                depth += 1
            elif isinstance(ev, CollectionEndEvent):
                depth -= 1
            if problem is not None:
                mark = ev.start_mark
                if refuse(*problem, mark.line + 1, mark.column + 1):
                    return [], findings
    except MarkedYAMLError as exc:
        findings.append(_yaml_error(exc, display))
        if not multi:
            return [], findings
        end = max((i for i, ev in enumerate(events) if isinstance(ev, DocumentEndEvent)),
                  default=-1)
        events = events[:end + 1] + [StreamEndEvent()] if end >= 0 else []
    except YAMLError as exc:  # pragma: no cover - ruamel raises MarkedYAMLError for syntax
        return [], [_finding("LOAD008", display, f"invalid YAML: {exc}")]
    return events, findings


def _event_problem(ev: Any, keys: list[bool | None], depth: int,
                   anchors: bool = False) -> tuple[str, str, str] | None:
    """What the hostile-input guard refuses in one event: (code, message, hint) or None.
    ``keys`` tracks, per open collection, whether the next node is a mapping key (updated).
    ``anchors``: anchors and aliases are accepted (Kubernetes manifests: kubectl resolves them;
    their expansion is bounded by :class:`.events.Expansion`); a spec or overlay refuses them."""
    problem = None
    if isinstance(ev, NodeEvent) and keys and keys[-1] is not None:
        is_key, keys[-1] = keys[-1], not keys[-1]
        if is_key and isinstance(ev, ScalarEvent) and ev.value == "<<" and not ev.style:
            problem = ("LOAD005", "YAML merge keys (<<) are not accepted",
                       "write the values out, or use an overlay (-f) to share them")
        elif is_key and isinstance(ev, CollectionStartEvent):
            problem = ("LOAD014", "a mapping key is a mapping or a list (Kubernetes objects and "
                       "specs have string keys; a template placeholder such as {{X}} parses as "
                       "one)", "quote the value, or substitute the placeholder before applying")
    if isinstance(ev, MappingStartEvent):
        keys.append(True)
    elif isinstance(ev, SequenceStartEvent):
        keys.append(None)
    elif isinstance(ev, CollectionEndEvent) and keys:
        keys.pop()
    if problem is not None:
        return problem
    if not anchors and (isinstance(ev, AliasEvent) or (isinstance(ev, NodeEvent) and ev.anchor)):
        return ("LOAD005", "YAML anchors and aliases are not accepted",
                "write the values out, or use an overlay (-f) to share them")
    tag = getattr(ev, "tag", None)
    if tag is not None and str(tag) not in _PLAIN_TAGS:
        return ("LOAD006", f"custom YAML tag {tag} is not accepted",
                "remove the tag; specs and manifests hold plain maps, lists and scalars")
    if isinstance(ev, CollectionStartEvent) and depth + 1 > MAX_DEPTH:
        return ("LOAD007", f"nesting deeper than {MAX_DEPTH} levels", "")
    return None


def _yaml_error(exc: MarkedYAMLError, display: str) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
    problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
    code = "LOAD009" if "duplicate key" in problem else "LOAD008"
    hint = "each key may appear once per mapping" if code == "LOAD009" else ""
    return _finding(code, display, f"invalid YAML: {problem}", hint, line, col)


def _block(lines: list[str], line: int) -> tuple[int, int]:
    """(first content line, its indentation) of a block scalar whose indicator is on 0-based
    ``line``: the first non-blank line after it."""
    for j in range(line + 1, len(lines)):
        if lines[j].strip():
            return j + 1, len(lines[j]) - len(lines[j].lstrip(" "))
    return line + 2, 0


def _plain(node: Any, path: PathKey, display: str, prov: Provenance,
           lines: list[str] | None = None) -> Any:
    """Convert ruamel nodes to plain data, recording each key's/item's location (and, with the
    text's ``lines``, where each block scalar's content starts)."""
    if isinstance(node, CommentedMap):
        out = {}
        for key in node:
            kline, kcol = node.lc.key(key)
            sub = (*path, str(key))
            prov.locations[sub] = Location(display, kline + 1, kcol + 1)
            value = node[key]
            if lines is not None and isinstance(value, _BLOCK_STRINGS):
                prov.blocks[sub] = _block(lines, node.lc.value(key)[0])
            out[str(key)] = _plain(value, sub, display, prov, lines)
        return out
    if isinstance(node, CommentedSeq):
        out_list = []
        for i, item in enumerate(node):
            iline, icol = node.lc.item(i)
            sub = (*path, i)
            prov.locations[sub] = Location(display, iline + 1, icol + 1)
            if lines is not None and isinstance(item, _BLOCK_STRINGS):
                prov.blocks[sub] = _block(lines, iline)
            out_list.append(_plain(item, sub, display, prov, lines))
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


def _parse_text(text: str, display: str, multi: bool) -> tuple[list[tuple[Any, Provenance]],
                                                                list[Finding]]:
    """Every document of ``text`` as (plain data, provenance), and what was refused."""
    err = _non_printable(text, display)
    if err:
        return [], [err]
    yaml = YAML(typ="rt", pure=True)
    yaml.Reader = Reader
    yaml.allow_duplicate_keys = False
    events, findings = _scan_events(yaml, text, display, multi)
    if not events or (findings and not multi):
        return [], findings
    constructor, _ = yaml.get_constructor_parser(io.StringIO(""))
    yaml._parser = Replay(events)   # the composer reads yaml.parser: replay the scanned events
    lines = text.splitlines() if multi else None
    docs: list[tuple[Any, Provenance]] = []
    try:
        if not multi:
            nodes = [constructor.get_single_data()]
        else:
            nodes = []
            while constructor.check_data():
                nodes.append(constructor.get_data())
    except MarkedYAMLError as exc:
        return docs, [*findings, _yaml_error(exc, display)]
    starts = [ev.start_mark.line for ev in events if isinstance(ev, DocumentStartEvent)]
    for i, node in enumerate(nodes):
        prov = Provenance()
        line = starts[i] + 1 if i < len(starts) else 1
        prov.locations[()] = Location(display, line, 1)
        docs.append((_plain(node, (), display, prov, lines), prov))
    attach(docs, text, display, starts, multi)
    return docs, findings


def parse_yaml_file(path: Path, overlay: bool = False) -> tuple[Any, Provenance, list[Finding]]:
    """Read one YAML file safely. Returns (data, provenance, findings); data is None on error.
    ``overlay``: the file is an overlay (only the hint of a non-mapping document differs)."""
    display = display_name(path)
    text, err = read_text(path, display, MAX_BYTES)
    if err:
        return None, Provenance(), [err]
    docs, findings = _parse_text(text, display, multi=False)
    if findings or not docs:
        return None, Provenance(), findings
    data, prov = docs[0]
    if not isinstance(data, dict):
        hint = ("an overlay is a mapping of the fields it changes, e.g. spec: {serving: ...}"
                if overlay else "a spec starts with apiVersion:, kind:, metadata:, spec:")
        what = "empty" if data is None else "not a mapping"
        return None, prov, [_finding("LOAD010", display, f"the document is {what}", hint, 1, 1)]
    return data, prov, []


def load_spec(spec_path: Path, overlays: Sequence[Path] = ()) -> LoadedSpec:
    """Read ``spec_path`` and merge ``overlays`` in order; load ``spec.model.config`` if set.

    Never raises for bad input: problems are returned in ``LoadedSpec.findings``.
    """
    data, prov, findings = parse_yaml_file(spec_path)
    if data is None:
        return LoadedSpec({}, prov, [display_name(spec_path), *map(str, overlays)], None,
                          findings)
    return with_overlays(data, prov, [display_name(spec_path)], overlays, findings)


def with_overlays(data: dict, prov: Provenance, files: list[str], overlays: Sequence[Path] = (),
                  findings: list[Finding] | None = None) -> LoadedSpec:
    """A spec document already read (a file's, or one the manifest importer built, with
    ``files`` it came from) with ``overlays`` merged in order and ``spec.model.config`` loaded."""
    findings, skips = list(findings or []), list(prov.skips)
    for overlay in overlays:
        odata, oprov, ofindings = parse_yaml_file(overlay, overlay=True)
        findings += ofindings
        if odata is not None:
            findings += _new_names(data, odata, oprov)
            data = merge(data, prov, odata, oprov)
            skips += oprov.skips
    loaded = LoadedSpec(data, prov, [*files, *map(str, overlays)], None, findings, skips)
    if not any(f.severity is Severity.ERROR for f in findings):
        _load_model_config(loaded)
    return loaded


@dataclass
class Document:
    """One YAML document of a manifest file or stream.

    ``data``: plain data (usually a Kubernetes object); ``provenance``: locations, paths from
    the document's root; ``file``: the name findings give its file (``<stdin>``: stdin).
    """

    data: Any
    provenance: Provenance
    file: str


@dataclass
class InputUnit:
    """One command-line input of ``gen validate`` / ``gen import``: a file, a directory or
    standard input, read as documents.

    ``documents``: every document, in file order (a directory's files sorted by path), and the
    ConfigMaps a ``kustomization.yaml``'s ``configMapGenerator`` builds from env files (keys
    located at the env files' lines); ``files``: each file read -> indices of its documents;
    ``findings``: what could not be read; ``texts``: each file's size, bytes; ``marks``: the
    files whose text matches :func:`read_unit`'s ``mark`` -> the name of its group that matched;
    ``inputs``: each file of a pool of inputs (``generator/inputs.py``) -> the input it is from.
    """

    name: str
    documents: list[Document] = field(default_factory=list)
    files: dict[str, list[int]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    texts: dict[str, int] = field(default_factory=dict)
    marks: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)


def expand_inputs(paths: list[Path]) -> tuple[list[tuple[Path, list[Path]]], list[str]]:
    """Each input with the files it stands for: a file (or ``-``) itself, a directory every
    ``*.yaml``/``*.yml`` below it (sorted; hidden files and directories skipped; at most
    :data:`MAX_FILES`). A file named again (``gen validate - -``, a file and its directory) is
    read once, at its first mention. Returns (inputs, missing inputs)."""
    out, missing, seen = [], [], set()

    def first(f: Path) -> bool:
        key = STDIN if str(f) == STDIN else os.path.realpath(f)
        if key in seen:
            return False
        seen.add(key)
        return True

    for p in paths:
        if str(p) == STDIN or p.is_file() or (p.exists() and not p.is_dir()):
            if first(p):
                out.append((p, [p]))
        elif p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.suffix in (".yaml", ".yml")
                           and f.is_file() and not any(part.startswith(".")
                                                       for part in f.relative_to(p).parts))
            fresh = [f for f in files[:MAX_FILES] if first(f)]
            if fresh or not files:
                out.append((p, fresh))
        else:
            missing.append(str(p))
    return out, missing


def read_unit(path: Path, files: list[Path] | None = None, mark: Any = None) -> InputUnit:
    """Read one input (:func:`expand_inputs` gives ``files``) as documents (``mark``: a
    compiled pattern; files whose text it matches are in ``marks``). Never raises for bad
    input: what cannot be read is in ``findings``; a file that fails part-way keeps the
    documents before the failure."""
    unit = InputUnit(display_name(path))
    for f in files if files is not None else [path]:
        name = display_name(f)
        text, err = read_text(f, name, MAX_STREAM_BYTES)
        if err:
            unit.findings.append(err)
            continue
        unit.texts[name] = len(text.encode("utf-8"))
        m = mark.search(text) if mark is not None else None
        if m:
            unit.marks[name] = m.lastgroup or ""
        docs, findings = _parse_text(text, name, multi=True)
        unit.findings += findings
        first = len(unit.documents)
        unit.documents += [Document(d, p, name) for d, p in docs]
        unit.files[name] = list(range(first, len(unit.documents)))
    for i in [i for i, d in enumerate(unit.documents) if _is_kustomization(d.data)]:
        _generated_configmaps(unit, unit.documents[i])
    return unit


def _is_kustomization(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == "Kustomization" \
        and str(data.get("apiVersion", "")).startswith("kustomize.config.k8s.io/")


def _generated_configmaps(unit: InputUnit, doc: Document) -> None:
    """The ConfigMaps ``configMapGenerator`` builds from env files and literals (unhashed names,
    as an unbuilt directory's pods refer to them); env files must lie below the kustomization."""
    base = Path(doc.file).parent
    gens = doc.data.get("configMapGenerator")
    for j, gen in enumerate(gens if isinstance(gens, list) else []):
        if not isinstance(gen, dict) or not isinstance(gen.get("name"), str):
            continue
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": gen["name"]},
              "data": {}}
        prov = Provenance({(): doc.provenance.locate(("configMapGenerator", j))})
        envs = gen.get("envs") or ([gen["env"]] if isinstance(gen.get("env"), str) else [])
        for k, env in enumerate(envs if isinstance(envs, list) else []):
            name, where = str(base / str(env)), doc.provenance.locate(("configMapGenerator", j))
            if base.resolve() not in (base / str(env)).resolve().parents:
                unit.findings.append(_finding("LOAD001", doc.file, f"env file {env} is outside "
                                              f"{base}", "", where.line, where.column))
                continue
            text, err = read_text(base / str(env), name, MAX_BYTES)
            unit.findings += [err] if err else []
            prov.skips += comment_skips(text or "", name)
            for n, line in enumerate((text or "").splitlines(), 1):
                key, eq, value = line.partition("=")
                if eq and key.strip() and not line.lstrip().startswith("#"):
                    cm["data"][key.strip()] = value
                    prov.locations[("data", key.strip())] = Location(name, n, 1)
        for lit in gen.get("literals") or []:
            key, eq, value = str(lit).partition("=")
            cm["data"].update({key: value} if eq else {})
        if isinstance(doc.data.get("namespace"), str):
            cm["metadata"]["namespace"] = doc.data["namespace"]
        unit.documents.append(Document(cm, prov, doc.file))


def parse_embedded(text: str, file: str, block: tuple[int, int] | None,
                   at: Location) -> tuple[Any, Provenance, list[Finding]]:
    """A YAML document held in a string of another file (a ConfigMap's ``prefill.yaml`` that
    an engine reads with ``--config``), read with the same guard; its locations are those in
    the outer file (``block``: the string's first content line and indentation, else every
    value is located at ``at``)."""
    docs, findings = _parse_text(text, file, multi=False)
    if findings or not docs:
        return None, Provenance(), [Finding(f.code, f.severity, f.path, f.message, f.hint, _moved(
            f.location, block, at)) for f in findings]
    data, inner = docs[0]
    prov = Provenance({k: _moved(v, block, at) for k, v in inner.locations.items()})
    return data, prov, []


def _moved(loc: Location, block: tuple[int, int] | None, at: Location) -> Location:
    return at if block is None or not loc.line else \
        Location(at.file, block[0] + loc.line - 1, block[1] + loc.column)


def loaded_from_document(doc: Document, overlays: Sequence[Path] = (),
                         size: int = 0) -> LoadedSpec:
    """The :class:`LoadedSpec` of a spec document read by :func:`read_unit` (one document per
    spec file, at most :data:`MAX_BYTES`: the same limits as :func:`load_spec`)."""
    if size > MAX_BYTES:
        return LoadedSpec({}, doc.provenance, [doc.file], None, [_finding(
            "LOAD002", doc.file, f"{doc.file} is larger than the limit of {MAX_BYTES} bytes",
            "a spec is a few KiB: is this the right file?")])
    return with_overlays(doc.data, doc.provenance, [doc.file], overlays)


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
    text, err = read_text(target, str(target), MAX_CONFIG_BYTES)
    where = dict(path=json_path(cpath), line=loc.line, column=loc.column)
    if err:
        loaded.findings.append(_finding("LOAD011", loc.file, err.message,
                                        "the path is relative to the spec file that sets it", **where))
        return
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        if loc.file == str(target):   # --model-config: at the error's own line
            where.update(line=exc.lineno, column=exc.colno)
        loaded.findings.append(_finding("LOAD011", loc.file,
                                        f"{target} is not valid JSON: {exc.msg} at line {exc.lineno}",
                                        "give a Hugging Face config.json", **where))
        return
    if not isinstance(config, dict):
        loaded.findings.append(_finding("LOAD011", loc.file, f"{target} is not a JSON object",
                                        "give a Hugging Face config.json", **where))
        return
    loaded.model_config = config

"""Overlay merging (docs/spec.md §2): in command-line order, last wins; mappings merge key by
key; lists whose items are all mappings with a ``name`` merge item by item by ``name`` (new names
are appended); every other list is replaced whole. Provenance follows the value that won."""

from __future__ import annotations

import difflib
from typing import Any

from ..errors import Finding, Severity
from .provenance import PathKey, Provenance, json_path


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

"""``gen explain``: every value the deployment runs with and where it comes from.

Three kinds of value, each line ``$.path = value    source``:

* set in a file: the file:line that set it (overlays included: the last one wins);
* a default of the spec format (``default``), e.g. ``router.port`` 8080, ``hostNetwork`` false;
* derived for a role when the spec leaves it unset (``derived: ...`` says from what): the engine
  release's ``gpuMemoryUtilization``, maxModelLen from the model, SGLang's mem_fraction_static
  from the HBM check, the pods' CPU/memory/ephemeral-storage requests (``gen size`` shows the
  arithmetic);
* the engine flags moegen derives (``$.spec.roles[i] --flag = value``), each with the spec field
  that sets it (the dialect's DERIVED_FLAGS table, rule ENG005), as the leader pod runs them.
"""

from __future__ import annotations

import dataclasses
import json

from ..engines.options import FLAG, release_options
from ..sizing import RoleSizing
from ..spec.load import json_path


def _leaves(node, path=()):
    """(path, value) of every leaf; lists of scalars are one leaf."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list) and node and all(isinstance(v, (dict, list)) for v in node):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path, node


def _derived(checked) -> list[tuple[tuple, object, str]]:
    """Per role, the values the engine runs with that the spec leaves unset."""
    out = []
    spec, dialect = checked.spec, checked.dialect
    names = [r.name for r in checked.roles]
    for i, role_spec in enumerate(spec.spec.roles):
        if role_spec.name not in names:
            continue
        role = checked.roles[names.index(role_spec.name)]
        s = role.serving
        base = ("spec", "roles", i)
        own = role_spec.serving.model_dump(exclude_none=True) if role_spec.serving else {}
        top = spec.spec.serving.model_dump(exclude_none=True)
        for key, value in dataclasses.asdict(s).items():
            if key in own or value is None:
                continue
            source = (f"inherited: $.spec.serving.{key}" if key in top
                      else "default (ServingSettings)")
            out.append(((*base, "serving", key), value, source))
        if s.maxModelLen is None:
            out.append(((*base, "serving", "maxModelLen"), role.arch.max_position_embeddings,
                        "derived: the model's max_position_embeddings"))
        z = checked.sizing[i] if i < len(checked.sizing) else None
        if dialect.engine == "vllm" and s.gpuMemoryUtilization is None:
            out.append(((*base, "serving", "gpuMemoryUtilization"),
                        dialect.gpu_memory_utilization_default,
                        f"default of vLLM {dialect.version}"))
        if dialect.engine == "sglang" and s.memFractionStatic is None and isinstance(z, RoleSizing):
            out.append(((*base, "serving", "memFractionStatic"), round(z.utilization, 3),
                        "derived: the HBM check (gen size)"))
        h = checked.host[i] if i < len(checked.host) else None
        if h is not None:
            p = max(h.pods, key=lambda r: r.memory_gib)
            for key, value in (("cpu", str(p.cpu)), ("memory", f"{p.memory_gib}Gi"),
                               ("ephemeralStorage", f"{p.ephemeral_gib}Gi")):
                if not any(getattr(layer, key, None) for layer in (role_spec.pod, spec.spec.pod)
                           if layer is not None):
                    out.append(((*base, "pod", key), value,
                                "derived: the largest pod's processes, /dev/shm and weight "
                                "staging (gen size shows every pod)"))
    return out


def _derived_flags(checked) -> list[tuple[str, str, str]]:
    """(``$.spec.roles[i] --flag``, value, source) of every derived flag the leader pod of each
    role runs (the rendered launch; user engineArgs, which come after, are already shown as set
    in their file)."""
    from ..pipeline import deployment_plan
    dialect = checked.dialect
    opts = release_options(dialect.engine, dialect.version)
    derived = dialect.derived_flags
    names = [r.name for r in checked.spec.spec.roles]
    out = []
    for rp in deployment_plan(checked).roles:
        i = names.index(rp.name)
        user = set(checked.spec.spec.roles[i].engineArgs)
        args = [*rp.launch.common, *rp.launch.per_pod[0]]
        for j, a in enumerate(args):
            if not FLAG.match(a) or a in user:
                continue
            name = a.partition("=")[0]
            canon = (opts.canonical(name) if opts else None) or name
            if canon not in derived:
                continue
            value = a.partition("=")[2] or (args[j + 1] if j + 1 < len(args)
                                            and not FLAG.match(args[j + 1]) else "")
            out.append((f"$.spec.roles[{i}] {name}", json.dumps(value) if value else "(set)",
                        f"derived{' ' if derived[canon].startswith('(') else ': '}{derived[canon]}"))
    return out


#: Findings saying the values under their path are not rendered (RTR015: a router with no
#: prefill/decode pair to route): gen explain marks those rows.
NOT_RENDERED = ("RTR015",)


def explain(checked, prefix: str = "$") -> str:
    """``$.path = value    source`` for every value under ``prefix`` (see the module docstring).

    ``checked``: the pipeline result; defaults need a spec that passed the structural check and
    derived values one that passed every check.
    """
    loaded = checked.loaded
    rows: list[tuple[str, str, str]] = []
    seen = set()
    for path, value in _leaves(loaded.data):
        loc = loaded.provenance.locate(path)
        rows.append((json_path(path), json.dumps(value), f"{loc.file}:{loc.line}"))
        seen.add(json_path(path))
    if checked.spec is not None:
        dump = checked.spec.model_dump(mode="json", exclude_none=True)
        for path, value in _leaves(dump):
            jp = json_path(path)
            if jp not in seen and not any(jp.startswith(s + ".") or jp.startswith(s + "[")
                                          for s in seen):
                if value in ({}, []):
                    continue
                rows.append((jp, json.dumps(value), "default"))
        if checked.ok and checked.roles:
            for path, value, source in _derived(checked):
                rows.append((json_path(path), json.dumps(value), source))
            rows += _derived_flags(checked)
    unused = [f for f in checked.findings if f.code in NOT_RENDERED]
    rows = [(a, b, c + "".join(f"  (not rendered: {f.code})" for f in unused
                               if a == f.path or a.startswith(f.path + ".")))
            for a, b, c in rows]
    rows = [r for r in rows if r[0] == prefix or r[0].startswith(prefix)
            and r[0][len(prefix)] in ".["] if prefix != "$" else rows
    width = max((len(a) + len(b) for a, b, _ in rows), default=0) + 3
    return "".join(f"{a} = {b}".ljust(width) + f"  {c}\n" for a, b, c in rows)

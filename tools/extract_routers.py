"""Extract the per-release facts of every routing component moegen renders into package data.

Reads each release's own tagged source, never a hand-written list:

* **llm-d-router** (formerly llm-d-inference-scheduler; the endpoint picker and the P/D routing
  sidecar), every tag ``v0.6.0`` .. ``v0.10.0`` of a git mirror (``--llm-d-router``). Per
  release: the images (``Makefile`` ``EPP_IMAGE`` / ``SIDECAR_IMAGE``), the registered plugin
  types (``plugin.Register*`` calls in ``pkg/plugins/register.go``,
  ``pkg/epp/framework/plugins/register.go`` or ``cmd/epp/runner/runner.go``, plus the
  Gateway API Inference Extension runner the release's ``go.mod`` pins while the picker was
  built on it), their stability level and deprecation (``StabilityAlpha``,
  ``RegisterDeprecated``, ``// Deprecated:`` on the type constant), the JSON fields of the
  parameter structs each factory decodes, whether plugin parameters are decoded strictly
  (``DisallowUnknownFields`` in the framework's ``registry.go``), the EndpointPickerConfig
  group (``apix/config/v1alpha1``) and the groups the loader still accepts, the registered
  feature gates (``loader.RegisterFeatureGate``), the picker's and the sidecar's command-line
  flags with their deprecations (``fs.*Var`` / ``flag.*``, ``MarkDeprecated``), the
  sidecar's KV connectors, and how the picker's metrics extractor reads a family of several
  series (``getLatestMetric``: the greatest exposition timestamp wins).
* **gateway-api-inference-extension** (``--gie``): the pinned commit or tag of each release
  above (the runner, plugin framework and loader of v0.6-v0.8; the InferencePool CRD of all:
  served versions, ``targetPorts`` bounds).
* **vllm-router** and **smg**: ``py_src/vllm_router/router_args.py`` of each sdist
  (``vllm_router-X.tar.gz``) and ``smg/router_args.py`` of each wheel (``smg-X-*.whl``) in a
  directory (``--vllm-router``, ``--smg``; as ``pip download`` leaves them), read with Python's
  ``ast`` (no code of theirs runs): every ``add_argument`` option with its default (dataclass
  field defaults resolved), choices and nargs.

Writes ``generator/engines/data/router-releases.json``. ``tests/test_router_data.py`` checks
the committed file (its shape, and against the smg 1.13.0 parser dump in shared/reference);
with ``MOEGEN_ROUTER_SOURCES=<dir>`` holding ``llm-d-router.git``, ``gie.git``, ``vllm-router/``
and ``smg/`` it re-runs this script and compares byte for byte.

Usage: python tools/extract_routers.py --llm-d-router GIT_DIR --gie GIT_DIR
       --vllm-router DIR --smg DIR [--out JSON]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "generator" / "engines" / "data" / "router-releases.json"

#: The llm-d-router releases covered (the tag names of the repository).
SCHEDULER_TAGS = ["v0.6.0", "v0.7.0", "v0.8.0", "v0.9.0", "v0.10.0"]
#: The Go module paths of the two repositories (llm-d-router was renamed at v0.9.0).
LLMD_MODULES = ("github.com/llm-d/llm-d-inference-scheduler", "github.com/llm-d/llm-d-router")
GIE_MODULE = "sigs.k8s.io/gateway-api-inference-extension"
#: External Go types plugin parameters decode into (their JSON fields, from k8s.io/apimachinery
#: pkg/apis/meta/v1/types.go LabelSelector).
EXTERNAL_TYPES = {"metav1.LabelSelector": {"matchLabels": "map[string]string",
                                           "matchExpressions": "[]LabelSelectorRequirement"}}


# -- source trees ----------------------------------------------------------------------------
class GitTree:
    """One commit of a git directory (a bare mirror): files by path, read with ``git show``."""

    def __init__(self, git_dir: Path, ref: str):
        self.git_dir, self.ref = str(git_dir), ref
        self.commit = self._git("rev-parse", f"{ref}^{{commit}}").strip()
        listing = self._git("ls-tree", "-r", "--name-only", self.commit)
        self.paths = set(listing.splitlines())
        self._cache: dict[str, str | None] = {}

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True,
                              capture_output=True, text=True).stdout

    def read(self, path: str) -> str | None:
        if path not in self.paths:
            return None
        if path not in self._cache:
            self._cache[path] = self._git("show", f"{self.commit}:{path}")
        return self._cache[path]

    def go_files(self, directory: str) -> list[str]:
        """Non-test Go files directly in ``directory``."""
        prefix = directory.rstrip("/") + "/"
        return sorted(p for p in self.paths if p.startswith(prefix) and "/" not in p[len(prefix):]
                      and p.endswith(".go") and not p.endswith("_test.go"))


def _git_dir(path: Path) -> Path:
    """A mirror path as fetched (``.../repo``) or a checkout (``.../.git``)."""
    return path / ".git" if (path / ".git").is_dir() else path


# -- Go source, read with regular expressions ------------------------------------------------
_CONST = re.compile(r'^\s*(?:const\s+)?([A-Za-z_]\w*)\s*(?:string\s*)?=\s*(?:"([^"]*)"|([A-Za-z_][\w.]*))\s*(?://.*)?$')


def _imports(text: str) -> dict[str, str]:
    """alias -> import path of one Go file (the alias defaults to the path's last element)."""
    out = {}
    block = re.search(r"^import\s*\((.*?)^\)", text, re.S | re.M)
    lines = block.group(1).splitlines() if block else re.findall(r'^import\s+(.*)$', text, re.M)
    for line in lines:
        m = re.match(r'\s*(?:([A-Za-z_]\w*|\.)\s+)?"([^"]+)"', line)
        if m:
            out[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
    return out


def _call_args(text: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose ``(`` is at ``start``."""
    depth, i, args, cur = 0, start, [], []
    in_str = None
    while i < len(text):
        c = text[i]
        if in_str:
            cur.append(c)
            if c == "\\" and in_str == '"':
                cur.append(text[i + 1])
                i += 1
            elif c == in_str:
                in_str = None
        elif c in "\"`":
            in_str = c
            cur.append(c)
        elif c == "/" and text[i:i + 2] == "//":
            j = text.find("\n", i)
            i = j if j >= 0 else len(text)
            continue
        elif c in "([{":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return [a for a in args if a], i
            cur.append(c)
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    raise ValueError("unbalanced call")


def _func_body(text: str, name: str) -> str | None:
    """The body of ``func name(`` (or of a method of that name) in ``text``."""
    m = re.search(rf"^func\s+(?:\([^)]*\)\s*)?{re.escape(name)}\s*\(", text, re.M)
    if not m:
        return None
    i = text.index("{", text.index(")", m.end()))
    # Skip over the result list's braces (none in these signatures) to the body's brace.
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    return None


class GoRepo:
    """Constant, function and struct lookup across the llm-d tree and the GIE tree it pins."""

    def __init__(self, llmd: GitTree, gie: GitTree | None):
        self.llmd, self.gie = llmd, gie
        self._consts: dict[tuple[int, str], dict[str, tuple[str, bool, str]]] = {}

    def tree_of(self, import_path: str) -> tuple[GitTree | None, str]:
        for mod in LLMD_MODULES:
            if import_path == mod or import_path.startswith(mod + "/"):
                return self.llmd, import_path[len(mod) + 1:]
        if self.gie is not None and import_path.startswith(GIE_MODULE + "/"):
            return self.gie, import_path[len(GIE_MODULE) + 1:]
        return None, ""

    def consts(self, tree: GitTree, directory: str) -> dict[str, tuple[str, bool, str]]:
        """name -> (value expression, deprecated, file) of the package's constants/vars."""
        key = (id(tree), directory)
        if key not in self._consts:
            out = {}
            for path in tree.go_files(directory):
                text = tree.read(path) or ""
                lines = text.splitlines()
                for n, line in enumerate(lines):
                    m = _CONST.match(line)
                    if not m or m.group(1) in ("package", "import", "return"):
                        continue
                    doc = []
                    k = n - 1
                    while k >= 0 and lines[k].strip().startswith("//"):
                        doc.append(lines[k])
                        k -= 1
                    trailing = line.split("//", 1)[1] if "//" in line else ""
                    deprecated = any("Deprecated" in d for d in doc) or "Deprecated" in trailing
                    value = f'"{m.group(2)}"' if m.group(2) is not None else m.group(3)
                    out.setdefault(m.group(1), (value, deprecated, path))
            self._consts[key] = out
        return self._consts[key]

    def resolve(self, expr: str, tree: GitTree, directory: str, imports: dict[str, str],
                depth: int = 0) -> tuple[str | None, bool]:
        """(string value, deprecated) of a constant expression (``"x"``, ``Name``,
        ``pkg.Name``); None when it is not a string constant."""
        expr = expr.strip()
        if expr.startswith('"') and expr.endswith('"'):
            return expr[1:-1], False
        if depth > 5:
            return None, False
        if "." in expr:
            alias, name = expr.split(".", 1)
            if alias not in imports:
                return None, False
            t, d = self.tree_of(imports[alias])
            if t is None:
                return None, False
        else:
            t, d, name = tree, directory, expr
        entry = self.consts(t, d).get(name)
        if entry is None:
            return None, False
        value, deprecated, path = entry
        inner, dep2 = self.resolve(value, t, d, _imports(t.read(path) or ""), depth + 1)
        return inner, deprecated or dep2

    def find_func(self, tree: GitTree, directory: str, name: str) -> tuple[str, str] | None:
        """(body, file) of function ``name`` in a package."""
        for path in tree.go_files(directory):
            body = _func_body(tree.read(path) or "", name)
            if body is not None:
                return body, path
        return None

    def struct_fields(self, tree: GitTree, directory: str, name: str, depth: int = 0):
        """JSON field -> type (a nested dict for a struct of the same package) of struct
        ``name``; None when the package does not declare it."""
        for path in tree.go_files(directory):
            text = tree.read(path) or ""
            m = re.search(rf"^type\s+{re.escape(name)}\s+struct\s*\{{(.*?)^\}}", text, re.S | re.M)
            if not m:
                continue
            fields: dict = {}
            for line in m.group(1).splitlines():
                f = re.match(r'\s*(\w+)\s+([\w.*\[\]]+(?:\[[\w.]+\][\w.*]+)?)\s+`[^`]*json:"([^",]*)', line)
                if not f:
                    e = re.match(r'\s*\*?([A-Z]\w*)\s*(?:`[^`]*`)?\s*$', line)   # embedded
                    if e and depth < 3:
                        sub = self.struct_fields(tree, directory, e.group(1), depth + 1)
                        if isinstance(sub, dict):
                            fields.update(sub)
                    continue
                key, typ = f.group(3) or f.group(1), f.group(2)
                if key == "-":
                    continue
                base = typ.lstrip("*[]")
                sub = self.struct_fields(tree, directory, base, depth + 1) \
                    if depth < 3 and re.fullmatch(r"[A-Za-z_]\w*", base) else None
                fields[key] = sub if isinstance(sub, dict) and sub else typ
            return fields
        return None

    def factory_parameters(self, factory: str, tree: GitTree, directory: str,
                           imports: dict[str, str]):
        """The JSON fields of the parameter structs a plugin factory decodes (the structs its
        body, and the parser functions it calls in its package, build or decode into); {}
        for a factory that takes none; None when they cannot be read."""
        if "." in factory:
            alias, name = factory.split(".", 1)
            if alias not in imports:
                return None
            t, d = self.tree_of(imports[alias])
        else:
            t, d, name = tree, directory, factory
        if t is None:
            return None
        found = self.find_func(t, d, name)
        if found is None:
            return None
        body, path = found
        bodies = [body]
        for called in set(re.findall(r"\b([A-Za-z_]\w*(?:Parser|[Pp]arse\w*|Factory))\(", body)):
            if called != name:
                more = self.find_func(t, d, called)
                if more is not None:
                    bodies.append(more[0])
        text = "\n".join(bodies)
        if not re.search(r"(?:Decode|Unmarshal)\(", text):
            return {}
        file_imports = _imports(t.read(path) or "")
        types = set(re.findall(r"\b([A-Za-z_][\w.]*)\{", text)) \
            | set(re.findall(r"\bvar\s+\w+\s+\*?([A-Za-z_][\w.]*)", text)) \
            | set(re.findall(r"\.\(\*?([A-Za-z_][\w.]*)\)", text))
        # ``parameters := DefaultConfig``: a package-level ``var DefaultConfig = Config{...}``.
        for var in re.findall(r"\b\w+\s*:=\s*([A-Z]\w*)\s*$", text, re.M):
            for p in t.go_files(d):
                m = re.search(rf"^\s*(?:var\s+)?{var}\s*=\s*&?([A-Za-z_][\w.]*)\{{",
                              t.read(p) or "", re.M)
                if m:
                    types.add(m.group(1))
                    text += f"\n_ = {m.group(1)}{{}}"
        params: dict = {}
        for typ in sorted(types):
            if not _is_params_type(typ, text):
                continue
            if typ in EXTERNAL_TYPES:
                params.update(EXTERNAL_TYPES[typ])
                continue
            if "." in typ:
                alias, tname = typ.split(".", 1)
                if alias not in file_imports:
                    continue
                tt, td = self.tree_of(file_imports[alias])
                if tt is None:
                    continue
                fields = self.struct_fields(tt, td, tname)
            else:
                fields = self.struct_fields(t, d, typ)
            if isinstance(fields, dict):
                params.update(fields)
        return params or None


def _is_params_type(typ: str, text: str) -> bool:
    """A struct the factory decodes parameters into (not a plugin it returns)."""
    t = re.escape(typ)
    return bool(re.search(rf"(?:\b\w+\s*:?=\s*&?{t}\{{|var\s+\w+\s+\*?{t}\b|\.\(\*?{t}\))", text))


# -- llm-d-router / llm-d-inference-scheduler -------------------------------------------------
_REGISTER = re.compile(r"\b(plugin|fwkplugin|plugins)\.(Register\w*)\(")
_STABILITY = re.compile(r"Stability(Alpha|Beta|Stable)")


def _makefile_vars(text: str) -> dict[str, str]:
    out = {}
    for m in re.finditer(r"^(?:export\s+)?([A-Z_]+)\s*[?:]?=\s*(.*?)\s*$", text, re.M):
        out.setdefault(m.group(1), m.group(2))
    return out


def _expand(value: str, env: dict[str, str], depth: int = 0) -> str:
    if depth > 10:
        return value
    return re.sub(r"\$\(([A-Z_]+)\)", lambda m: _expand(env.get(m.group(1), ""), env, depth + 1),
                  value)


def _images(tree: GitTree, tag: str) -> dict:
    """The picker's and the sidecar's image repositories (Makefile ``EPP_IMAGE`` and
    ``SIDECAR_IMAGE`` without their dev tags); each release pushes its git tag."""
    env = _makefile_vars(tree.read("Makefile") or "")
    out = {}
    for key, var, tagvar in (("epp", "EPP_IMAGE", "EPP_TAG"), ("sidecar", "SIDECAR_IMAGE",
                                                                "SIDECAR_TAG")):
        raw = env[var]
        repo = _expand(raw.replace(f":$({tagvar})", ""), env)
        out[key] = {"repository": repo, "tag": tag, "source": "Makefile " + var}
    return out


def _gie_pin(tree: GitTree) -> str | None:
    """The GIE version go.mod requires (a tag, or the commit of a pseudo-version)."""
    m = re.search(rf"^\s*{re.escape(GIE_MODULE)}\s+(\S+)", tree.read("go.mod") or "", re.M)
    if not m:
        return None
    version = m.group(1)
    pseudo = re.match(r"v\d+\.\d+\.\d+-(?:0\.)?\d{14}-([0-9a-f]{12})", version)
    return pseudo.group(1) if pseudo else version


def _registrations(repo: GoRepo, tree: GitTree, path: str) -> list[dict]:
    """Every ``plugin.Register*`` call of one file, resolved."""
    text = tree.read(path) or ""
    directory = path.rsplit("/", 1)[0]
    imports = _imports(text)
    out = []
    for m in _REGISTER.finditer(text):
        fn = m.group(2)
        if fn in ("RegisterFeatureGate",):
            continue
        args, end = _call_args(text, m.end() - 1)
        if len(args) < 2:
            continue
        line = text.count("\n", 0, m.start()) + 1
        type_name, const_deprecated = repo.resolve(args[0], tree, directory, imports)
        if type_name is None:
            continue
        stability = None
        rest = args[1:]
        s = _STABILITY.search(rest[0])
        if s:
            stability = s.group(1).lower()
            rest = rest[1:]
        factory = rest[0]
        entry = {"type": type_name, "stability": stability or "unversioned",
                 "source": f"{path}:{line}", "factory": factory,
                 "imports": imports, "dir": directory}
        if fn.startswith("RegisterDeprecated"):
            since, removal, replacement = rest[-3:]
            entry["deprecated"] = {
                "since": since.strip('"'), "removal": removal.strip('"'),
                "replacement": repo.resolve(replacement, tree, directory, imports)[0]}
        elif const_deprecated or "keep backward compatibility" in text[m.start():end + 200].split("\n")[0]:
            entry["deprecated"] = {"since": None, "removal": None, "replacement": None}
        if fn == "RegisterAsDefaultProducer":
            entry["defaultProducer"] = True
        out.append(entry)
    return out


def _flags(repo: GoRepo, tree: GitTree, paths: list[str]) -> dict[str, dict]:
    """Command-line flags (Go ``flag`` / ``pflag``) of the files: name -> {type, deprecated}."""
    out: dict[str, dict] = {}
    for path in paths:
        text = tree.read(path)
        if text is None:
            continue
        directory = path.rsplit("/", 1)[0]
        imports = _imports(text)
        for m in re.finditer(r"\b(?:fs|flag|pflag|flags|cmdFlags)\.(String|Bool|Int|Int64|Duration|"
                             r"Float64|Uint|StringSlice|StringArray)(Var)?(P)?\(", text):
            args, _ = _call_args(text, m.end() - 1)
            name_arg = args[1] if m.group(2) else args[0]
            name, _ = repo.resolve(name_arg, tree, directory, imports)
            if name and re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
                line = text.count("\n", 0, m.start()) + 1
                out.setdefault(name, {"type": m.group(1).lower(), "source": f"{path}:{line}"})
        for m in re.finditer(r"\.MarkDeprecated\(", text):
            args, _ = _call_args(text, m.end() - 1)
            name, _ = repo.resolve(args[0], tree, directory, imports)
            message = args[1].strip('"') if len(args) > 1 and args[1].startswith('"') else ""
            if name in out:
                out[name]["deprecated"] = message
    return dict(sorted(out.items()))


def _refused_flags(tree: GitTree, path: str) -> dict[str, str]:
    """Flags the options' ``Validate`` refuses when set at all (``deprecatedMetricFlags``: GIE
    v1.4.0 pkg/epp/server/options.go, a list; llm-d-router v0.9.0, a map): name -> the source of
    the refusal. The picker exits at start with "flag ... is deprecated and cannot be used"."""
    text = tree.read(path) or ""
    m = re.search(r"deprecatedMetricFlags\s*:?=\s*(?:\[\]string|map\[string\]struct\{\})\{", text)
    check = re.search(r'"flag %q is deprecated and cannot be used', text)
    if not m or not check:
        return {}
    body = text[m.end():text.index("\n}", m.end())]
    line = text.count("\n", 0, check.start()) + 1
    return {name: f"{path}:{line}" for name in re.findall(r'"([a-z0-9-]+)"', body)}


def _metrics_collector(tree: GitTree, path: str) -> dict:
    """Which metrics collector the picker runs by default: ``legacy`` (the metric flags' names,
    vLLM's unless set; the pluggable data layer behind the ``dataLayer`` gate: GIE v1.4.0
    cmd/epp/runner/runner.go) or ``datalayer`` (the metrics extractor, which picks an engine's
    metric names by a pod label: GIE v1.5.0 behind ``enableLegacyMetrics``, llm-d-router v0.9.0
    only)."""
    text = tree.read(path) or ""
    m = re.search(r"datalayerMetricsEnabled := (!?)r\.featureGates\[datalayer\.(\w+)\]", text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        return {"default": "datalayer" if m.group(1) else "legacy", "gate": m.group(2),
                "source": f"{path}:{line}"}
    return {"default": "datalayer", "gate": None, "source": path}


def _engine_label(tree: GitTree) -> dict | None:
    """The pod label whose value names a pod's engine to the metrics extractor
    (``DefaultEngineTypeLabelKey``), with its source."""
    for path in sorted(tree.paths):
        if path.endswith("mapping_registry.go") and "extractor/metrics" in path:
            text = tree.read(path) or ""
            m = re.search(r'DefaultEngineTypeLabelKey\s*=\s*"([^"]+)"', text)
            if m:
                return {"key": m.group(1),
                        "source": f"{path}:{text.count(chr(10), 0, m.start()) + 1}"}
    return None


def _objective_groups(tree: GitTree) -> dict:
    """The API groups whose InferenceObjective / InferenceModelRewrite the picker watches: from
    v0.9.0 the first of ``supportedInferenceAPIGVs`` discovery finds (``llm-d.ai``, the group of
    apix/v1alpha2, preferred; then the legacy group: pkg/epp/server/controller_config.go),
    before it the Gateway API Inference Extension's ``inference.networking.x-k8s.io``."""
    path = "pkg/epp/server/controller_config.go"
    text = tree.read(path) or ""
    m = re.search(r"supportedInferenceAPIGVs\s*=", text)
    if not m:
        return {"groups": ["inference.networking.x-k8s.io"], "source": None}
    groups = []
    for name in re.findall(r"^\s*(\w+),\s*$", text[m.end():text.index("}", m.end())], re.M):
        d = re.search(rf"{name}\s*=\s*schema\.GroupVersion\{{Group:\s*([^,]+),", text)
        expr = d.group(1).strip() if d else ""
        if expr.startswith('"'):
            groups.append(expr.strip('"'))
        elif expr.startswith("v1alpha2."):
            reg = tree.read("apix/v1alpha2/zz_generated.register.go") or ""
            g = re.search(r'const GroupName = "([^"]+)"', reg)
            if g:
                groups.append(g.group(1))
    line = text.count("\n", 0, m.start()) + 1
    return {"groups": groups, "source": f"{path}:{line}"}


def _first(tree: GitTree, *paths: str) -> str | None:
    return next((p for p in paths if p in tree.paths), None)


def _connectors(repo: GoRepo, tree: GitTree, paths: list[str]) -> list[str]:
    """The sidecar's supported KV connector names (``supportedConnectors`` of v0.6,
    ``supportedKVConnectors`` from v0.7)."""
    names: list[str] = []
    for path in paths:
        text = tree.read(path) or ""
        directory = path.rsplit("/", 1)[0]
        imports = _imports(text)
        m = re.search(r"supported(?:KV)?Connectors\s*=\s*(?:\[\]string|map\[string\]struct\{\})\s*\{"
                      r"(.*?)\n\s*\}", text, re.S)
        if not m:
            continue
        for ident in re.findall(r"([A-Za-z_][\w.]*)\s*(?::\s*\{\})?\s*,", m.group(1) + ","):
            value, _ = repo.resolve(ident, tree, directory, imports)
            if value and value not in names:
                names.append(value)
    return sorted(names)


def _config_api(repo: GoRepo, tree: GitTree, gie: GitTree | None) -> dict:
    """EndpointPickerConfig: the group of the release's config types, the groups the loader
    also accepts (a deprecated scheme), and whether the loader decodes strictly."""
    own = tree.read("apix/config/v1alpha1/zz_generated.register.go")
    src = tree if own is not None else gie
    register = src.read("apix/config/v1alpha1/zz_generated.register.go") or ""
    group = re.search(r'GroupName\s*=\s*"([^"]+)"', register).group(1)
    loader = src.read("pkg/epp/config/loader/configloader.go") or ""
    accepted = [f"{group}/v1alpha1"]
    for m in re.finditer(r'schema\.GroupVersion\{Group:\s*"([^"]+)",\s*Version:\s*"([^"]+)"\}',
                         loader):
        accepted.append(f"{m.group(1)}/{m.group(2)}")
    return {"apiVersion": f"{group}/v1alpha1", "kind": "EndpointPickerConfig",
            "accepted": sorted(set(accepted)),
            "strict": "serializer.EnableStrict" in loader,
            "source": ("" if own is not None else f"{GIE_MODULE}@{gie.ref} ")
            + "apix/config/v1alpha1/zz_generated.register.go; pkg/epp/config/loader/configloader.go"}


def _feature_gates(repo: GoRepo, tree: GitTree, path: str) -> list[str]:
    text = tree.read(path) or ""
    directory = path.rsplit("/", 1)[0]
    imports = _imports(text)
    gates = []
    for m in re.finditer(r"loader\.RegisterFeatureGate\(", text):
        args, _ = _call_args(text, m.end() - 1)
        value, _ = repo.resolve(args[0], tree, directory, imports)
        if value:
            gates.append(value)
    return sorted(gates)


def _metrics_scraper(tree: GitTree) -> dict | None:
    """How the picker reads a metric family with several series (one per vLLM engine): the
    metrics extractor's ``getLatestMetric`` keeps the series with the greatest timestamp."""
    for path in sorted(tree.paths):
        if not (path.endswith("/spec.go") and "metrics" in path and "datalayer" in path):
            continue
        text = tree.read(path) or ""
        m = re.search(r"func \(spec \*Spec\) getLatestMetric", text)
        if m and re.search(r"if ts > recent", text):
            line = text.count("\n", 0, m.start()) + 1
            return {"selection": "latest-timestamp", "source": f"{path}:{line}"}
    return None


def _pool_crd(gie: GitTree) -> dict:
    """InferencePool CRDs of a GIE release: per group the served versions and the
    ``spec.targetPorts`` bounds of the storage version."""
    out = {}
    for path in sorted(gie.paths):
        if not (path.startswith("config/crd/bases/") and path.endswith("_inferencepools.yaml")):
            continue
        crd = yaml.safe_load(gie.read(path))
        group = crd["spec"]["group"]
        versions = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
        entry = {"versions": versions, "source": f"{GIE_MODULE}@{gie.ref}:{path}"}
        for v in crd["spec"]["versions"]:
            ports = v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].get(
                "targetPorts")
            if ports is not None and v.get("storage"):
                entry["targetPorts"] = {"minItems": ports.get("minItems"),
                                        "maxItems": ports.get("maxItems"),
                                        "unique": any("unique" in (r.get("message") or "")
                                                      for r in ports.get(
                                                          "x-kubernetes-validations", []))}
        out[group] = entry
    return out


def _sourced(entry: dict | None, own: bool, gie: GitTree | None) -> dict | None:
    """``entry`` with its source prefixed by the GIE module and commit when it was read there."""
    if entry is None or own:
        return entry
    return {**entry, "source": f"{GIE_MODULE}@{gie.ref}:{entry['source']}"}


def scheduler_release(llmd_dir: Path, gie_dir: Path, tag: str) -> dict:
    """The facts of one llm-d-router release."""
    tree = GitTree(llmd_dir, tag)
    pin = _gie_pin(tree)
    gie = GitTree(gie_dir, pin) if pin else None
    repo = GoRepo(tree, gie)
    main = tree.read("cmd/epp/main.go") or ""
    on_gie = f'"{GIE_MODULE}/cmd/epp/runner"' in main
    runner_tree = gie if on_gie else tree
    reg_files = [(tree, p) for p in ("pkg/plugins/register.go",
                                     "pkg/epp/framework/plugins/register.go") if p in tree.paths]
    reg_files.append((runner_tree, "cmd/epp/runner/runner.go"))
    plugins: dict[str, dict] = {}
    for t, path in reg_files:
        for entry in _registrations(repo, t, path):
            params = repo.factory_parameters(entry.pop("factory"), t, entry.pop("dir"),
                                          entry.pop("imports"))
            entry["parameters"] = params
            name = entry.pop("type")
            if t is not tree:
                entry["source"] = f"{GIE_MODULE}@{gie.ref}:{entry['source']}"
            plugins[name] = entry
    registry = runner_tree.read("pkg/epp/framework/interface/plugin/registry.go") or ""
    server_opts = "pkg/epp/server/options.go"
    epp_flags = _flags(repo, runner_tree,
                       ["cmd/epp/runner/runner.go", server_opts])
    for name, where in _refused_flags(runner_tree, server_opts).items():
        if name in epp_flags:
            src = where if runner_tree is tree else f"{GIE_MODULE}@{gie.ref}:{where}"
            epp_flags[name]["refused"] = src
    sidecar_paths = [p for p in ("cmd/pd-sidecar/main.go", "pkg/sidecar/proxy/options.go")
                     if p in tree.paths]
    dp_file = tree.read("pkg/sidecar/proxy/data_parallel.go") or ""
    pool = _pool_crd(gie) if gie is not None else {}
    return {
        "commit": tree.commit,
        "gie": pin,
        "images": _images(tree, tag),
        "config": _config_api(repo, tree, gie),
        "featureGates": _feature_gates(repo, runner_tree,
                                       "cmd/epp/runner/runner.go"),
        "plugins": dict(sorted(plugins.items())),
        "strictParameters": "DisallowUnknownFields" in registry,
        "experimentalPluginsFlag": "allow-experimental-plugins" in epp_flags,
        "eppFlags": epp_flags,
        "metricsScraper": _metrics_scraper(runner_tree),
        "metricsCollector": _sourced(_metrics_collector(runner_tree, "cmd/epp/runner/runner.go"),
                                     runner_tree is tree, gie),
        "objectiveGroups": _objective_groups(tree),
        "engineLabel": _sourced(_engine_label(runner_tree), runner_tree is tree, gie),
        "sidecar": {
            "flags": _flags(repo, tree, sidecar_paths),
            "kvConnectors": _connectors(repo, tree, sidecar_paths),
            "dataParallelEnv": sorted(set(re.findall(r'os\.Getenv\("(\w+)"\)', dp_file))),
        },
        "inferencePool": pool,
    }


# -- vllm-router and smg: argparse read with ast ---------------------------------------------
def _literal(node: ast.AST, fields: dict):
    """A Python literal, a ``RouterArgs.x`` dataclass default, or a str() of anything else."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "RouterArgs":
        return fields.get(node.attr)
    if isinstance(node, ast.Name) and node.id in fields.get("__module__", {}):
        return fields["__module__"][node.id]
    # Defaults a variable of the environment may override: read with the variable unset.
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "getenv":
        return _literal(node.args[1], fields) if len(node.args) > 1 else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in ("int", "float", "str", "bool") and len(node.args) == 1:
        inner = _literal(node.args[0], fields)
        return None if inner is None else {"int": int, "float": float, "str": str,
                                           "bool": bool}[node.func.id](inner)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In):
        left = node.left
        while isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) \
                and left.func.attr in ("lower", "strip"):
            left = left.func.value
        value, options = _literal(left, fields), _literal(node.comparators[0], fields)
        return value in options if value is not None and options is not None else None
    if isinstance(node, ast.Attribute) and node.attr == "BooleanOptionalAction":
        return "BooleanOptionalAction"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Pow, ast.Add)):
        left, right = _literal(node.left, fields), _literal(node.right, fields)
        if isinstance(left, int) and isinstance(right, int):
            return {ast.Mult: left * right, ast.Pow: left ** right,
                    ast.Add: left + right}[type(node.op)]
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return None


def _option_name(node: ast.AST) -> str | None:
    """``"--x"`` or ``f"--{prefix}x"`` (the unprefixed spelling)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def router_args(source: str) -> dict[str, dict]:
    """Every option of a ``router_args.py``: name -> {default, choices, nargs, action}."""
    tree = ast.parse(source)
    fields: dict = {"__module__": {}}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                fields["__module__"][node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                if isinstance(node.value, ast.List):   # [*A, "b"]
                    items = []
                    for e in node.value.elts:
                        if isinstance(e, ast.Starred) and isinstance(e.value, ast.Name):
                            items += fields["__module__"].get(e.value.id, [])
                        else:
                            items.append(_literal(e, fields))
                    fields["__module__"][node.targets[0].id] = items
        if isinstance(node, ast.ClassDef) and node.name == "RouterArgs":
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                        and stmt.value is not None:
                    value = stmt.value
                    if isinstance(value, ast.Call) and getattr(value.func, "attr", "") == "field":
                        kw = {k.arg: k.value for k in value.keywords}
                        value = kw.get("default")
                        if value is None:
                            fields[stmt.target.id] = [] if "default_factory" in kw else None
                            continue
                    fields[stmt.target.id] = _literal(value, fields)
    out: dict[str, dict] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        names = [n for n in (_option_name(a) for a in node.args) if n and n.startswith("-")]
        if not names:
            continue
        kw = {k.arg: k.value for k in node.keywords}
        action = _literal(kw["action"], fields) if "action" in kw else "store"
        default = _literal(kw["default"], fields) if "default" in kw else (
            False if action == "store_true" else True if action == "store_false" else None)
        choices = _literal(kw["choices"], fields) if "choices" in kw else None
        nargs = _literal(kw["nargs"], fields) if "nargs" in kw else None
        entry = {"default": default, "choices": choices, "nargs": nargs, "action": action,
                 "line": node.lineno}
        if action == "BooleanOptionalAction":   # argparse adds --no-X for each --X
            names += ["--no-" + n[2:] for n in names if n.startswith("--")]
        for n in names:
            out.setdefault(n, entry)
    return dict(sorted(out.items()))


def _archives(directory: Path, pattern: str, member: str) -> dict[str, tuple[str, str]]:
    """version -> (router_args.py text, its path in the archive) of every archive."""
    out = {}
    for path in sorted(directory.iterdir()):
        m = re.match(pattern, path.name)
        if not m:
            continue
        version = m.group(1)
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as z:
                name = member.format(v=version)
                out[version] = (z.read(name).decode(), name)
        else:
            with tarfile.open(path) as t:
                name = member.format(v=version)
                out[version] = (t.extractfile(name).read().decode(), name)
    return out


def python_routers(directory: Path, kind: str) -> dict:
    """Per release of vllm-router (sdists) or smg (wheels): the router's options."""
    if kind == "vllm-router":
        found = _archives(directory, r"vllm_router-(\d+\.\d+\.\d+)\.tar\.gz$",
                          "vllm_router-{v}/py_src/vllm_router/router_args.py")
        where = "py_src/vllm_router/router_args.py"
    else:
        found = _archives(directory, r"smg-(\d+\.\d+\.\d+)-.*\.whl$", "smg/router_args.py")
        where = "smg/router_args.py (wheel)"
    out = {}
    for version, (text, _) in sorted(found.items(), key=lambda kv: _vkey(kv[0])):
        out[version] = {"source": f"{kind} {version} {where}", "flags": router_args(text)}
    return out


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def extract(llmd: Path, gie: Path, vllm_router: Path, smg: Path) -> dict:
    """The whole data file."""
    return {
        "source": "each release's own tagged source, read by tools/extract_routers.py: "
                  "llm-d-router (llm-d-inference-scheduler) tags v0.6.0-v0.10.0 with the "
                  "gateway-api-inference-extension commit each go.mod pins; vllm-router sdists "
                  "and smg wheels (router_args.py)",
        "llm-d-router": {tag.lstrip("v"): scheduler_release(_git_dir(llmd), _git_dir(gie), tag)
                         for tag in SCHEDULER_TAGS},
        "vllm-router": python_routers(vllm_router, "vllm-router"),
        "smg": python_routers(smg, "smg"),
    }


def render(llmd: Path, gie: Path, vllm_router: Path, smg: Path) -> str:
    """The exact bytes the committed data file must hold."""
    return json.dumps(extract(llmd, gie, vllm_router, smg), indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llm-d-router", type=Path, required=True)
    p.add_argument("--gie", type=Path, required=True)
    p.add_argument("--vllm-router", type=Path, required=True)
    p.add_argument("--smg", type=Path, required=True)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv[1:])
    a.out.write_text(render(a.llm_d_router, a.gie, a.vllm_router, a.smg))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Shared test helpers: paths, rendering, and the reference data in ../shared (tests only)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from generator import pipeline

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"
#: Kubernetes version whose schemas the rendered objects must pass (kubernetes-validate, strict).
#: 1.32: kubectl on the machines is 1.32; apps.kubernetes.io/pod-index (used for ranks) is >= 1.28.
K8S_VERSION = "1.32.0"


def load_script(relpath: str):
    """Import a script of the checkout (``bench/x.py``, ``tools/x.py``) as a module."""
    path = ROOT / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod   # dataclasses look their module up while the script runs
    spec.loader.exec_module(mod)
    return mod


def example_specs() -> list[Path]:
    """Every shipped example spec."""
    return sorted(EXAMPLES.glob("*.yaml"))


def render_spec(spec: Path, overlays: list[Path] = ()) -> tuple[pipeline.Checked, object, dict[str, str]]:
    """Check and render; fails the test with the findings if the spec is rejected."""
    checked = pipeline.check(spec, list(overlays))
    errors = [f for f in checked.findings if f.severity.value == "error"]
    assert not errors, "\n".join(map(str, errors))
    plan, files = pipeline.render(checked)
    return checked, plan, files


def objects(files: dict[str, str]) -> list[dict]:
    """Every Kubernetes object in the rendered YAML files (kustomize files excluded)."""
    out = []
    for name, text in files.items():
        if name.endswith(".yaml") and not name.startswith("kustomiz"):
            out += [d for d in yaml.safe_load_all(text) if d]
    return out


def shared(*parts: str) -> Path:
    """A path under ../shared; skips the test when shared/ is not beside the checkout."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (shared/ reference data is beside the checkout in CI)")
    return path


def materialise_case(case: Path, tmp: Path) -> tuple[Path, list[Path], dict]:
    """A case directory's ``case.yaml`` as (spec path, overlay paths, metadata).

    ``spec:`` is an example path from the repository root with optional ``overlay:`` text merged
    over it, or ``inline`` with the whole document in ``inline:`` (tests/invalid, tests/field).
    """
    meta = yaml.safe_load((case / "case.yaml").read_text())
    if meta["spec"] == "inline":
        spec = tmp / "spec.yaml"
        spec.write_text(meta["inline"])
        return spec, [], meta
    overlays = []
    if meta.get("overlay"):
        overlay = tmp / "overlay.yaml"
        overlay.write_text(meta["overlay"])
        overlays.append(overlay)
    return ROOT / meta["spec"], overlays, meta


def lws_templates(lws: dict) -> dict[str, dict]:
    """A LeaderWorkerSet's pod templates by role in the group: ``leader`` (its leaderTemplate,
    or the workerTemplate a single-pod LWS has alone: LWS then uses it for the leader) and, in a
    multi-pod LWS, ``worker``. ``lws``: the object or its ``spec.leaderWorkerTemplate``."""
    lwt = lws["spec"]["leaderWorkerTemplate"] if "spec" in lws else lws
    if "leaderTemplate" not in lwt:
        return {"leader": lwt["workerTemplate"]}
    return {"leader": lwt["leaderTemplate"], "worker": lwt["workerTemplate"]}


def vllm_deployment(model: str, args: str, models_pvc: bool = False) -> str:
    """A hand-written single-pod Deployment running ``vllm serve MODEL`` on 8 H200s (the shape a
    team writes without moegen), ``args`` the YAML flow list's items; ``models_pvc``: a PVC
    mounted at /models."""
    mounts = ("        volumeMounts: [{name: models, mountPath: /models}]\n"
              "      volumes: [{name: models, persistentVolumeClaim: {claimName: models}}]\n"
              if models_pvc else "")
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: r1}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: r1}}}}
  template:
    metadata: {{labels: {{app: r1}}}}
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-H200}}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command: [vllm, serve, {model}]
        args: [{args}]
        resources: {{limits: {{nvidia.com/gpu: 8}}}}
{mounts}"""


def model_config(checked) -> dict:
    """The config.json a checked spec serves (``model.config`` as loaded, or the catalog's copy
    for ``model.architecture``): what the engines read, for the conformance builds."""
    from generator.catalog import builtin_config
    if checked.loaded.model_config is not None:
        return checked.loaded.model_config
    return builtin_config(checked.spec.spec.model.architecture)


#: schema id -> (the schema, its validator): ``validate_schema``'s cache (the schema is held, so
#: its id is never reused while the entry lives)
_VALIDATORS: dict[int, tuple[dict, object]] = {}


def validate_schema(obj, schema: dict) -> None:
    """``jsonschema.validate(obj, schema)`` with the schema checked against its meta-schema once
    per schema object rather than on every call (1.3 s of the 1.45 s a RoleBasedGroup CRD check
    takes). Raises ``jsonschema.ValidationError`` on the first error, as the validator's
    ``validate`` does."""
    import jsonschema
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        hit = _VALIDATORS[id(schema)] = (schema, cls(schema))
    hit[1].validate(obj)


#: An image moegen cannot read the release of: ENG007 on a spec (engine.version states it),
#: IMP008 on the import of its rendered tree (the release assumed); the same fact in each
#: input's terms (the import may report both).
UNREAD_IMAGE = {("ENG007", "$.spec.engine.image"), ("IMP008", "$")}


def finding_keys(findings) -> list[tuple[str, str]]:
    """(code, path) of ``findings``, sorted, with :data:`UNREAD_IMAGE` as one key: what a spec
    and the import of its rendered tree must both report."""
    keys = [(f.code, f.path) for f in findings]
    return [("unread image", "")] * any(k in UNREAD_IMAGE for k in keys) + \
        sorted(k for k in keys if k not in UNREAD_IMAGE)

"""A tree moegen rendered passes its own check at the same settings (issue 31, item 5):
``gen render SPEC [-f OVERLAY] [--target T] -o out && gen validate out/`` reports no error or
warning that ``gen validate SPEC`` (same overlays and target) does not. Over every example and
every target (the importer reads every target's kind: LeaderWorkerSet, LLMInferenceService,
RoleBasedGroup, DynamoGraphDeployment, StormService), every shipped overlay on S1, and the
golden target cases (which adapt the examples to the targets that refuse them as they are).

Which combinations have no tree, and why, is :func:`refused` and :data:`WHY`: the spec's own
check rejects it for that target, so there is nothing rendered to read back; the golden target
cases cover those targets with the adaptation each needs.
"""

from __future__ import annotations

import pytest
import yaml

from generator import pipeline
from generator.emit import write_tree
from generator.errors import Severity
from generator.inputs import read_inputs
from generator.spec.operations import TARGET_NAMES
from tests.helpers import EXAMPLES, ROOT, example_specs

#: (case, target) -> the errors that refuse it, and why (no tree to read back). Every example is
#: refused for KServe and Dynamo as it is (the golden target cases adapt them); S1 with bf16
#: weights does not fit.
WHY = {"TGT010": "KServe's vLLM presets cannot express the example's layout (kserve v0.20.0 "
                 "config/llmisvcconfig: the well-known presets)",
       "TGT002": "KServe's presets run vLLM only; the S3 examples run SGLang",
       "TGT032": "Dynamo 1.4.0's runtime images bundle vLLM 0.26.0 / SGLang 0.5.16; the examples "
                 "pin vLLM 0.33.0 / SGLang 0.5.23",
       "SIZ001": "bf16 DeepSeek-V3 (671B parameters, 1.25 TiB) does not fit 8 H20-96GB"}


def refused(name: str, target: str | None) -> set[str]:
    """The codes that refuse case ``name`` for ``target`` (empty: it renders)."""
    if name.startswith("golden-"):
        return set()
    if target == "dynamo":
        return {"TGT032"}
    if target == "kserve":
        return {"TGT002" if name.startswith("s3-") else "TGT010"}
    return {"SIZ001"} if name == "s1+bf16-weights" else set()


CASES = [(spec.stem, spec, (), target) for spec in example_specs() for target in TARGET_NAMES]
CASES += [(f"s1+{o.stem}", EXAMPLES / "s1-16xh20-pd.yaml", (o,), None)
          for o in sorted((ROOT / "overlays").glob("*.yaml"))]
for _case in sorted((ROOT / "tests" / "golden-targets").glob("*/case.yaml")):
    _meta = yaml.safe_load(_case.read_text())
    CASES.append((f"golden-{_case.parent.name}", ROOT / _meta["spec"],
                  tuple(_case.parent / o for o in _meta.get("overlays", [])), _meta.get("target")))


@pytest.mark.parametrize("name,spec,overlays,target", CASES,
                         ids=[f"{c[0]}-{c[3] or 'spec'}" for c in CASES])
def test_a_rendered_tree_passes_its_own_check(tmp_path, name, spec, overlays, target):
    checked = pipeline.check(spec, list(overlays), target)
    errors = {f.code for f in checked.findings if f.severity is Severity.ERROR}
    assert errors == refused(name, target) and errors <= set(WHY), checked.findings
    if errors:
        return   # no tree: refused, for the reasons in WHY
    _, files = pipeline.render(checked)
    out = tmp_path / "out"
    write_tree(out, files)
    batch = read_inputs([out])
    assert len(batch.results) == 1 and batch.skipped == [] and batch.unread == []
    own = {f.code for f in checked.findings if f.severity is not Severity.NOTICE}
    if "ENG007" in {f.code for f in checked.findings}:
        own.add("IMP008")   # an image whose release moegen cannot read: the same fact on a tree
    extra = [f for f in batch.all_findings()
             if f.severity is not Severity.NOTICE and f.code not in own]
    assert extra == [], "\n".join(f"{f.location.file}:{f.location.line}: {f.code} {f.message}"
                                   for f in extra)

"""The address model (generator/manifests/addresses.py): every connection a rendering makes
reaches a listener that accepts its address, for every example with every overlay and every
target; and the model sees each mismatch the field reported (issue 34: the routing sidecar's
localhost dial, Dynamo's unexpanded pod IP, KServe's fronted decode, SGLang's bootstrap port, the
leader's name, NIXL's advertised side channel)."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

import pytest

from generator import pipeline
from generator.engines.base import POD_IP
from generator.manifests import addresses as a
from generator.manifests.plan import build_plan
from generator.spec.operations import Target
from generator.targets import TARGETS, target_for
from tests.helpers import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
OVERLAYS = sorted((ROOT / "overlays").glob("*.yaml"))
HOSTNET, GATEWAY = ROOT / "overlays" / "roce-hostnetwork.yaml", \
    ROOT / "overlays" / "inference-gateway.yaml"
#: No overlay, each overlay, and the pair of the new-user run (hostNetwork with the gateway).
COMBOS = [[]] + [[o] for o in OVERLAYS] + [[HOSTNET, GATEWAY]]
S1, S3 = ROOT / "examples" / "s1-16xh20-pd.yaml", ROOT / "examples" / "s3-v4pro-pd-dp16.yaml"


def _as_target(model, name: str):
    """The deployment model with ``spec.target`` naming ``name`` (the plan does not depend on
    the target; its form and release facts do)."""
    spec = model.spec.spec.model_copy(update={"target": Target(name=name)})
    return dataclasses.replace(model, spec=model.spec.model_copy(update={"spec": spec}))


@lru_cache(maxsize=None)
def _checked(spec: Path, overlays: tuple[Path, ...] = ()):
    return pipeline.check(spec, list(overlays))


def _model(spec: Path, overlays=()):
    checked = _checked(spec, tuple(overlays))
    assert checked.ok, [str(f) for f in checked.findings if f.severity.value == "error"]
    return checked.model, build_plan(checked.model)


def _expected_kinds(plan) -> set[str]:
    """The connection kinds the kubernetes rendering of ``plan`` must show (from the plan's
    objects, independently of the model): probes always, the router's or the pool's, the
    sidecar's, the ranks of a multi-pod instance, the KV handshakes of prefill/decode roles,
    Prometheus's scrapes when monitored."""
    kinds = {a.PROBE}
    if plan.router is not None:
        kinds |= {a.ROUTER, a.SERVICE}
    if plan.gateway is not None:
        kinds |= {a.POOL, a.SERVICE}
    if any(w.leader.spec.init_containers for w in plan.workloads):
        kinds.add(a.SIDECAR)
    if any(w.size > 1 for w in plan.workloads):
        kinds.add(a.RANKS)
    if {"prefill", "decode"} <= {r.mode for r in plan.roles}:
        kinds.add(a.KV)
    if plan.monitoring is not None:
        kinds.add(a.SCRAPE)
    return kinds


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_connection_reaches_a_listener(example):
    """For each overlay (and the hostNetwork + gateway pair) that the example accepts, and each
    target: no dial without a listener that accepts it, every kind of connection the plan
    implies is in the model, and none of the kinds the target's controller makes."""
    rendered = 0
    for overlays in COMBOS:
        checked = _checked(example, tuple(overlays))
        if not checked.ok:
            continue
        plan = build_plan(checked.model)
        for name in TARGETS:
            model = checked.model if name == "kubernetes" else _as_target(checked.model, name)
            form = target_for(name).address_form(model)
            am = a.address_model(plan, form)
            assert am.mismatches() == [], (example.name, [o.name for o in overlays], name)
            kinds = {d.kind for d in am.dials}
            assert not kinds & form.owned, (name, kinds & form.owned)
            assert kinds >= _expected_kinds(plan) - form.owned, \
                (example.name, [o.name for o in overlays], name, kinds)
            rendered += 1
    # Every example renders under at least its own settings for every target's form.
    assert rendered >= len(TARGETS)


def test_new_user_run_sidecar_reaches_its_engine():
    """S1 + roce-hostnetwork + inference-gateway: the decode engine behind the routing sidecar
    no longer binds the pod IP only (the sidecar dials localhost:8200, llm-d-router v0.10.0
    options.go:399); the prefill keeps its bindAddress. The model finds the old rendering's
    refused dial, at network.bindAddress."""
    model, plan = _model(S1, [HOSTNET, GATEWAY])
    decode = next(r for r in plan.roles if r.name == "decode")
    prefill = next(r for r in plan.roles if r.name == "prefill")
    assert "--host" not in decode.launch.argv(0)
    assert prefill.launch.argv(0)[prefill.launch.argv(0).index("--host") + 1] == POD_IP
    assert a.address_model(plan).mismatches() == []
    # The rendering before the fix: the decode engine on the pod IP only.
    old = dataclasses.replace(decode, launch=dataclasses.replace(
        decode.launch, common=(*decode.launch.common, "--host", POD_IP)))
    before = dataclasses.replace(plan, roles=[prefill, old])
    ((dial, listeners),) = a.address_model(before).mismatches()
    assert (dial.client, dial.pod, dial.port, dial.address) == \
        ("decode routing sidecar", "decode/0", 8200, a.VIA_LOCALHOST)
    assert [x.bind for x in listeners if x.port == 8200] == [a.POD_ADDR]
    (finding,) = pipeline.address_findings(before, model, a.KUBERNETES)
    assert (finding.code, finding.severity.value, finding.path) == \
        ("NET100", "error", "$.spec.network.bindAddress")
    assert "port 8200 at localhost" in finding.message
    assert finding.location.file.endswith("roce-hostnetwork.yaml")


def test_dynamo_writes_the_pod_ip_as_a_kubernetes_reference(tmp_path):
    """Case 11 with bindAddress podIP on Dynamo: the worker's args reach SGLang as given (no
    launcher), so ``${MOEGEN_POD_IP}`` stayed literal and the prefill's bootstrap server bound
    an address that does not resolve. Now the args hold ``$(MOEGEN_POD_IP)`` and the container
    defines it; the form of the old rendering (placeholder as is, the variable dropped) shows
    the decode's refused bootstrap dial."""
    over = tmp_path / "o.yaml"
    over.write_text("spec:\n  network: {bindAddress: podIP}\n  target: {name: dynamo, image: "
                    "'registry.example.com/dynamo/sglang-runtime:1.4.0-sglang0.5.23'}\n")
    model, plan = _model(S3, [over])
    form = target_for("dynamo").address_form(model)
    assert a.address_model(plan, form).mismatches() == []
    _, files = pipeline.render(pipeline.check(S3, [over]))
    text = files["dynamographdeployment.yaml"]
    assert "- $(MOEGEN_POD_IP)" in text and "${MOEGEN_POD_IP}" not in text
    assert text.count("name: MOEGEN_POD_IP") == 2   # prefill and decode workers
    old = dataclasses.replace(form, placeholders=(),
                              env_dropped=form.env_dropped | {"MOEGEN_POD_IP"})
    bad = a.address_model(plan, old).mismatches()
    assert {(d.pod, d.port) for d, _ in bad} == {("prefill/0", 8998)}
    assert all(x.bind == POD_IP for d, ls in bad for x in ls if x.port == 8998)


def test_kserve_leaves_host_out_behind_its_routing_sidecar(tmp_path):
    """S1 on KServe with bindAddress podIP: the decode presets put the llm-d routing sidecar in
    front of vLLM (it dials localhost:8001), so the decode's VLLM_ADDITIONAL_ARGS carry no
    ``--host``; the prefill's keep it. Without the drop the model refuses the sidecar's dial."""
    over = tmp_path / "o.yaml"
    over.write_text("spec:\n  network: {bindAddress: podIP}\n")
    kserve = ROOT / "tests" / "golden-targets" / "kserve-s1" / "kserve.yaml"
    checked = pipeline.check(S1, [kserve, over], target="kserve")
    assert checked.ok, [str(f) for f in checked.findings]
    plan = build_plan(checked.model)
    form = target_for("kserve").address_form(checked.model)
    assert form.fronted == {"decode"} and a.address_model(plan, form).mismatches() == []
    _, files = pipeline.render(checked)
    args = [line for line in files["llminferenceservice.yaml"].splitlines()
            if line.strip().startswith("value: --")]
    assert len(args) == 3   # prefill template, decode template and worker
    assert args[0].strip().startswith('value: --host "${MOEGEN_POD_IP}"')
    assert all("--host" not in x for x in args[1:])
    ((dial, _),) = a.address_model(plan, dataclasses.replace(form, dropped=())).mismatches()
    assert (dial.client, dial.pod, dial.address) == ("kserve's routing sidecar", "decode/0",
                                                     a.VIA_LOCALHOST)


def test_sglang_sidecar_dials_the_prefill_bootstrap_port():
    """Case 17: the decode's routing sidecar reads the prefill's bootstrap port from
    SGLANG_BOOTSTRAP_PORT (default 8998); moegen renders it from the prefill's own
    --disaggregation-bootstrap-port. A sidecar given another port is a refused dial."""
    _, plan = _model(S3, [GATEWAY])
    work = next(w for w in plan.workloads if w.role == "decode")
    sidecar = work.leader.spec.init_containers[0]
    assert {"name": "SGLANG_BOOTSTRAP_PORT", "value": "8998"} in sidecar["env"]
    prefill = next(r for r in plan.roles if r.name == "prefill").launch.argv(0)
    assert prefill[prefill.index("--disaggregation-bootstrap-port") + 1] == "8998"
    assert a.address_model(plan).mismatches() == []
    other = {**sidecar, "env": [{"name": "SGLANG_BOOTSTRAP_PORT", "value": "9000"}]}
    spec = dataclasses.replace(work.leader.spec, init_containers=[other])
    moved = dataclasses.replace(work, leader=dataclasses.replace(work.leader, spec=spec))
    bad = dataclasses.replace(plan, workloads=[moved if w is work else w
                                               for w in plan.workloads])
    ((dial, listeners),) = a.address_model(bad).mismatches()
    assert (dial.pod, dial.port) == ("prefill/0", 9000)
    assert 8998 in {x.port for x in listeners}


def test_leader_name_from_the_controllers_variables():
    """Case 12 (AIBrix): the other pods of an instance reach the leader by a name made of the
    variables AIBrix injects; a hand-built name (ROLESET_NAME/ROLE_NAME/template hash, as in
    vllm-project/aibrix#1604) is refused at the dist-init port and the bootstrap registration."""
    model, plan = _model(S3)
    form = target_for("aibrix").address_form(_as_target(model, "aibrix"))
    assert form.leader_address == "$(PODSET_NAME)-0.$(STORM_SERVICE_NAME)"
    assert a.address_model(plan, form).mismatches() == []
    hand = dataclasses.replace(
        form, leader_address="$(ROLESET_NAME)-$(ROLE_NAME)-$(ROLE_TEMPLATE_HASH)-0.$(STORM_SERVICE_NAME)")
    bad = a.address_model(plan, hand).mismatches()
    # prefill and decode pod 1 -> dist-init 20000; prefill pod 1 -> bootstrap 8998
    assert sorted((d.client, d.port) for d, _ in bad) == [
        ("decode pod 1", 20000), ("prefill pod 1", 8998), ("prefill pod 1", 20000)]


def test_nixl_side_channel_is_advertised_at_the_pod_ip():
    """vLLM's prefill advertises VLLM_NIXL_SIDE_CHANNEL_HOST (default localhost) to decode: the
    plan sets it from status.podIP; without it decode dials its own loopback."""
    _, plan = _model(S1)
    work = next(w for w in plan.workloads if w.role == "prefill")
    env = [e for e in work.leader.spec.env if e["name"] != "VLLM_NIXL_SIDE_CHANNEL_HOST"]
    assert len(env) == len(work.leader.spec.env) - 1
    spec = dataclasses.replace(work.leader.spec, env=env)
    moved = dataclasses.replace(work, leader=dataclasses.replace(work.leader, spec=spec))
    bad = dataclasses.replace(plan, workloads=[moved if w is work else w
                                               for w in plan.workloads])
    ((dial, listeners),) = a.address_model(bad).mismatches()
    assert (dial.pod, dial.port, dial.address, dial.local) == \
        ("prefill/0", 5600, a.VIA_LOCALHOST, False)
    assert [x.bind for x in listeners if x.port == 5600] == [a.LOOPBACK]


def test_accepts():
    """Which bind accepts which address (the model's one rule)."""
    pod, local = a.Dial("c", "p", 1, a.VIA_POD, "", a.PROBE), \
        a.Dial("c", "p", 1, a.VIA_LOCALHOST, "", a.SIDECAR, local=True)
    remote_localhost = dataclasses.replace(local, local=False)
    assert [a.accepts(b, pod) for b in (a.ALL, a.POD_ADDR, a.LOOPBACK, POD_IP)] == \
        [True, True, False, False]
    assert [a.accepts(b, local) for b in (a.ALL, a.POD_ADDR, a.LOOPBACK)] == \
        [True, False, True]
    assert not any(a.accepts(b, remote_localhost) for b in (a.ALL, a.POD_ADDR, a.LOOPBACK))

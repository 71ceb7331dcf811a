"""The rule catalogue: every cross-field check, one module per family.

=========== ==============================================================================
module      rules
=========== ==============================================================================
model       MOD, LEN, QNT, SPD001-002: model source, context length, FP8 blocks, MTP module;
            MOD030-032: model requirements per engine (facts/requirements.py)
names       NAME: generated names and labels
pools       POOL, TOP, SCHD: node pools, topology domains, gang schedulers
lws         LWS: the LeaderWorkerSet release (platform.lws) and the DisaggregatedSet output
layout      LAY, ENG001, SPD005: ranks on pods, heads, pipeline, context, group restarts
moe         EP, A2A: expert parallelism, EPLB, all-to-all backends (DeepEP; A2A030 its
            buffer's 8-rank NVLink groups)
gpu         GPU: what the pool's GPU runs (vendor all-to-all, DeepEP's NVLink/SM90 needs, FP8
            cores, sparse-attention kernels; GPU030 NVL72 trays without the IMEX channel;
            QNT030 DeepSeek-V4 MXFP4 experts behind DeepEP off Blackwell)
pd          PD, SPD003-004, SPD030: prefill/decode pairs, connectors, speculative config (what
            the NIXL hash compares), router; PD030 NIXL tensor-size pairs per release
routing     RTR: router kinds (which router routes which engine), the inference gateway
scaling     AUT: autoscaling bounds, scalable workloads, Prometheus, routers that find new pods
serving     SRV: batch tokens and admitted sequences
network     NET, PORT: bootstrap interface, derived environment, ports; NET030-032 what the
            NIC family carries (engines/network.py NICS), pinned KV memory
fabric      NET040-041: InfiniBand partitions (P_Key index) for NCCL and DeepEP's NVSHMEM
restarts    RST: the restart model (facts/restarts.py): group restart policy by LWS release
            and group shape, survivors that crash when their peer restarts
pod         POD, ENG002-003: pod memory and the image
engine      ENG004-006, ENG030: engineArgs (options of the pinned release and values its parser
            accepts, not derived ones);
            known-bad release x feature combinations (facts/known_bad.py)
sizing      SIZ: HBM sizing (phase ``sizing``: runs after the others)
codes       codes raised outside the rule functions (loader, schema, pipeline, planner)
=========== ==============================================================================

A new rule goes into its family's module with :func:`~generator.checks.registry.rule`, and needs
a failing example under ``tests/invalid/`` (or a unit test): ``test_every_rule_has_a_failing_example``.
"""

from . import (  # noqa: F401
    codes,
    engine,
    fabric,
    gpu,
    layout,
    lws,
    model,
    moe,
    names,
    network,
    pd,
    pod,
    pools,
    restarts,
    routing,
    scaling,
    serving,
    sizing,
)
from .registry import RULES, Context, Hit, Phase, Rule, run_rules

__all__ = ["RULES", "Context", "Hit", "Phase", "Rule", "run_rules"]

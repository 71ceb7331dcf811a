"""Test-only vLLM general plugin: NIXL's UCX progress thread waits up to 1 ms between polls.

NIXL's Python agent creates its C++ agent with ``pthrDelay = 0`` whatever the caller asks
(ai-dynamo/nixl@v1.4.0: src/api/python/_api.py:230; the same in the nixl 1.5.1 wheel of the
CPU runtime), and the UCX backend's progress thread polls its workers with that delay as the
``poll()`` timeout (src/plugins/ucx/ucx_backend.cpp:331, ``nixlUcxSharedThread::run``): with 0
the thread never sleeps. vLLM's NixlConnector starts one agent with the progress thread in
every worker (vllm-project/vllm@v0.32.0: vllm/distributed/kv_transfer/kv_connector/v1/nixl/
base_worker.py), so every prefill and decode engine of the execution tier holds one core busy
while idle (measured: 0.95-0.97 CPU-s per second per engine, on a 2-core CI machine). On a GPU
node that is one core per GPU worker; here it starves the tests that run beside it.

This plugin sets the delay to 1 ms (the UCX backend's poll timeout, rounded up to whole
milliseconds), so the thread sleeps in ``poll()`` until a worker's event fd fires or 1 ms
passes: transfers still progress on their events, at most 1 ms later on a missed wake-up. It
patches the ``nixlBind`` module reference of the ``nixl_agent`` class vLLM loads
(``vllm.distributed.nixl_utils._load_nixl_attr``), so NIXL is imported when vLLM imports it,
not before (vLLM sets ``UCX_RCACHE_MAX_UNRELEASED`` before that import).

Loaded only where the execution tier runs a NixlConnector: the harness puts this directory on
the pod's PYTHONPATH (S11 in tests/execution/cpu.py).
"""

from __future__ import annotations

import sys

#: The progress thread's delay, microseconds (the UCX backend rounds up to milliseconds).
DELAY_US = 1000


class _Bind:
    """``nixlBind`` with ``nixlAgent(name, config)`` creating the agent at :data:`DELAY_US`."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def nixlAgent(self, name, config):  # noqa: N802 (the binding's name)
        config.pthrDelay = DELAY_US
        return self._real.nixlAgent(name, config)


def _patch(module) -> None:
    if not isinstance(getattr(module, "nixlBind", None), (_Bind, type(None))):
        module.nixlBind = _Bind(module.nixlBind)


def register() -> None:
    """vLLM's plugin hook (may run several times per process)."""
    from vllm.distributed import nixl_utils

    load = nixl_utils._load_nixl_attr
    if getattr(load, "_moegen_poll", False):
        return

    def _load(name):
        value = load(name)
        if name == "NixlWrapper" and value is not None:
            _patch(sys.modules[value.__module__])
        return value

    _load._moegen_poll = True
    nixl_utils._load_nixl_attr = _load

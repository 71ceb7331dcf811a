"""Test-only vLLM general plugin: variable-size collectives for vLLM's CPU communicator.

With expert parallelism on CPU, vLLM (0.32.0) uses the all-gather/reduce-scatter all-to-all
manager (``AgRsAll2AllManager``: vllm-project/vllm@v0.32.0:
vllm/distributed/device_communicators/cpu_communicator.py), whose dispatch and combine call
``all_gatherv`` / ``reduce_scatterv``; ``CpuCommunicator`` inherits both from
``DeviceCommunicatorBase``, where they raise ``NotImplementedError``
(vllm/distributed/device_communicators/base_device_communicator.py; vllm-project/vllm#57837). The
first forward of a DP+EP instance on CPU then fails. This plugin fills the two methods in with
plain ``torch.distributed`` calls over the communicator's Gloo group, and does nothing once vLLM
has its own (``CpuCommunicator`` defines them itself).

It is loaded only where the execution tier runs expert parallelism: the harness puts this
directory on the pod's PYTHONPATH (``importlib.metadata`` finds the dist-info beside this file,
vLLM loads every ``vllm.general_plugins`` entry point in each of its processes).
"""

from __future__ import annotations


def _counts(comm, local_rows: int, sizes):
    counts = list(sizes) if sizes is not None else [local_rows] * comm.world_size
    if counts[comm.rank_in_group] != local_rows:
        raise ValueError(f"rank {comm.rank_in_group} has {local_rows} rows, sizes say {counts}")
    return counts


def all_gatherv(self, input_, dim: int = 0, sizes=None):
    """Concatenate every rank's rows (rank r holds ``sizes[r]`` rows) along dim 0: pad to the
    largest count, all-gather, strip the padding. A list of tensors is gathered one by one."""
    import torch
    import torch.distributed as dist

    if dim != 0:
        raise NotImplementedError("all_gatherv: dim 0 only")

    def one(t):
        counts = _counts(self, t.shape[0], sizes)
        padded = t.new_zeros((max(counts), *t.shape[1:]))
        padded[: t.shape[0]] = t
        parts = [torch.empty_like(padded) for _ in counts]
        dist.all_gather(parts, padded, group=self.device_group)
        return torch.cat([p[:n] for p, n in zip(parts, counts)])

    return [one(t) for t in input_] if isinstance(input_, (list, tuple)) else one(input_)


def reduce_scatterv(self, input_, dim: int = -1, sizes=None):
    """Sum the tensor over all ranks and keep this rank's slice along ``dim`` (rank r keeps
    ``sizes[r]`` rows; equal shares without sizes): an all-reduce in float32, then a slice."""
    import torch.distributed as dist

    dim = dim % input_.dim()
    x = input_.movedim(dim, 0)
    counts = list(sizes) if sizes is not None else [x.shape[0] // self.world_size] * self.world_size
    if sum(counts) != x.shape[0]:
        raise ValueError(f"sizes {counts} do not add up to {x.shape[0]} rows")
    total = x.float().contiguous()
    dist.all_reduce(total, group=self.device_group)
    start = sum(counts[: self.rank_in_group])
    mine = total[start : start + counts[self.rank_in_group]].to(input_.dtype)
    return mine.movedim(0, dim).contiguous()


def register() -> None:
    """vLLM's plugin hook (may run several times per process)."""
    from vllm.distributed.device_communicators.cpu_communicator import CpuCommunicator

    for name, fn in (("all_gatherv", all_gatherv), ("reduce_scatterv", reduce_scatterv)):
        if name not in CpuCommunicator.__dict__:
            setattr(CpuCommunicator, name, fn)

"""What every engine pod gets beyond its GPUs, derived from the spec (shared by the checks and
the deployment plan, so both see the same numbers)."""

from __future__ import annotations

from .spec.models import Role

#: /dev/shm default, GiB: Dynamo's operator default and KServe's DP default are 8Gi
#: (production-stack#276: NCCL fails with the 64 MiB container default; dynamo PR#2616).
SHM_DEFAULT_GIB = 8


def shm_gib(role: Role) -> int:
    """/dev/shm size of the role's pods, GiB (``pod.shmSizeGiB`` or :data:`SHM_DEFAULT_GIB`)."""
    if role.pod is not None and role.pod.shmSizeGiB is not None:
        return role.pod.shmSizeGiB
    return SHM_DEFAULT_GIB

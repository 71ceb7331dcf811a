"""Rules about the engine pods: resources, volumes, Pod Security and the image."""

from __future__ import annotations

import re

from ..engines.caches import CACHE_MOUNT
from ..facts import images
from ..pods import (
    effective_pod,
    pod_path,
    pod_security,
    quantity_cpu,
    quantity_gib,
    security_rank,
)
from .registry import Context, E, Hit, N, W, rule


@rule("POD001", W, "the pod memory limit holds /dev/shm",
      "Kubernetes charges memory-backed emptyDir to the container limit "
      "(https://kubernetes.io/docs/concepts/storage/volumes/#emptydir); "
      "vllm-project/production-stack#276 (the OOM kill comes when /dev/shm fills, not at "
      "start: a warning); a pod of one GPU process fills nothing there: at world size 1 vLLM "
      "runs the uni executor (vLLM 0.33.0 vllm/config/parallel.py), without the shared-memory "
      "broadcast of the multiprocessing executor (vLLM 0.33.0 "
      "vllm/v1/executor/multiproc_executor.py), and NCCL "
      "has no peer in the pod to use shared memory with")
def _shm_limit(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        r = ctx.roles[i] if i < len(ctx.roles) else None
        if r is not None and r.layout.gpus_per_pod <= 1:   # one GPU process: nothing in shm
            continue
        pod = effective_pod(ctx.spec.spec, role)
        limit = pod.limits.memory if pod.limits and pod.limits.memory else pod.memory
        if limit is None:
            continue
        limit_gib = quantity_gib(limit)
        if limit_gib <= pod.shm_gib:
            key = "limits" if pod.limits and pod.limits.memory else "memory"
            yield Hit(pod_path(pod, i, key),
                      f"role {role.name!r}: memory limit {limit} ({limit_gib:.1f} GiB) does not "
                      f"exceed /dev/shm {pod.shm_gib} GiB, which is charged to it: the pod is "
                      "OOM-killed when /dev/shm fills",
                      f"raise pod.memory well above {pod.shm_gib}Gi, or lower pod.shmSizeGiB")


#: The release in an image tag or engine.version, pre- and post-release included (``v0.33.0``,
#: ``0.33.0rc1``, ``v0.5.6.post1-cu129`` -> ``0.5.6.post1``): PEP 440 pre/post/dev segments
#: name other releases; a build flavour after ``-`` or ``+`` (``-cu129``) does not.
_TAG_VERSION = re.compile(r"v?(\d+\.\d+\.\d+(?:[.-]?(?:rc|a|b|alpha|beta|dev|post)\d*)*)",
                          re.IGNORECASE)


def _release(text: str) -> str | None:
    m = _TAG_VERSION.match(text)
    return m.group(1).lower().replace("-", ".") if m else None


def _image_tag(image: str) -> str:
    """The tag of an image reference (``''`` when it has none; digest dropped)."""
    return image.rsplit("/", 1)[-1].partition(":")[2].split("@")[0]


@rule("ENG002", E, "the image is a release of the engine the flags are rendered for",
      "vllm-project/vllm-ascend#9144 (flags rendered for one release, image of another): "
      "releases add, rename and remove flags, so another release refuses the command or reads it "
      "differently (every release's parser: generator/engines/data/engine-options.json; the "
      "release an image bundles: generator/facts/data/images.json, tools/extract_images.py)")
def _image_version(ctx: Context):
    eng = ctx.spec.spec.engine
    repo = eng.image.rsplit(":", 1)[0].lower() if ":" in eng.image.rsplit("/", 1)[-1] else eng.image.lower()
    other = {"vllm": "sglang", "sglang": "vllm"}[eng.name]
    read = images.read(eng.image)
    if read.engine == other or (other in repo and eng.name not in repo and read.engine is None):
        yield Hit(("spec", "engine", "image"),
                  f"image {eng.image!r} looks like a {other} image but engine.name is {eng.name}",
                  f"use a {eng.name} image, or set engine.name: {other}")
        return
    tag = _release(read.release) if read.release else None
    if tag and tag != _release(eng.version):
        what = (f"image tag {_image_tag(eng.image)!r}" if read.how.startswith("the tag of")
                else f"image {eng.image!r} (moegen's image table: {read.source})")
        yield Hit(("spec", "engine", "image"),
                  f"{what} is {eng.name} {tag}, but the flags are rendered for engine.version "
                  f"{eng.version}",
                  f"set engine.version: \"{tag}\" (if moegen knows that release), or use "
                  f"the {eng.version} image")


@rule("ENG007", N, "moegen reads the release the image runs (else ENG002 is not checked)",
      "generator/facts/images.py (the engines' own images name the release in the tag; other "
      "images through the table tools/extract_images.py reads from their publishers' sources)")
def _image_unread(ctx: Context):
    eng = ctx.spec.spec.engine
    read = images.read(eng.image, eng.name)
    tag = _image_tag(eng.image)
    if read.release is None and read.engine is None and tag not in _MOVING \
            and "@" not in eng.image:
        yield Hit(("spec", "engine", "image"),
                  f"{read.how}: moegen cannot read which {eng.name} release it runs, so ENG002 "
                  f"did not check that it is engine.version {eng.version}",
                  "nothing to fix if the image runs that release; moegen reads the engines' own "
                  "images and those of its table (docs/spec.md §2)")


#: Tags that name no release (ENG003 reports them).
_MOVING = ("", "latest", "nightly", "main", "dev")


@rule("ENG003", W, "the image tag is pinned to a release",
      "a moving tag (latest, nightly) names another image on the next pull "
      "(https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy), so another "
      "release with flags the rendered command does not match (docs/design.md §2)")
def _image_pinned(ctx: Context):
    eng = ctx.spec.spec.engine
    tag = _image_tag(eng.image)
    if tag in _MOVING and "@" not in eng.image:
        yield Hit(("spec", "engine", "image"),
                  f"image {eng.image!r} has no pinned tag: the flags are rendered for "
                  f"{eng.name} {eng.version}, the image may be another release",
                  f"pin the tag of {eng.version} (or a digest)")


def _memory_limits(ctx: Context):
    """(index, role, pod settings, host plan, memory limit in GiB, the limit as written, the pod
    key that set it) of every role whose user memory limit can be compared with its host plan."""
    for i, role in enumerate(ctx.spec.spec.roles):
        plan = ctx.host[i] if i < len(ctx.host) else None
        pod = effective_pod(ctx.spec.spec, role)
        limit = pod.limits.memory if pod.limits and pod.limits.memory else pod.memory
        if plan is not None and limit is not None:
            key = "limits" if pod.limits and pod.limits.memory else "memory"
            yield i, role, pod, plan, quantity_gib(limit), limit, key


@rule("POD002", E, "the pod memory holds the engine processes and /dev/shm",
      "generator/sizing/host.py (process memory per GPU worker, API server and other process; "
      "/dev/shm charged to the pod): below it the kernel OOM-kills an engine process and the "
      "group restarts")
def _memory_floor(ctx: Context):
    for i, role, pod, plan, gib, limit, key in _memory_limits(ctx):
        need = max(p.unreclaimable_gib for p in plan.pods)
        if pod.shm_gib < gib < need:   # at or below /dev/shm: POD001
            p = max(plan.pods, key=lambda r: r.unreclaimable_gib)
            yield Hit(pod_path(pod, i, key),
                      f"role {role.name!r}: memory {limit} ({gib:.0f} GiB) is "
                      f"below what the pod's processes and /dev/shm hold: {need:.0f} GiB "
                      f"({p.processes.gpu} GPU workers, {p.processes.api} API servers, "
                      f"{p.processes.other} other processes: {p.process_gib:.0f} GiB; "
                      f"/dev/shm {p.shm_gib} GiB)",
                      f"raise pod.memory to at least {need:.0f}Gi, or unset it to use the "
                      f"derived request ({p.memory_gib}Gi)")


@rule("POD003", W, "the pod memory holds the weight staging of its GPU processes",
      "generator/sizing/host.py (one safetensors shard per GPU process, read through mmap while "
      "it is copied to the GPU): below it the load thrashes against the pod's limit")
def _memory_staging(ctx: Context):
    for i, role, pod, plan, gib, limit, key in _memory_limits(ctx):
        p = max(plan.pods, key=lambda r: r.memory_gib)
        if p.unreclaimable_gib <= gib < p.memory_gib:
            yield Hit(pod_path(pod, i, key),
                      f"role {role.name!r}: memory {limit} leaves less than the "
                      f"{p.staging_gib:.0f} GiB of weight staging its {p.processes.gpu} GPU "
                      f"processes read through (derived request {p.memory_gib}Gi)",
                      f"raise pod.memory to {p.memory_gib}Gi, or unset it")


@rule("POD004", W, "the pod CPU request covers the engine processes",
      "generator/sizing/host.py (4 cores per GPU worker, 2 per API server, 1 per other "
      "process): a throttled GPU worker stalls collectives and trips NCCL/DeepEP timeouts")
def _cpu_floor(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        plan = ctx.host[i] if i < len(ctx.host) else None
        pod = effective_pod(ctx.spec.spec, role)
        if plan is None or pod.cpu is None:
            continue
        need = max(p.cpu for p in plan.pods)
        if quantity_cpu(pod.cpu) < need:
            yield Hit(pod_path(pod, i, "cpu"),
                      f"role {role.name!r}: cpu {pod.cpu} is below the {need} cores the pod's "
                      "processes need",
                      f"raise pod.cpu to {need}, or unset it to use the derived request")


@rule("POD006", E, "container limits are not below the requests",
      "Kubernetes validation "
      "(kubernetes/kubernetes@v1.32.0:pkg/apis/core/validation/validation.go "
      "ValidateResourceRequirements: \"must be less than or equal to <resource> limit\"): the API "
      "server refuses the pod")
def _limits_above_requests(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        plan = ctx.host[i] if i < len(ctx.host) else None
        pod = effective_pod(ctx.spec.spec, role)
        if pod.limits is None:
            continue
        # The requests moegen renders: the user's, else the largest pod's derived ones.
        derived = max(plan.pods, key=lambda r: (r.memory_gib, r.cpu)) if plan else None
        rows = (("cpu", pod.cpu or (str(derived.cpu) if derived else None), pod.limits.cpu,
                 quantity_cpu),
                ("memory", pod.memory or (f"{derived.memory_gib}Gi" if derived else None),
                 pod.limits.memory, quantity_gib),
                ("ephemeralStorage", pod.ephemeral_storage
                 or (f"{derived.ephemeral_gib}Gi" if derived else None),
                 pod.limits.ephemeralStorage, quantity_gib))
        for key, request, limit, value in rows:
            if request and limit and value(limit) < value(request):
                yield Hit(pod_path(pod, i, "limits"),
                          f"role {role.name!r}: limits.{key} {limit} is below the {key} "
                          f"request {request}: the API server refuses the pod",
                          f"raise limits.{key} to at least {request}, or drop it (limits equal "
                          "the requests)")


#: Volumes and mount paths moegen declares in every engine pod (manifests/pods.py).
_OWN_VOLUMES = ("dshm", "model", "compile-cache", "hf-cache")


@rule("POD005", E, "extra volumes and mounts do not collide with moegen's",
      "Kubernetes core/v1 validation: volume names are unique in a pod, a volumeMount names a "
      "volume of the pod, mount paths are unique in a container "
      "(https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/)")
def _extra_volumes(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        pod = effective_pod(ctx.spec.spec, role)
        names = [v.get("name") for v in pod.extra_volumes]
        seen = set(_OWN_VOLUMES)
        for name in names:
            if name in seen:
                yield Hit(pod_path(pod, i, "extraVolumes"),
                          f"role {role.name!r}: volume name {name!r} is used twice"
                          + (" (moegen declares it)" if name in _OWN_VOLUMES else ""),
                          "rename the volume")
            seen.add(name)
        own_paths = {"/dev/shm": "dshm", ctx.spec.spec.model.path: "the model",
                     CACHE_MOUNT: "the compile cache"}
        paths: set[str] = set()
        for m in pod.extra_volume_mounts:
            if m.get("name") not in seen:
                yield Hit(pod_path(pod, i, "extraVolumeMounts"),
                          f"role {role.name!r}: volumeMount {m.get('name')!r} names no volume "
                          "of the pod", "add it to pod.extraVolumes")
            path = str(m.get("mountPath", "")).rstrip("/")
            if path in own_paths or path in paths:
                what = own_paths.get(path, "another extra mount")
                yield Hit(pod_path(pod, i, "extraVolumeMounts"),
                          f"role {role.name!r}: mountPath {path} is already used by {what}",
                          "mount it somewhere else")
            paths.add(path)


@rule("SEC001", E, "the pods pass the namespace's Pod Security level",
      "https://kubernetes.io/docs/concepts/security/pod-security-standards/ (enforced by the "
      "Pod Security Admission controller: pods above the namespace's level are refused)")
def _pod_security(ctx: Context):
    platform = ctx.spec.spec.platform
    if platform is None or platform.podSecurity is None:
        return
    allowed = security_rank(platform.podSecurity)
    for i, role in enumerate(ctx.spec.spec.roles):
        level, reasons = pod_security(ctx.spec.spec, effective_pod(ctx.spec.spec, role))
        if security_rank(level) > allowed:
            causes = [why for lvl, why in reasons if security_rank(lvl) > allowed]
            yield Hit(("spec", "platform", "podSecurity"),
                      f"role {role.name!r} needs Pod Security {level!r} but the namespace "
                      f"enforces {platform.podSecurity!r}: " + "; ".join(causes),
                      "label the namespace pod-security.kubernetes.io/enforce="
                      f"{level}, or remove what forces it")

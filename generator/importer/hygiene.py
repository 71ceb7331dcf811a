"""The pod-template hygiene of an imported serving workload (issue #31 item 5: the defect classes
the corpus audits found with no rule, tests/corpus/audit).

Read from the pod templates as written, after the engine container is known (``read_pod``
calls :func:`pod_issues` once per pod template it reads). Each check is one IMP code registered
in ``generator/checks/codes.py`` with its source:

* IMP019 (warning): a container other than the engine's (a routing sidecar, an init container,
  a downloader) runs an image on a moving tag (``latest``, ``main``, ``dev``, ``nightly``, or no
  tag) without a digest: each pull may run another build (the engine's own image is ENG003's).
* IMP020 (warning): one container sets an environment variable twice: the kubelet keeps the last
  value (the earlier one is silently dropped).
* IMP021 (warning): the engine container that serves the API has a readiness or startup probe but
  no liveness probe: a hung engine is never restarted (no probe at all is IMP017's).
* IMP022 (warning): a container's command installs Python packages (``pip install``) before the
  engine starts: every container start needs the package index and may install another version.
* IMP023 (error): a container of a kind whose controller adds nothing to the pod (Deployment,
  StatefulSet, LeaderWorkerSet, DisaggregatedSet) names no image, or one that is not an image
  reference (a ``<your-registry>/...`` placeholder): the Pod is refused, or never starts.
* IMP024 (error): a hostNetwork pod whose engine dials its rendezvous peer by a DNS name
  (``--dist-init-addr``, ``--master-addr``, ``--data-parallel-address``) without ``dnsPolicy:
  ClusterFirstWithHostNet``: it resolves with the node's resolver, not the cluster's, so a
  Service name does not resolve and the ranks never meet.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from .launch import Issue, Launch
from .shell import is_runtime
from .workloads import Pods, Workload

#: Tags that name another image over time (Kubernetes: "avoid using the :latest tag";
#: no tag means :latest: https://kubernetes.io/docs/concepts/containers/images/#image-names);
#: ``main``/``master``/``dev``/``nightly`` are branch builds (llm-d's sidecar ``:main``,
#: vLLM's ``nightly``, SGLang's ``dev``). Same list as ENG003's (generator/checks/pod.py).
MOVING_TAGS = ("", "latest", "main", "master", "dev", "nightly")

#: ``pip install`` / ``pip3 install`` / ``python -m pip install`` / ``uv pip install`` as a
#: shell word sequence (``pip-install-x`` is one word, not a command).
#: An image reference as the container runtimes parse it (distribution/reference@v0.6.0:regexp.go:
#: optional domain[:port]/, lower-case path components joined by ``.``, ``_``, ``__`` or dashes,
#: optional :tag, optional @algorithm:hex digest).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})*"
IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")

_PIP = re.compile(r"(?<![\w./-])(?:uv\s+pip|pip3?|python3?(?:\.\d+)?\s+-m\s+pip)\s+install"
                  r"(?![\w-])")


def pod_issues(w: Workload, pods: Pods, launch: Launch, plain: bool) -> list[Issue]:
    """IMP019-IMP023 on the pod template ``pods`` of ``w``, whose engine container is
    ``launch.container`` (at ``launch.cpath``); ``plain``: the kind's controller adds no probe
    and no image to the pod (IMP017's scope, pods.py: Deployment, StatefulSet, LWS,
    DisaggregatedSet). Returns the issues in template order (no exception on malformed values:
    what is not a mapping or a list is skipped)."""
    out: list[Issue] = []
    for path, c, init in _containers(pods):
        name = str(c.get("name", "?"))
        what = f"{w.kind} {w.name}: {'init container' if init else 'container'} {name}"
        if plain:
            out += _no_image(w, path, c, what)
        if tuple(path) != tuple(launch.cpath):
            out += _moving_tag(w, path, c, what)
        out += _duplicate_env(w, path, c, what)
        out += _package_install(w, path, c, what)
    if pods.index == 0 and plain:
        out += _no_liveness(w, launch)
    out += _host_network_dns(w, pods, launch)
    return out


#: Engine options that name the address the ranks of one instance rendezvous at (SGLang 0.5.23
#: python/sglang/srt/server_args.py --dist-init-addr; vLLM 0.33.0 vllm/engine/arg_utils.py
#: --master-addr, --data-parallel-address).
RENDEZVOUS_OPTIONS = ("--dist-init-addr", "--master-addr", "--data-parallel-address")


def _host_network_dns(w: Workload, pods: Pods, launch: Launch) -> list[Issue]:
    """IMP024 (the DNS policy rule:
    https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pod-s-dns-policy)."""
    spec = pods.spec
    if spec.get("hostNetwork") is not True or spec.get("dnsPolicy") == "ClusterFirstWithHostNet" \
            or launch.command is None:
        return []
    for option in RENDEZVOUS_OPTIONS:
        value = launch.command.value(option)
        if not isinstance(value, str) or is_runtime(value):
            continue
        host = value.strip().strip("[]").rsplit(":", 1)[0] if value.count(":") == 1 \
            else value.strip().strip("[]")
        if not host or _is_ip(host) or host == "localhost":
            continue
        policy = spec.get("dnsPolicy", "ClusterFirst (the default)")
        return [Issue(
            "IMP024", f"{w.kind} {w.name}: the pod uses hostNetwork with dnsPolicy {policy}, "
            f"so it resolves names with the node's resolver, not the cluster DNS; the engine's "
            f"{option} {value} names the host {host!r}, which then does not resolve (a Service "
            "name) and the ranks never rendezvous",
            w.doc.provenance.locate((*pods.path, "hostNetwork")),
            "set dnsPolicy: ClusterFirstWithHostNet on the pod", error=True)]
    return []


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _containers(pods: Pods):
    """(path, container, is an init container) of every container of the template."""
    for key in ("initContainers", "containers"):
        items = pods.spec.get(key)
        if not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            if isinstance(c, dict):
                yield (*pods.path, key, i), c, key == "initContainers"


def image_tag(image: str) -> tuple[str, bool]:
    """(tag, has a digest) of an image reference: ``"busybox"`` -> ("", False),
    ``"host:5000/a/b:1.2"`` -> ("1.2", False), ``"a:main@sha256:..."`` -> ("main", True)."""
    ref, _, digest = image.partition("@")
    last = ref.rsplit("/", 1)[-1]
    return (last.split(":", 1)[1] if ":" in last else ""), bool(digest)


def _no_image(w: Workload, path: tuple, c: dict, what: str) -> list[Issue]:
    image = c.get("image")
    prov = w.doc.provenance
    if image is None or (isinstance(image, str) and not image.strip()):
        return [Issue(
            "IMP023", f"{what} names no image: a workload's pod template may leave it out (for a "
            "tool to fill in), but the Pod its controller creates is refused (image is required "
            "in a Pod), so no pod of this workload is created", prov.locate(path),
            "set the container's image", error=True)]
    if not isinstance(image, str) or "$(" in image or IMAGE_REFERENCE.fullmatch(image.strip()):
        return []
    return [Issue(
        "IMP023", f"{what} names {image!r}, which is not an image reference (a placeholder?): "
        "the kubelet reports InvalidImageName and the container never starts",
        prov.locate((*path, "image")), "replace it with the image you built or pulled",
        error=True)]


def _moving_tag(w: Workload, path: tuple, c: dict, what: str) -> list[Issue]:
    image = c.get("image")
    if not isinstance(image, str) or not image.strip() or "$(" in image or "<" in image:
        return []
    tag, digest = image_tag(image.strip())
    if digest or tag not in MOVING_TAGS:
        return []
    policy = c.get("imagePullPolicy")
    pull = (f"imagePullPolicy {policy}" if isinstance(policy, str) else
            "imagePullPolicy defaults to Always" if tag in ("", "latest") else
            "imagePullPolicy defaults to IfNotPresent: each node keeps the build it pulled first")
    return [Issue(
        "IMP019", f"{what} runs {image} on the moving tag {tag or '(none: latest)'} without a "
        f"digest ({pull}): pods started at different times or on different nodes run different "
        "builds, whose flags and protocol are not the ones this manifest was tested with",
        w.doc.provenance.locate((*path, "image")),
        "pin a release tag or a digest (image: name:tag@sha256:...)")]


def _duplicate_env(w: Workload, path: tuple, c: dict, what: str) -> list[Issue]:
    env = c.get("env")
    if not isinstance(env, list):
        return []
    prov = w.doc.provenance
    first: dict[str, int] = {}
    out = []
    for i, item in enumerate(env):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = item["name"]
        if name not in first:
            first[name] = i
            continue
        earlier = prov.locate((*path, "env", first[name]))
        value = _shown(item)
        out.append(Issue(
            "IMP020", f"{what} sets {name} twice (line {earlier.line}, then here): the kubelet "
            f"keeps the last definition, so {name} is {value} and the earlier value "
            f"{_shown(env[first[name]])} has no effect",
            prov.locate((*path, "env", i)),
            f"keep one definition of {name}"))
    return out


def _shown(item: Any) -> str:
    if not isinstance(item, dict):
        return "?"
    if "valueFrom" in item:
        return "taken from valueFrom"
    return repr(str(item.get("value", "")))


def _package_install(w: Workload, path: tuple, c: dict, what: str) -> list[Issue]:
    prov = w.doc.provenance
    for key in ("command", "args"):
        words = c.get(key)
        if not isinstance(words, list):
            continue
        for i, word in enumerate(words):
            if not isinstance(word, str):
                continue
            for n, line in enumerate(word.splitlines()):
                m = _PIP.search(line)
                if m is None or "--no-index" in line:
                    continue
                return [Issue(
                    "IMP022", f"{what} runs {m.group(0)!r} before the engine starts: every "
                    "container start (each restart and re-creation) needs the package index and "
                    "installs whatever version it serves then, which may not match the image's "
                    "engine",
                    prov.locate_in_text((*path, key, i), n, m.start()),
                    "build the package into the image (or pin the version and install from a "
                    "local wheel with --no-index)")]
    return []


def _no_liveness(w: Workload, launch: Launch) -> list[Issue]:
    """IMP021: in IMP017's scope (pods.py ``_probes``: kinds whose controllers add no probe,
    the pod that serves the API), some probe but no liveness probe."""
    c = launch.container
    if isinstance(c.get("livenessProbe"), dict):
        return []
    key = next((k for k in ("readinessProbe", "startupProbe") if isinstance(c.get(k), dict)),
               None)
    if key is None:
        return []   # no probe at all: IMP017
    return [Issue(
        "IMP021", f"{w.kind} {w.name}: the engine container has a {key} but no livenessProbe: "
        "an engine that hangs after it started (a stalled collective, a wedged scheduler) is "
        "never restarted; it stays NotReady and its capacity is lost until someone deletes the "
        "pod", w.doc.provenance.locate((*launch.cpath, key)),
        "add a livenessProbe on the engine's /health (after the startup probe)")]

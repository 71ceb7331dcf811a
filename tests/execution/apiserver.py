"""The little of the Kubernetes API the rendered pods read: list and watch the pods of a
namespace, served over HTTP for a kubeconfig.

vLLM's router discovers its engines with a Kubernetes watcher (vllm-project/router
src/service_discovery.rs: kube-rs ``Client::try_default`` then ``watcher(Api<Pod>)``; a pod is
added once its ``status.phase`` is Running with a ``Ready`` condition True, at
``http://<status.podIP>:<port>``, and removed when its ``metadata.deletionTimestamp`` is set).
kube-rs reads the kubeconfig ``KUBECONFIG`` names before any in-cluster configuration, so the
harness gives the router pod that variable (tests/execution/cpu.py S9) and serves, as the API
server does (Kubernetes API concepts, "Efficient detection of changes":
https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes):

* ``GET /api/v1/namespaces/<ns>/pods`` (and ``/api/v1/pods``): a ``PodList`` whose
  ``metadata.resourceVersion`` is the current one;
* the same with ``watch=true&resourceVersion=<rv>``: every change after ``rv`` as a line of
  ``{"type": ADDED|MODIFIED|DELETED, "object": <Pod>}`` on a chunked response, held open until
  ``timeoutSeconds``.

Label selectors are not applied (the router filters by its selectors itself, and lists with
none). The pod objects are what the kubelet and the controllers report: name, namespace,
labels, annotations, ``status.podIP``, ``phase``, the ``Ready`` condition, and the deletion
timestamp of a pod being terminated.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class ApiServer:
    """Pods by name, a resourceVersion counter and the change log, served on ``ip:port``."""

    def __init__(self, ip: str, port: int = 6443) -> None:
        self.pods: dict[str, dict] = {}
        self.events: list[tuple[int, str, dict]] = []
        self.version = 1
        self.cond = threading.Condition()
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                server.requests.append(self.path)
                url = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                parts = url.path.strip("/").split("/")
                ns = parts[3] if len(parts) >= 5 and parts[2] == "namespaces" else None
                if parts[-1] != "pods":
                    self.send_error(404)
                    return
                if q.get("watch") in ("true", "1"):
                    server._watch(self, ns, int(q.get("resourceVersion") or 0),
                                  float(q.get("timeoutSeconds") or 290))
                else:
                    body = json.dumps(server.pod_list(ns)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

        self.closing = threading.Event()
        self.httpd = ThreadingHTTPServer((ip, port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False        # open watches end with the server
        self.address = f"http://{ip}:{port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    # -------------------------------------------------------------- the cluster's side
    def upsert(self, name: str, obj: dict) -> None:
        """The pod was created or changed (ADDED the first time, then MODIFIED)."""
        with self.cond:
            kind = "MODIFIED" if name in self.pods else "ADDED"
            if self.pods.get(name) == obj:
                return
            self.version += 1
            obj = json.loads(json.dumps(obj))
            obj["metadata"]["resourceVersion"] = str(self.version)
            self.pods[name] = obj
            self.events.append((self.version, kind, obj))
            self.cond.notify_all()

    def remove(self, name: str) -> None:
        """The pod object is gone (DELETED)."""
        with self.cond:
            obj = self.pods.pop(name, None)
            if obj is None:
                return
            self.version += 1
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.version)}}
            self.events.append((self.version, "DELETED", obj))
            self.cond.notify_all()

    def pod_list(self, ns: str | None) -> dict:
        with self.cond:
            items = [p for p in self.pods.values() if ns is None or p["metadata"]["namespace"] == ns]
            return {"apiVersion": "v1", "kind": "PodList",
                    "metadata": {"resourceVersion": str(self.version)}, "items": items}

    def _watch(self, handler, ns: str | None, since: int, timeout_s: float) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        deadline = time.monotonic() + min(timeout_s, 290)
        try:
            while time.monotonic() < deadline and not self.closing.is_set():
                with self.cond:
                    batch = [(v, k, o) for v, k, o in self.events if v > since
                             and (ns is None or o["metadata"]["namespace"] == ns)]
                    if not batch:
                        self.cond.wait(timeout=1.0)
                        continue
                for v, kind, obj in batch:
                    line = json.dumps({"type": kind, "object": obj}).encode() + b"\n"
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    since = v
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except OSError:     # the watcher went away
            pass

    @staticmethod
    def write_kubeconfig(path: Path, address: str, namespace: str = "default") -> Path:
        """A kubeconfig that points at ``address`` (no credentials: the server serves no one
        else)."""
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "harness",
            "clusters": [{"name": "harness", "cluster": {"server": address}}],
            "users": [{"name": "harness", "user": {}}],
            "contexts": [{"name": "harness", "context": {"cluster": "harness", "user": "harness",
                                                         "namespace": namespace}}]}))
        return path

    def close(self) -> None:
        self.closing.set()
        with self.cond:
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

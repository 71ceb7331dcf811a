"""HTTP to the running pods: OpenAI completions, Prometheus /metrics (standard library only)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass
class Reply:
    status: int           # HTTP status; 0 when no connection could be made
    body: dict | str

    @property
    def ok(self) -> bool:
        return self.status == 200


def post(url: str, payload: dict, timeout: float = 180) -> Reply:
    req = urllib.request.Request(url, json.dumps(payload).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Reply(r.status, json.loads(r.read()))
    except urllib.error.HTTPError as e:
        return Reply(e.code, e.read().decode(errors="replace"))
    except OSError as e:
        return Reply(0, str(e))


def complete(base: str, model: str, prompt: str, max_tokens: int = 8, timeout: float = 180) -> Reply:
    """One ``/v1/completions`` request (greedy, a fixed number of tokens)."""
    return post(f"{base}/v1/completions", {"model": model, "prompt": prompt, "max_tokens": max_tokens,
                                           "temperature": 0, "ignore_eos": True}, timeout)


def metrics(base: str, timeout: float = 10) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a Prometheus text exposition: (name, labels, value)."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=timeout) as r:
        text = r.read().decode()
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            out.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def total(samples, name: str, **labels) -> float:
    """Sum of the samples called ``name`` whose labels include ``labels``."""
    return sum(v for n, lab, v in samples if n == name and all(lab.get(k) == x for k, x in labels.items()))

"""The engines' Prometheus metrics moegen's monitoring uses, with where each is defined.

Both engines serve ``/metrics`` on their HTTP port, aggregated over their processes (Prometheus
multiprocess mode), with one series per data-parallel engine. Counters are exposed with the
``_total`` suffix (prometheus_client).

* vLLM 0.33.0 (vllm/v1/metrics/loggers.py; kv_connector/v1/nixl/stats.py and mooncake/stats.py):
  ``vllm:num_requests_running`` and ``vllm:num_requests_waiting`` (gauges),
  ``vllm:generation_tokens`` (counter),
  ``vllm:kv_cache_usage_perc`` (gauge, 0-1), ``vllm:nixl_num_failed_transfers`` and
  ``vllm:mooncake_num_failed_transfers`` (counters), ``vllm:prompt_tokens`` (counter),
  ``vllm:time_to_first_token_seconds`` and ``vllm:request_time_per_output_token_seconds``
  (histograms).
* SGLang 0.5.23 (sglang/srt/observability/metrics_collector.py), only with ``--enable-metrics``:
  ``sglang:num_running_reqs`` and ``sglang:num_queue_reqs`` (gauges),
  ``sglang:generation_tokens_total`` (counter),
  ``sglang:token_usage`` (gauge, 0-1), ``sglang:num_transfer_failed_reqs_total`` (counter),
  ``sglang:prompt_tokens_total`` (counter), ``sglang:time_to_first_token_seconds`` and
  ``sglang:request_time_per_output_token_seconds`` (histograms).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineMetrics:
    """PromQL series names of one engine (counters with their exposed ``_total``)."""

    running: str
    generated_total: str
    kv_usage: str
    transfer_failed_total: dict[str, str]
    #: Requests queued, not yet scheduled (the endpoint picker's queue scorer reads it).
    waiting: str = ""
    #: Prompt tokens processed (counter), and the TTFT and per-request TPOT histograms
    #: (seconds; ``_bucket`` series).
    prompt_total: str = ""
    ttft_seconds: str = ""
    tpot_seconds: str = ""


METRICS = {
    "vllm": EngineMetrics(
        running="vllm:num_requests_running",
        generated_total="vllm:generation_tokens_total",
        kv_usage="vllm:kv_cache_usage_perc",
        transfer_failed_total={"nixl": "vllm:nixl_num_failed_transfers_total",
                               "mooncake": "vllm:mooncake_num_failed_transfers_total"},
        waiting="vllm:num_requests_waiting",
        prompt_total="vllm:prompt_tokens_total",
        ttft_seconds="vllm:time_to_first_token_seconds",
        tpot_seconds="vllm:request_time_per_output_token_seconds"),
    "sglang": EngineMetrics(
        running="sglang:num_running_reqs",
        generated_total="sglang:generation_tokens_total",
        kv_usage="sglang:token_usage",
        transfer_failed_total={"mooncake": "sglang:num_transfer_failed_reqs_total",
                               "nixl": "sglang:num_transfer_failed_reqs_total"},
        waiting="sglang:num_queue_reqs",
        prompt_total="sglang:prompt_tokens_total",
        ttft_seconds="sglang:time_to_first_token_seconds",
        tpot_seconds="sglang:request_time_per_output_token_seconds"),
}
#: vLLM's queue split by reason (``capacity``: waiting for scheduling room; ``deferred``: held by
#: transient constraints, KV transfers from a prefill included): vllm/v1/metrics/loggers.py
#: ``vllm:num_requests_waiting_by_reason``, from 0.20.0 (absent in 0.19.1's loggers.py). On a
#: decode role every request waits in WAITING_FOR_REMOTE_KVS while its KV arrives, which the
#: plain ``num_requests_waiting`` counts.
VLLM_WAITING_BY_REASON = "vllm:num_requests_waiting_by_reason"
VLLM_WAITING_BY_REASON_SINCE = (0, 20, 0)

#: The SGLang flag that turns its metrics on (sglang/srt/server_args.py ``enable_metrics``).
SGLANG_METRICS_FLAG = "--enable-metrics"

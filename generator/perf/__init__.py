"""The performance model: what a layout does under a workload (TTFT, TPOT, tokens/s).

* :mod:`.terms`: per-step and per-request terms, each naming the engine behaviour it stands
  for, with the published figures its constants were fitted to;
* :mod:`.decode`: a decoding role's operating point and its TPOT curve over the batch;
* :mod:`.loop`: queueing and the closed loop (prefill M/D/1, the rate a concurrency sustains);
* :mod:`.candidate`: the evaluated deployment and ranked result types;
* :mod:`.evaluate`: a fixed layout timed as given; :mod:`.predict`: an InferenceDeployment's
  predicted figures (the deployment model's ``prediction``);
* :mod:`.regimes`: which regime a predicted figure is in and that regime's measured error
  (``data/regime-errors.json``, from bench/planner_residuals.py).

Below the deployment model and the pipeline: nothing here checks a spec or plans a search
(``generator/capacity`` does, above the pipeline).
"""

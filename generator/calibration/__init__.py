"""Calibration from the user's own cluster (docs/calibration.md): ``gen bench`` renders a Job
that runs the engine's own benchmark client (:mod:`generator.manifests.bench`), ``gen calibrate``
reads its results and the engines' start-up logs (:mod:`.results`), compares them with the
prediction of the same configuration and writes a profile of per-term-group factors
(:mod:`.profile`); ``--calibration`` / ``spec.calibration`` apply it through the hook in
:mod:`generator.perf.calibrated`. Above the deployment model and the performance model; only the
pipeline and the command line import it.
"""

"""The MADQA metric: scoring (ANLS*, Page/Doc F1, H.3 errors), accuracy with bias correction, Kuiper, CTT.

A self-contained folder: it imports only numpy, scipy, anls_star, datasets, evaluate and its own modules (terminal
rendering of a report is the CLI's, ``madqa.cli.table``), so it can be loaded by ``evaluate.load`` (``madqa.py`` is
the entry script; ``install.py`` puts it into evaluate's offline cache). Entry points:
:func:`report.evaluate_predictions` (pure scoring, its options in one :class:`report.ReportOptions`),
:class:`judge.Judge` (the LLM judge), :func:`ctt.build_splits`, and the records and ``METRICS`` of :mod:`schema`.
This ``__init__`` imports nothing, so ``madqa.metric.schema`` stays cheap to import.
"""

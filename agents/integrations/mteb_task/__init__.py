"""MADQA's retrieval track as `MTEB <https://github.com/embeddings-benchmark/mteb>`_ tasks, loaded offline from the
prepared dataset.

Optional extra ``pip install 'madqa[mteb]'``; only this package imports ``mteb``, and only :mod:`.task` and
:mod:`.search` (through :func:`tasks`) do. Modules:

* :mod:`.data`: the corpus (pages), queries (a split's questions) and qrels (gold evidence pages), with the page ids
  of ``madqa retrieval`` (no ``mteb`` import);
* :mod:`.task`: ``MADQAPageRetrieval`` (page texts) and ``MADQAPageImageRetrieval`` (rendered pages, ViDoRe's form);
* :mod:`.search`: ``RetrieverSearch`` (any ``madqa retrieval`` retriever as an mteb search model, scored exactly as
  ``madqa retrieval`` scores it) and ``WordllamaEncoder`` (the offline embedder as an mteb encoder).

    >>> import mteb  # doctest: +SKIP
    >>> from madqa.agents.integrations.mteb_task import tasks
    >>> text, image = tasks(dataset="sample", splits=["dev"])  # doctest: +SKIP
    >>> mteb.evaluate(model, [text], cache=None)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def tasks(dataset: Any = None, splits: Sequence[str] | None = None, limit: int | None = None) -> list[Any]:
    """The text task and the image task over ``dataset`` (default: ``MADQA_DATASET``, else the sample).

    Raises:
        MissingDependencyError: mteb is not installed (the message names ``pip install 'madqa[mteb]'``).
    """
    from madqa.agents.harness.deps import require_extra

    require_extra("mteb", "the MTEB tasks")
    from madqa.agents.integrations.mteb_task.task import MADQAPageImageRetrieval, MADQAPageRetrieval

    return [
        MADQAPageRetrieval(dataset, splits, limit),
        MADQAPageImageRetrieval(dataset, splits, limit),
    ]

"""The inspect task ``madqa/bm25``: one split of a MADQA dataset, answered by the search agent, scored by the metric.

``inspect eval madqa/bm25 --model PROVIDER/MODEL -T split=dev`` (the ``inspect_ai`` entry point of pyproject names
:mod:`._registry`), or by file path: ``inspect eval agents/integrations/inspect_task/task.py@bm25``. The imports here
are
absolute, so that inspect can load this file by its path.

Task arguments (``-T name=value``): ``split`` (``dev``; ``train``; ``test`` scores only where its labels are at
hand: the sample's private labels; a release's test split runs unscored, for ``madqa import-inspect`` and the
leaderboard), ``dataset`` (a dataset spec: ``sample``, a prepared release such as ``OxRML/MADQA``, a folder;
default ``MADQA_DATASET`` or the sample), ``max_steps`` (T = 10 model calls, the paper's budget), ``top_k`` (5
pages per search), ``limit`` (the first N questions), ``observe`` (``text``: page texts, for any model; ``image``:
page images, for vision models), ``page_chars`` (6,000 characters of text per page) and ``search_timeout`` (the
safety net of one search, 120 s; 0: none; a search past it is a sample error, never a message to the model). The
search's work limits are the defaults of :class:`madqa.agents.corpus.search.SearchLimits`, recorded with the settings.

Each sample is one question: ``input`` the question, ``target`` its answer variants (each variant's strings joined
by ``" | "``, for display), ``metadata`` the gold the scorer reads (``answer_variants``, ``evidence``, ``hop_type``,
``domain``, ``document_category``).
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

from madqa.agents.corpus.search import DEFAULT_SEARCH_TIMEOUT, SearchLimits
from madqa.agents.harness.config import DEFAULT_MAX_STEPS, DEFAULT_TOP_K
from madqa.agents.integrations.inspect_task.lines import TASK_METADATA
from madqa.agents.integrations.inspect_task.scorer import GOLD_FIELDS, madqa_scorer
from madqa.agents.integrations.inspect_task.solver import Corpus, message_limit, search_agent
from madqa.agents.search_loop.tools import DEFAULT_PAGE_CHARS, OBSERVE_MODES

#: The task's version (inspect records it in each log); raise it when a change can change the scores.
#: 1.1.0: searches are bounded by work limits, not by a 5 s wall-clock limit shown to the model (issue 39).
TASK_VERSION = "1.1.0"


def question_rows(split: str, dataset: str | None) -> tuple[list[dict[str, Any]], bool]:
    """The split's question rows and whether they carry labels (a release's test split does not)."""
    from madqa.loading_script.load import DatasetUnavailableError, load_gold, load_questions

    try:
        return load_gold(split, dataset), True
    except DatasetUnavailableError:
        if split != "test":
            raise
        return load_questions(split, dataset), False


def to_sample(row: dict[str, Any]) -> Sample:
    """One question as an inspect sample."""
    variants = [" | ".join(v) for v in row.get("answer_variants") or []]
    return Sample(
        id=str(row["id"]), input=str(row["question"]), target=variants, metadata={k: row.get(k) for k in GOLD_FIELDS}
    )


def search_limits(search_timeout: float) -> SearchLimits:
    """The default work limits with the task's safety net (0: none)."""
    return SearchLimits(timeout=search_timeout or None)


def open_corpus(dataset: str | None, search_timeout: float) -> Corpus:
    """The dataset's page index (built once, then reused from disk) and page renderer."""
    from madqa.agents.corpus.render import PageRenderer
    from madqa.agents.corpus.search import open_index
    from madqa.loading_script.load import load_pages

    pages = load_pages(dataset)
    index = open_index(pages, limits=search_limits(search_timeout), progress=False)
    return Corpus(index, PageRenderer(dataset, pages=pages))


@task(name="bm25")
def madqa_bm25(
    split: str = "dev",
    dataset: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    top_k: int = DEFAULT_TOP_K,
    limit: int | None = None,
    observe: str = "text",
    page_chars: int = DEFAULT_PAGE_CHARS,
    search_timeout: float = DEFAULT_SEARCH_TIMEOUT,
) -> Task:
    """MADQA with the paper's BM25 search agent (G.1): search pages, then a final answer with cited pages."""
    from madqa.loading_script.load import dataset_spec
    from madqa.loading_script.release import dataset_provenance

    if observe not in OBSERVE_MODES:
        raise ValueError(f"observe must be one of {', '.join(OBSERVE_MODES)}, got {observe!r}")
    for name, value in (("max_steps", max_steps), ("top_k", top_k), ("page_chars", page_chars)):
        if int(value) < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if limit is not None and int(limit) < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    rows, labelled = question_rows(split, dataset)
    rows = rows[: int(limit)] if limit is not None else rows
    spec = dataset_spec(dataset)
    settings = {
        "split": split,
        "dataset": spec,
        "provenance": dataset_provenance(dataset),
        "max_steps": int(max_steps),
        "top_k": int(top_k),
        "observe": observe,
        "page_chars": int(page_chars),
        **search_limits(float(search_timeout)).settings(),
        "labelled": labelled,
    }
    corpus = open_corpus(dataset, float(search_timeout))
    return Task(
        dataset=MemoryDataset([to_sample(r) for r in rows], name=f"madqa:{spec}:{split}"),
        solver=search_agent(
            corpus,
            max_steps=int(max_steps),
            top_k=int(top_k),
            observe=observe,  # type: ignore[arg-type]
            page_chars=int(page_chars),
        ),
        scorer=madqa_scorer() if labelled else None,
        message_limit=message_limit(int(max_steps)),
        metadata={TASK_METADATA: settings},
        version=TASK_VERSION,
    )

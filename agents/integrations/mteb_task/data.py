"""MADQA's evidence-page retrieval as the three tables an MTEB retrieval task reads, from the prepared dataset.

No ``mteb`` import here: :mod:`.task` wraps these tables in mteb's task classes.

* **corpus**: every page of the dataset's ``pages`` config, in its order, with the id ``madqa retrieval`` uses in
  its qrels and TREC runs (``DOCUMENT#pPAGE``, :func:`madqa.agents.corpus.retrieval.evaluation.page_id`) and its
  text layer (the text variant) or its rendering (the image variant, :func:`page_images`);
* **queries**: the labelled questions of one split (``load_gold``), id and question text;
* **qrels**: each question's gold evidence pages, relevance 1 (``gold_ids`` at page level).

So a ranking scored by mteb and by ``madqa retrieval`` is scored against the same pages and the same gold. Nothing
is downloaded: the tables come from the dataset ``madqa setup`` prepared (or any dataset spec ``--dataset`` takes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from madqa.agents.corpus.retrieval.evaluation import Question, gold_ids, page_id, questions_from_gold

DatasetSpec = str | os.PathLike[str] | None


@dataclass(frozen=True)
class RetrievalSplit:
    """One split of the task: the pages (rows of the ``pages`` config), the questions and their gold pages."""

    pages: list[dict[str, Any]]
    questions: list[Question]

    @property
    def corpus(self) -> list[dict[str, str]]:
        """The text corpus: ``id`` (``DOCUMENT#pPAGE``) and ``text`` (the page's text layer; empty for none)."""
        return [{"id": page_id(p["document"], int(p["page"])), "text": p.get("text") or ""} for p in self.pages]

    @property
    def queries(self) -> list[dict[str, str]]:
        """``id`` and ``text`` of every question."""
        return [{"id": q.id, "text": q.text} for q in self.questions]

    @property
    def qrels(self) -> dict[str, dict[str, int]]:
        """question id → gold page id → 1."""
        return {q.id: dict.fromkeys(gold_ids(q, "page"), 1) for q in self.questions}


def load_split(split: str, dataset: DatasetSpec = None, limit: int | None = None) -> RetrievalSplit:
    """The pages of ``dataset`` and the labelled questions of ``split`` (the first ``limit`` only, when given).

    Raises:
        DatasetUnavailableError: the dataset has no page corpus, or the split's labels are hidden or missing.
        ValueError: ``limit`` is not positive, or the split has no labelled question.
    """
    from madqa.loading_script.load import load_gold, load_pages

    if limit is not None and limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    questions = questions_from_gold(load_gold(split, dataset))[:limit]
    if not questions:
        raise ValueError(f"the {split} split has no labelled questions to rank pages for")
    return RetrievalSplit([dict(p) for p in load_pages(dataset)], questions)


def parse_page_id(text: str) -> tuple[str, int]:
    """``DOCUMENT#pPAGE`` back to (document, page); the last ``#p`` splits (a document name may hold one).

    >>> parse_page_id("a#p.pdf#p12")
    ('a#p.pdf', 12)
    """
    document, sep, page = text.rpartition("#p")
    if not sep or not document or not page.isdigit():
        raise ValueError(f"not a MADQA page id (DOCUMENT#pPAGE): {text!r}")
    return document, int(page)


def page_image_rows(
    pages: Sequence[Mapping[str, Any]], dataset: DatasetSpec, *, dpi: int, max_side: int | None
) -> Iterator[dict[str, Any]]:
    """The image corpus's rows: ``id`` and ``image`` (PNG bytes, lossless) of each page in the order of ``pages``,
    rendered from the dataset's PDFs by the project's one renderer (:mod:`madqa.agents.corpus.render`).

    With the renderer's defaults (150 dpi, longest side 2000 px: the task's) the images are the pixels that
    ``madqa retrieval``'s page-image retrievers (``colpali:``, ``dse:``) encode; ``max_side=None`` means no cap.
    """
    import io

    from madqa.agents.corpus.render import PageRenderer

    renderer = PageRenderer(dataset, pages=pages, dpi=dpi, max_side=max_side, cache_mb=0)
    try:
        for p in pages:
            buffer = io.BytesIO()
            renderer.image(p["document"], int(p["page"])).convert("RGB").save(buffer, format="PNG", compress_level=1)
            yield {"id": page_id(p["document"], int(p["page"])), "image": {"bytes": buffer.getvalue(), "path": None}}
    finally:
        renderer.close()

"""The MTEB tasks: MADQA evidence-page retrieval over page texts (``MADQAPageRetrieval``, ``t2t``) and over rendered
pages (``MADQAPageImageRetrieval``, ``t2i``, in the shape of mteb's ViDoRe tasks: a corpus of ``id`` and ``image``,
text queries, ``main_score`` ``ndcg_at_5``).

Both read the dataset ``madqa setup`` prepared (:mod:`.data`), never the Hub: ``dataset`` is any spec that
``--dataset`` takes (``sample``, a folder, a prepared Hub id). ``metadata.dataset["revision"]`` becomes a digest of
what was loaded (pages, questions, gold; for images the rendering too), so mteb's result files tell two datasets
apart. This module imports ``mteb``: import it through :func:`madqa.agents.integrations.mteb_task.tasks`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata

from madqa.agents.corpus.render import DEFAULT_DPI, DEFAULT_MAX_SIDE
from madqa.agents.integrations.mteb_task.data import DatasetSpec, RetrievalSplit, load_split, page_image_rows
from madqa.loading_script.load import DEFAULT_RELEASE, dataset_spec, resolve_dataset

#: The labelled split a task scores unless told otherwise (the test labels are hidden outside the sample).
DEFAULT_SPLITS = ("dev",)
CITATION = r"""
@misc{borchmann2026madqa,
  title         = {Strategic Navigation or Stochastic Search? How Agents and Humans Reason Over Document Collections},
  author        = {Borchmann, {\L}ukasz and others},
  year          = {2026},
  eprint        = {2603.12180},
  archivePrefix = {arXiv},
  url           = {https://arxiv.org/abs/2603.12180}
}
"""
_COMMON: dict[str, Any] = {
    "reference": "https://arxiv.org/abs/2603.12180",
    "dataset": {"path": DEFAULT_RELEASE, "revision": "prepared-locally"},
    "eval_splits": list(DEFAULT_SPLITS),
    "eval_langs": ["eng-Latn"],
    # no collection dates are published (mteb allows none); DocumentCloud's documents, per the dataset card
    "domains": ["Government", "Legal", "Financial", "News"],
    "license": "cc-by-nc-4.0",
    "annotations_creators": "expert-annotated",
    "dialect": [],
    "sample_creation": "found",
    "bibtex_citation": CITATION,
}


class _MADQARetrieval(AbsTaskRetrieval):
    """What both variants share: the offline loading of a prepared dataset, per split."""

    def __init__(
        self, dataset: DatasetSpec = None, splits: Sequence[str] | None = None, limit: int | None = None, **kwargs: Any
    ) -> None:
        """``dataset``: the dataset spec (default: ``MADQA_DATASET``, else the sample); ``splits``: the labelled
        splits to score (default ``dev``); ``limit``: the first N questions of each."""
        self.madqa_dataset, self.limit = dataset, limit
        if splits is not None:
            if not splits:
                raise ValueError("splits names no split")
            self.metadata = self.metadata.model_copy(update={"eval_splits": list(splits)})
        super().__init__(**kwargs)

    def _corpus(self, data: RetrievalSplit) -> Any:
        """The split's corpus as a ``datasets.Dataset``."""
        raise NotImplementedError

    def _digest_extra(self) -> str:
        return ""

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        """Corpus, queries and qrels of every split, in mteb's format, from the prepared dataset."""
        from datasets import Dataset

        if self.data_loaded:
            return
        self.corpus, self.queries, self.relevant_docs = {}, {}, {}
        digest = hashlib.sha256(f"{dataset_spec(self.madqa_dataset)}\0{self._digest_extra()}".encode())
        for split in self.metadata.eval_splits:
            data = load_split(split, self.madqa_dataset, self.limit)
            digest.update(json.dumps([split, data.corpus, data.queries, data.qrels], sort_keys=True).encode())
            self.corpus[split] = self._corpus(data)
            self.queries[split] = Dataset.from_list(data.queries)
            self.relevant_docs[split] = data.qrels
        dataset = {"path": dataset_spec(self.madqa_dataset), "revision": digest.hexdigest()[:16]}
        self.metadata = self.metadata.model_copy(update={"dataset": dataset})
        self.data_loaded = True


class MADQAPageRetrieval(_MADQARetrieval):
    """Rank the collection's pages (their text layers) for a question; relevant: its gold evidence pages."""

    metadata = TaskMetadata(
        name="MADQAPageRetrieval",
        description="Retrieve the evidence pages of a question about a collection of PDF documents, from the text "
        "layers (with OCR) of every page of the collection (MADQA's retrieval track, `madqa retrieval`).",
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        main_score="ndcg_at_10",
        task_subtypes=["Question answering"],
        **_COMMON,
    )

    def _corpus(self, data: RetrievalSplit) -> Any:
        from datasets import Dataset

        return Dataset.from_list(data.corpus)


class MADQAPageImageRetrieval(_MADQARetrieval):
    """Rank the collection's rendered pages for a question, as mteb's ViDoRe tasks do (``t2i``, ``ndcg_at_5``)."""

    metadata = TaskMetadata(
        name="MADQAPageImageRetrieval",
        description="Retrieve the evidence pages of a question about a collection of PDF documents, from images of "
        "every page of the collection (MADQA's retrieval track over rendered pages, in the form of ViDoRe).",
        type="DocumentUnderstanding",
        category="t2i",
        modalities=["text", "image"],
        main_score="ndcg_at_5",
        task_subtypes=["Image Text Retrieval"],
        prompt={"query": "Find a screenshot that relevant to the user's question."},  # ViDoRe's, as it is spelt
        **_COMMON,
    )

    def __init__(
        self, *args: Any, dpi: int = DEFAULT_DPI, max_side: int | None = DEFAULT_MAX_SIDE, **kwargs: Any
    ) -> None:
        """``dpi`` and ``max_side``: the rendering (default: the renderer's, as ``madqa retrieval`` renders)."""
        self._render = {"dpi": dpi, "max_side": max_side}
        super().__init__(*args, **kwargs)

    def _digest_extra(self) -> str:
        return f"image {self._render}"

    def _corpus(self, data: RetrievalSplit) -> Any:
        # written to an Arrow file as it is rendered (PNG bytes; decoded by mteb as it reads): a whole collection's
        # decoded pages would not fit in memory
        from datasets import Dataset, Features, Image, Value

        return Dataset.from_generator(
            page_image_rows,
            features=Features({"id": Value("string"), "image": Image()}),
            # the resolved folder, not the spec: datasets' cache is keyed by these arguments
            gen_kwargs={"pages": data.pages, "dataset": str(resolve_dataset(self.madqa_dataset)), **self._render},
        )

"""The server side of a human study, without any UI: which questions, which batches, which files, what each click does.

:class:`HumanService` turns the interface's actions (start, search, open a page, navigate, cite, submit) into
calls on a :class:`~.study.StudyRun` and its :class:`~.session.QuestionSession`, so tests drive exactly what the
Gradio app (:mod:`.app`) does. :func:`build_plan` reads the split: practice splits (dev/train) keep their labels
here, server side, for the feedback after each answer; the hidden test split keeps none, unless an oracle study
is given the private labels file, and then only the evidence pages it must show.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from madqa.agents.corpus.search import MAX_QUERY_CHARS
from madqa.space.human.batches import DEFAULT_SEED, Batch, find_batch, make_batches
from madqa.space.human.corpus import HumanCorpus, SearchOutcome
from madqa.space.human.feedback import may_reveal, practice_feedback
from madqa.space.human.registry import StudyRegistry
from madqa.space.human.session import Clock, parse_answer_text, utc_now
from madqa.space.human.study import StudyError, StudyRun, StudySettings, check_annotator, default_output

logger = logging.getLogger(__name__)

MODES = ("search", "oracle")


@dataclass(frozen=True)
class StudyPlan:
    """What one server offers: a split cut into batches, how questions are shown and where lines go.

    Attributes:
        split: ``train``, ``dev`` or ``test``.
        mode: ``search`` (the BM25 interface) or ``oracle`` (gold evidence pages only, no search bar).
        batches: the split's batches (:func:`.batches.make_batches`).
        questions: public question rows by id (``id``, ``question``).
        gold: labelled rows by id for practice feedback (dev/train only; ``None`` in test mode).
        evidence: gold evidence pages by id for oracle mode (``None`` otherwise).
        out_dir: folder of the default per-annotator, per-batch files (``None``: keep runs in memory only).
        output: one fixed results file (``-o``), else ``None``.
        annotator: the fixed annotator id (``--annotator``), else each visitor types theirs.
        batch: the fixed batch name (``--batch``), else each visitor picks one.
        dataset: ``{"name", "revision"}`` stored in every line.
        config: settings stored in every line.
    """

    split: str
    mode: str
    batches: tuple[Batch, ...]
    questions: Mapping[str, Mapping[str, Any]]
    gold: Mapping[str, Mapping[str, Any]] | None = None
    evidence: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
    out_dir: Path | None = Path(".")
    output: Path | None = None
    annotator: str | None = None
    batch: str | None = None
    dataset: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def practice(self) -> bool:
        """Whether answers are followed by the gold answer and score (never on the hidden split)."""
        return self.gold is not None and may_reveal(self.split)


def build_plan(
    split: str,
    *,
    dataset: str | os.PathLike[str] | None = None,
    mode: str = "search",
    seed: int = DEFAULT_SEED,
    labels_path: Path | None = None,
    out_dir: Path | None = Path("."),
    output: Path | None = None,
    annotator: str | None = None,
    batch: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> StudyPlan:
    """Read the split and cut it into batches (see the module docstring for what is kept server side).

    Raises:
        StudyError: an unknown mode, oracle on the test split without ``labels_path``, or a bad annotator id.
        madqa.space.human.batches.BatchError: ``batch`` is not a batch of the split.
        madqa.loading_script.load.DatasetUnavailableError: the split or labels cannot be read.
    """
    from madqa.loading_script.load import DatasetUnavailableError, load_gold, load_questions
    from madqa.loading_script.release import dataset_provenance

    if mode not in MODES:
        raise StudyError(f"unknown mode {mode!r} (use {' or '.join(MODES)})")
    rows = load_questions(split, dataset)
    questions = {str(r["id"]): {"id": str(r["id"]), "question": str(r["question"])} for r in rows}
    batches = tuple(make_batches(list(questions), seed=seed))
    if batch is not None:
        batch = find_batch(batches, batch).name
    gold = None
    if may_reveal(split):  # the one place that decides whether labels may reach the person answering
        try:
            gold = {str(r["id"]): r for r in load_gold(split, dataset, labels_path=labels_path)}
        except DatasetUnavailableError as exc:
            logger.warning("no practice feedback: %s", exc)
    evidence = None
    if mode == "oracle":
        if gold is None:
            if labels_path is None and not may_reveal(split):
                raise StudyError("an oracle study of the test split needs the private labels: pass --labels FILE")
            labelled = load_gold(split, dataset, labels_path=labels_path)
        else:
            labelled = list(gold.values())
        evidence = {str(r["id"]): [dict(e) for e in r["evidence"]] for r in labelled}
    settings = {"seed": seed, "batch_size": len(batches[0].ids) if batches else 0, **dict(config or {})}
    return StudyPlan(
        split=split,
        mode=mode,
        batches=batches,
        questions=questions,
        gold=gold,
        evidence=evidence,
        out_dir=out_dir,
        output=output,
        annotator=check_annotator(annotator) if annotator else None,
        batch=batch,
        dataset=dataset_provenance(dataset),
        config=settings,
    )


#: Moves within the document in view (the ``via`` of a page view that is not a result or an oracle page).
STEPS = ("first", "previous", "next", "last", "jump")


class HumanService:
    """The actions of the human interface over a plan, a corpus and the server's open runs."""

    def __init__(
        self, plan: StudyPlan, corpus: HumanCorpus | Callable[[], HumanCorpus], *, clock: Clock = utc_now
    ) -> None:
        """Serve ``plan`` with ``corpus`` (or a factory called on first use: the Space opens its index lazily);
        ``clock`` stamps every logged action."""
        self.plan, self.clock = plan, clock
        self._corpus = corpus
        self._corpus_lock = threading.Lock()
        self.registry = StudyRegistry()

    @property
    def corpus(self) -> HumanCorpus:
        """The corpus, opened on first use when a factory was given."""
        if not isinstance(self._corpus, HumanCorpus):
            with self._corpus_lock:
                if not isinstance(self._corpus, HumanCorpus):
                    self._corpus = self._corpus()
        return self._corpus

    def batch_names(self) -> list[str]:
        """Batches a visitor may pick (only the fixed one with ``--batch``)."""
        return [self.plan.batch] if self.plan.batch else [b.name for b in self.plan.batches]

    def output_for(self, annotator: str, batch: str) -> Path | None:
        """The results file of an annotator and batch (``None``: runs are kept in memory only)."""
        if self.plan.output is not None:
            return self.plan.output
        if self.plan.out_dir is None:
            return None
        return default_output(self.plan.out_dir, self.plan.split, batch, annotator, self.plan.mode)

    def start(self, annotator: str, batch: str, *, key: str | None = None, client: str | None = None) -> StudyRun:
        """Open (or re-attach to) the run of ``annotator`` on ``batch``; a run kept in memory is named by ``key``
        (default: the annotator) and a new one counts against ``client``'s limits (:class:`~.registry.StudyRegistry`).

        Raises:
            StudyError: a bad annotator id, another annotator than the fixed one, a file in use, or (a
                :class:`~.registry.RunLimitError`) a new in-memory run refused.
            madqa.space.human.batches.BatchError: an unknown batch.
        """
        annotator = check_annotator((annotator or "").strip() or self.plan.annotator or "")
        if self.plan.annotator and annotator != self.plan.annotator:
            raise StudyError(f"this server is for annotator {self.plan.annotator!r}")
        chosen = find_batch(self.plan.batches, self.plan.batch or batch)
        path = self.output_for(annotator, chosen.name)
        rows = [dict(self.plan.questions[i]) for i in chosen.ids]
        if self.plan.evidence is not None:
            for row in rows:
                row["evidence"] = self.plan.evidence.get(row["id"], [])
        settings = StudySettings(
            split=self.plan.split,
            mode=self.plan.mode,
            dataset=self.plan.dataset,
            config={**dict(self.plan.config), "k": self.corpus.k},
        )
        return self.registry.open(
            path,
            annotator,
            chosen.name,
            lambda: StudyRun(rows, path, annotator=annotator, batch=chosen.name, settings=settings, clock=self.clock),
            key=key,
            client=client,
        )

    def search(self, run: StudyRun, query: str) -> SearchOutcome:
        """Search and log the query (also a refused or empty one: it was an attempt) on the current question."""
        session = run.session()
        if session is not None and session.full:  # a run kept in memory (the Space) at its cap: nothing to log
            return SearchOutcome(
                (),
                f"this practice run has used the {run.max_actions} searches and page views "
                "a run keeps here: answer from the pages you found, or start another "
                "batch",
            )
        outcome = self.corpus.search(query)
        text = (query or "").strip()
        if session is not None and text:
            # The engine refuses a query over MAX_QUERY_CHARS (the error says how long it was): its first characters
            # are logged, so a megabyte typed or posted costs no more memory than the longest query searched.
            session.record_search(text[:MAX_QUERY_CHARS], outcome.pages, outcome.error, refused=outcome.refused)
        return outcome

    def oracle_pages(self, run: StudyRun) -> list[tuple[str, int]]:
        """The current question's gold evidence pages (oracle mode only; empty otherwise)."""
        item = run.current_item()
        if self.plan.mode != "oracle" or item is None:
            return []
        return [(str(e["document"]), int(e["page"])) for e in item.get("evidence", [])]

    def view(
        self, run: StudyRun, document: str, page: int, via: str, *, shown: tuple[str, int] | None = None
    ) -> tuple[str, int] | None:
        """Show a page (clamped into the document) and log the view; ``None``: nothing to show or log (an unknown
        document, or a step within the document that stays on ``shown``, the page in view: Next on the last page).
        Opening a search result is always a view, even of the page in view."""
        if self.corpus.pages(document) == 0:
            return None
        page = self.corpus.clamp(document, page)
        if via in STEPS and shown is not None and (document, page) == tuple(shown):
            return None
        session = run.session()
        if session is not None:
            session.record_view(document, page, via)
        return document, page

    def cite(self, run: StudyRun, document: str, page: int, add: bool) -> bool:
        """Add or remove a citation on the current question; whether anything changed."""
        session = run.session()
        if session is None:
            return False
        return session.add_citation(document, page) if add else session.remove_citation(document, page)

    def submit(
        self, run: StudyRun, question_id: str, answer_text: str, *, gave_up: bool = False
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Log the answer; returns the written line (``None``: nothing written) and practice feedback if allowed."""
        record = run.submit(question_id, parse_answer_text(answer_text), gave_up=gave_up)
        if record is None or not self.plan.practice or self.plan.gold is None:
            return record, None
        return record, practice_feedback(record, self.plan.gold[record["id"]])

    def close(self) -> None:
        """Close every open run (server shutdown)."""
        self.registry.close()

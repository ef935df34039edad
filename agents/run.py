"""The batch runner: a split × an agent × a model → one results line per question (``madqa run``).

Questions run on ``workers`` threads, each with its own model object and a fresh agent per question; the page
index and renderer are shared (both are thread-safe). Each finished question is appended to the output at once
(:class:`madqa.agents.record.ResultsWriter`: one write, flush, fsync), so a killed run loses at most the questions
in flight. ``resume`` skips the ids already in the file (after dropping a torn last line); an exception while
answering one question becomes that line's ``error`` and the run goes on.

The code-REPL agent (``agent="repl"``) shares this loop; :mod:`.repl_run` builds its corpus, models and worker
processes.

Running accuracy is not computed here (agents may import only ``madqa.metric.schema``): :class:`Progress` receives
every record and the command line (``cli/run_cmd.py``) scores it with the metric's ANLS*.
"""

from __future__ import annotations

import logging
import os
import queue
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .models import LlamaCppModel, is_text_only, make_model, parse_spec
from .record import ResultsWriter, build_record, read_finished, rewrite_without
from .search import DEFAULT_BACKEND, DEFAULT_SEARCH_TIMEOUT
from .search_agent import DEFAULT_MAX_STEPS, DEFAULT_TOP_K, build_search_agent
from .tools import DEFAULT_PAGE_CHARS, OBSERVE_MODES, Observe

if TYPE_CHECKING:
    from smolagents import Model

    from .render import PageRenderer
    from .search import SearchIndex

logger = logging.getLogger(__name__)

AGENTS: tuple[str, ...] = ("bm25", "repl")
#: RunConfig fields that only one agent uses (left out of the other agent's results lines).
BM25_ONLY = ("top_k", "observe", "oracle", "search_backend", "page_chars", "image_steps", "min_searches",
             "search_timeout")  # fmt: skip
REPL_ONLY = ("sub_model", "sub_calls", "sub_call_chars", "observation_chars", "step_timeout")


class RunError(ValueError):
    """A run that cannot start as asked; the message says what to change."""


@dataclass(frozen=True)
class RunConfig:
    """What to run (stored, minus the output options, in every results line's ``config``).

    Attributes:
        model: model spec (:func:`madqa.agents.models.make_model`).
        agent: ``"bm25"`` (search agent, paper G.1) or ``"repl"`` (code-REPL agent, paper G.5).
        split: ``train``, ``dev`` or ``test``.
        dataset: dataset spec (``None``: ``MADQA_DATASET`` or the local sample).
        limit: run only the first ``limit`` questions of the split.
        max_steps: T, the most model calls per question.
        top_k: pages per search.
        observe: ``image`` or ``text``; ``None`` picks by model (text for text-only models).
        oracle: show the gold evidence pages instead of searching (not on ``test``).
        search_backend: ``whoosh`` or ``tantivy``.
        page_chars: page text shown per result in text mode; ``None`` picks by model (smaller for small contexts).
        image_steps: searches whose page images stay in the model input.
        min_searches: searches required before ``final_answer`` is offered; ``None`` picks by model (0, the
            paper's protocol, except 1 for the bundled local model).
        sub_model: (repl) model spec behind ``llm_query``; ``None``: the root model.
        sub_calls: (repl) sub-calls per question; ``None``: by sub-model (:func:`default_sub_limits`).
        sub_call_chars: (repl) longest ``llm_query`` prompt in characters; ``None``: by sub-model.
        observation_chars: (repl) longest observation of a code step in the root prompt; ``None``: by model.
        step_timeout: (repl) wall-clock seconds per code step (sub-model time excluded).
        search_timeout: wall-clock seconds one search may take before the agent is told to narrow the query
            (0 or ``None``: no limit); see :class:`madqa.agents.search.SearchLimits`.
    """

    model: str = "local"
    agent: str = "bm25"
    split: str = "dev"
    dataset: str | None = None
    limit: int | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    top_k: int = DEFAULT_TOP_K
    observe: Observe | None = None
    oracle: bool = False
    search_backend: str = DEFAULT_BACKEND
    page_chars: int | None = None
    image_steps: int = 1
    min_searches: int | None = None
    sub_model: str | None = None
    sub_calls: int | None = None
    sub_call_chars: int | None = None
    observation_chars: int | None = None
    step_timeout: float = 30.0
    search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT

    def check(self) -> None:
        """Raise :class:`RunError` for settings that cannot work."""
        if self.agent not in AGENTS:
            raise RunError(f"unknown agent {self.agent!r}; available: {', '.join(AGENTS)}")
        if self.oracle and self.split == "test":
            raise RunError("--oracle shows the gold evidence pages, which the test split hides: use dev or train")
        if self.observe is not None and self.observe not in OBSERVE_MODES:
            raise RunError(f"observe must be one of {', '.join(OBSERVE_MODES)}")
        for name in ("max_steps", "top_k", "image_steps"):
            if getattr(self, name) < 1:
                raise RunError(f"{name.replace('_', '-')} must be at least 1")
        if self.min_searches is not None and not 0 <= self.min_searches < self.max_steps:
            raise RunError("min-searches must be between 0 and max-steps - 1")
        if self.limit is not None and self.limit < 0:
            raise RunError("limit must not be negative")
        if self.search_timeout is not None and not self.search_timeout >= 0:  # also rejects NaN
            raise RunError(f"search-timeout must be 0 (no limit) or a positive number of seconds, got "
                           f"{self.search_timeout}")  # fmt: skip
        if self.agent != "repl" and self.sub_model is not None:
            raise RunError("--sub-model is for --agent repl")
        if self.agent == "repl":
            if self.oracle:
                raise RunError("--oracle is for --agent bm25; the repl agent always sees the whole corpus")
            if self.sub_calls is not None and self.sub_calls < 0:
                raise RunError("sub-calls must not be negative")
            if self.sub_call_chars is not None and self.sub_call_chars < 1:
                raise RunError("sub-call-chars must be at least 1")
            if self.observation_chars is not None and self.observation_chars < 100:
                raise RunError("observation-chars must be at least 100")
            if not self.step_timeout > 0:
                raise RunError("step-timeout must be positive")


class Progress(Protocol):
    """Receives the run's progress (the command line shows it with tqdm)."""

    def start(self, total: int, finished: Sequence[Mapping[str, Any]]) -> None:
        """Called once: questions selected, and the records already in the file (resume)."""

    def update(self, record: Mapping[str, Any]) -> None:
        """Called after each new record is written."""


@dataclass
class RunSummary:
    """What a run did.

    Attributes:
        output: the results file.
        selected: questions selected (split, limit).
        skipped: already in the file (resume).
        written: lines written by this run.
        errors: written lines with an ``error``.
    """

    output: Path
    selected: int = 0
    skipped: int = 0
    written: int = 0
    errors: int = 0
    error_ids: list[str] = field(default_factory=list)


#: Page text per result for the bundled local model: a 135M model gains nothing from more, and each page costs
#: prefill time (~100 tokens/s on one core here).
LOCAL_PAGE_CHARS = 600


def default_page_chars(model: Model, top_k: int, max_steps: int) -> int:
    """Page text per result in text mode: :data:`DEFAULT_PAGE_CHARS`; for the local model, what fits its context.

    The local model's whole run should fit its context (~3 characters per token), so that no turn is dropped and
    llama.cpp's prompt-prefix cache keeps every step's prefill to the new observation.
    """
    if isinstance(model, LlamaCppModel):
        tokens = (model.n_ctx - 1500) // (max(1, max_steps - 1) * top_k)
        return max(200, min(LOCAL_PAGE_CHARS, tokens * 3))
    return DEFAULT_PAGE_CHARS


def default_min_searches(model: Model) -> int:
    """Searches required before answering: 1 for the bundled local model (else it answers at once), 0 otherwise."""
    return 1 if isinstance(model, LlamaCppModel) else 0


def prepare_output(
    path: Path, *, resume: bool, overwrite: bool, retry_errors: bool, config: RunConfig
) -> dict[str, Any]:
    """Check or reset the output file; returns the finished records by id (empty unless resuming)."""
    if not path.exists() or path.stat().st_size == 0:
        return {}
    if not resume:
        if overwrite:
            path.unlink()
            return {}
        raise RunError(f"{path} already exists: add --resume to complete it, or --overwrite to start again")
    finished = read_finished(path)
    other = {(r.get("agent"), r.get("model")) for r in finished.values()} - {(config.agent, config.model)}
    if other:
        agent, model = sorted(other, key=str)[0]
        raise RunError(f"{path} holds results of agent {agent!r} with model {model!r}; resume with the same "
                       "--agent and --model, or write to another file")  # fmt: skip
    if retry_errors:
        failed = {rid for rid, r in finished.items() if r.get("error")}
        if failed:
            logger.info("retrying %d question(s) that ended with an error", len(failed))
            rewrite_without(path, failed)
            finished = {rid: r for rid, r in finished.items() if rid not in failed}
    return finished


def select_items(config: RunConfig) -> list[dict[str, Any]]:
    """The questions to run, in split order; with ``oracle``, each carries its gold ``evidence``."""
    from madqa.loading_script.load import load_gold, load_questions

    items = load_gold(config.split, config.dataset) if config.oracle else load_questions(config.split, config.dataset)
    return items[: config.limit] if config.limit is not None else items


def run_benchmark(
    config: RunConfig,
    output: str | os.PathLike[str],
    *,
    resume: bool = False,
    overwrite: bool = False,
    retry_errors: bool = False,
    workers: int = 1,
    progress: Progress | None = None,
    model_options: Mapping[str, Any] | None = None,
) -> RunSummary:
    """Run ``config`` and append one results line per question to ``output``.

    Raises:
        RunError: bad settings, an output file that exists without ``resume``/``overwrite``, or one that cannot be
            resumed (other model, invalid lines).
        ValueError: an invalid model spec or a missing model dependency (:func:`make_model`).
        madqa.loading_script.load.DatasetUnavailableError: the split cannot be read.
    """
    config.check()
    parse_spec(config.model)
    if config.sub_model is not None:
        parse_spec(config.sub_model)
    if workers < 1:
        raise RunError("workers must be at least 1")
    path = Path(output)
    try:
        finished = prepare_output(path, resume=resume, overwrite=overwrite, retry_errors=retry_errors, config=config)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    items = select_items(config)
    from madqa.loading_script.release import dataset_provenance

    provenance = dataset_provenance(config.dataset)
    todo = [it for it in items if str(it["id"]) not in finished]
    summary = RunSummary(path, selected=len(items), skipped=len(items) - len(todo))
    if summary.skipped:
        logger.info("resuming %s: %d of %d question(s) already done", path, summary.skipped, len(items))
    if not todo:
        return summary
    if config.agent == "repl":
        from .repl_run import repl_answerer

        answer_repl, finish = repl_answerer(config, todo, workers, dict(model_options or {}), dataset=provenance)
        try:
            if progress is not None:
                progress.start(len(items), [finished[str(it["id"])] for it in items if str(it["id"]) in finished])
            return _write_all(path, todo, answer_repl, workers, summary, progress)
        finally:
            finish()
    models: queue.Queue[Model] = queue.Queue()
    first = make_model(config.model, **dict(model_options or {}))
    models.put(first)
    for _ in range(min(workers, len(todo)) - 1):
        models.put(make_model(config.model, **dict(model_options or {})))
    if config.observe == "image" and is_text_only(first):
        raise RunError(f"model {config.model} takes text only: use --observe text")
    observe: Observe = config.observe or ("text" if is_text_only(first) else "image")
    page_chars = config.page_chars or default_page_chars(first, config.top_k, config.max_steps)
    min_searches = default_min_searches(first) if config.min_searches is None else config.min_searches
    config = replace(config, observe=observe, page_chars=page_chars, min_searches=min_searches)
    settings = {k: v for k, v in asdict(config).items() if k != "limit" and k not in REPL_ONLY}
    index, renderer = _corpus(config)
    if progress is not None:
        progress.start(len(items), [finished[str(it["id"])] for it in items if str(it["id"]) in finished])

    def answer(item: Mapping[str, Any]) -> dict[str, Any]:
        model = models.get()
        try:
            return _answer_one(item, model, index, renderer, config, settings, provenance)
        finally:
            models.put(model)

    return _write_all(path, todo, answer, workers, summary, progress)


def _write_all(
    path: Path,
    todo: Sequence[Mapping[str, Any]],
    answer: Callable[[Mapping[str, Any]], dict[str, Any]],
    workers: int,
    summary: RunSummary,
    progress: Progress | None,
) -> RunSummary:
    """Answer ``todo`` on ``workers`` threads, appending each record to ``path`` as soon as it is done."""
    with ResultsWriter(path) as writer, ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
        futures = [pool.submit(answer, it) for it in todo]
        try:
            for future in as_completed(futures):
                record = future.result()
                writer.write(record)
                summary.written += 1
                if record["error"]:
                    summary.errors += 1
                    summary.error_ids.append(record["id"])
                if progress is not None:
                    progress.update(record)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return summary


def _corpus(config: RunConfig) -> tuple[SearchIndex | None, PageRenderer]:
    from madqa.loading_script.load import load_pages

    from .render import PageRenderer
    from .search import SearchLimits, open_index

    pages = load_pages(config.dataset)
    limits, backend = SearchLimits(timeout=config.search_timeout or None), config.search_backend
    index = None if config.oracle else open_index(pages, backend=backend, limits=limits)  # type: ignore[arg-type]
    return index, PageRenderer(config.dataset, pages=pages)


def _answer_one(
    item: Mapping[str, Any],
    model: Model,
    index: SearchIndex | None,
    renderer: PageRenderer,
    config: RunConfig,
    settings: Mapping[str, Any],
    dataset: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One question → its results line; any exception is recorded as the line's error (the run goes on)."""
    start = time.perf_counter()
    agent, output, error = None, None, None
    try:
        agent = build_search_agent(
            model, index, renderer, max_steps=config.max_steps, top_k=config.top_k, observe=config.observe,
            oracle_pages=item.get("evidence") if config.oracle else None, page_chars=config.page_chars or 0,
            image_steps=config.image_steps, min_searches=config.min_searches or 0,
        )  # fmt: skip
        output = agent.solve(str(item["question"]))
    except Exception as exc:  # noqa: BLE001 - recorded in the line; one failing question must not stop the run
        error = f"{type(exc).__name__}: {exc}"
        logger.warning("question %s failed: %s", item.get("id"), error)
    return build_record(item, agent_name=config.agent, model=config.model, elapsed_s=time.perf_counter() - start,
                        output=output, agent=agent, error=error, config=settings, dataset=dataset)  # fmt: skip

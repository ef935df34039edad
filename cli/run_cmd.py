"""``madqa run``: answer a split's questions with an agent and a model, one results line per question.

Example (offline, the bundled model)::

    madqa run --agent bm25 --model local --split dev --limit 3 -o r.jsonl
    madqa run --agent repl --model local --split dev --limit 1 -o repl.jsonl
    madqa evaluate r.jsonl --split dev

An agent's options are flags generated from its options class (``madqa run --agent X --help`` lists X's), or
``--agent-option KEY=VALUE`` (a plugin agent's too): :mod:`madqa.cli.agent_options`.

The progress bar shows the running accuracy when the split's gold answers are available (train/dev): the share
of answered questions whose ANLS* against the gold variants reaches ``CORRECT_THRESHOLD`` — the metric's
``anls``-mode correctness, computed here in the command-line layer because ``agents/`` may import only
``madqa.metric.schema``. Questions resumed from the file count too.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from madqa.agents.harness import registry
from madqa.agents.harness.config import DEFAULT_MAX_STEPS
from madqa.agents.harness.deadline import DEFAULT_INTERRUPT_WAIT
from madqa.cli import agent_options, conventions
from madqa.cli.errors import UserError
from madqa.cli.model_options import add_model_option_argument, model_options_of

HELP = "run an agent over a split's questions and write results JSONL (resumable; score it with `madqa evaluate`)"
EXAMPLES = (
    "madqa run --agent bm25 --model local --split dev --limit 3 -o r.jsonl",
    "madqa run --agent repl --model local --split dev --limit 1 -o repl.jsonl --sub-calls 5",
    "madqa run --agent rag --agent-option top_k=3 -o rag.jsonl --resume --json",
    "madqa run --model openai:gpt-4o-mini --split test -o test.jsonl --workers 8 --question-timeout 300",
    "madqa run --agent bm25 --model local --split dev --limit 3 --repeats 3 -o r3.jsonl",
)

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``run`` arguments."""
    agent_options.configure(parser)
    parser.add_argument("--agent", default="bm25", choices=registry.names(), help=agent_options.agent_choice_help())
    parser.add_argument(
        "--model",
        default="local",
        metavar="SPEC",
        help="local (the bundled offline model) | litellm:ID | openai:ID | hf:ID | transformers:ID | "
        "py:MODULE:FACTORY",
    )
    parser.add_argument("--split", default="dev", choices=("train", "dev", "test"), help="the split to answer")
    conventions.add_dataset_argument(parser)
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions of the split")
    conventions.add_output_file(
        parser, "the results file (JSONL, one line per question)", required=True, metavar="RESULTS.jsonl"
    )
    parser.add_argument("--resume", action="store_true", help="skip the questions already in the results file")
    parser.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume: run again the questions that failed for an infrastructure reason "
        "(provider, transport, timeout, worker; never a model's own missing answer)",
    )
    parser.add_argument(
        "--allow-mixed-settings",
        action="store_true",
        help="with --resume: add lines to a file whose lines were written with other settings",
    )
    conventions.add_overwrite(parser, "the results file")
    parser.add_argument(
        "--repeats",
        type=int,
        metavar="K",
        help="answer every question K times, repeat r with model seed S+r (S: --model-option seed, else 0); each "
        "line records its repeat and seed (resumable per (id, repeat); `madqa evaluate` reports spread and pass^k)",
    )
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="questions answered in parallel")
    parser.add_argument(
        "--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="T", help="model calls per question"
    )
    parser.add_argument(
        "--question-timeout",
        type=float,
        metavar="S",
        help="wall-clock seconds per question; one that runs out is a timeout error line (unset: no limit)",
    )
    parser.add_argument(
        "--interrupt-wait",
        type=float,
        default=DEFAULT_INTERRUPT_WAIT,
        metavar="S",
        help="on Ctrl+C, seconds to wait for the questions in flight before stopping (a second Ctrl+C stops at once)",
    )
    parser.add_argument("--api-base", help="model server URL (openai:/litellm: specs)")
    add_model_option_argument(parser)
    add_ray_options(parser)
    conventions.add_no_progress_flag(parser)
    conventions.add_json_flag(parser, "the run's summary (file, lines written and kept, errors, running accuracy)")


def add_ray_options(parser: argparse.ArgumentParser) -> None:
    """``--ray [ADDRESS]``, ``--ray-actors``, ``--ray-cpus`` (shared with `madqa sweep`)."""
    ray = parser.add_argument_group("Ray (pip install 'madqa[ray]')")
    ray.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="answer on a Ray cluster: alone, RAY_ADDRESS or a new local Ray; or HOST:PORT / "
        "ray://HOST:10001 (--workers: questions in flight across the cluster)",
    )
    ray.add_argument("--ray-actors", type=int, metavar="N", help="agent replicas (unset: one per Ray node)")
    ray.add_argument(
        "--ray-cpus",
        type=float,
        default=0.0,
        metavar="C",
        help="CPUs each replica reserves (0: the model server does the work)",
    )


def ray_backend(args: argparse.Namespace) -> Any:
    """The :class:`~madqa.agents.harness.ray_run.RayBackend` that ``--ray`` asks for, or ``None`` (this machine)."""
    if getattr(args, "ray", None) is None:
        return None
    from madqa.agents.harness.ray_run import RayBackend
    from madqa.loading_script.ray_cluster import RayUnavailableError, require_ray

    try:
        require_ray()
        return RayBackend(None if args.ray == "local" else args.ray, actors=args.ray_actors, num_cpus=args.ray_cpus)
    except (RayUnavailableError, ValueError) as exc:
        raise UserError(str(exc)) from None


class _Bar:
    """tqdm progress with running accuracy (ANLS* ≥ threshold) when gold variants are known.

    The bar opens before the agent is prepared and says what the run is doing (``status``: preparing the agent,
    then answering), with its clock redrawn every second: a first question can take a minute (a local model loading),
    and a bar frozen at "0/3 [00:00<?]" reads as a hang.
    """

    TICK_S = 1.0

    def __init__(self, gold: Mapping[str, Any] | None, enabled: bool) -> None:
        self.gold, self.enabled, self.bar = gold, enabled, None  # type: Mapping[str, Any] | None, bool, Any
        self.scored, self.correct, self.errors = 0, 0, 0
        self.status = "preparing the agent"
        self._closed = threading.Event()

    def _score(self, record: Mapping[str, Any]) -> None:
        self.errors += bool(record.get("error"))
        if self.gold is None or str(record.get("id")) not in self.gold:
            return
        from madqa.metric.schema import CORRECT_THRESHOLD
        from madqa.metric.scoring import anls_star

        self.scored += 1
        self.correct += anls_star(list(record.get("answer") or []), self.gold[str(record["id"])]) >= CORRECT_THRESHOLD

    def _postfix(self) -> dict[str, str]:
        out = {"status": self.status, "errors": str(self.errors)}
        if self.scored:
            out["acc"] = f"{self.correct / self.scored:.1%}"
        return out

    def open(self, total: int | None) -> None:
        """Show the bar now (``total``: the questions asked for, when known), before any slow preparation."""
        if not self.enabled:
            return
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, unit="q", desc="madqa run", dynamic_ncols=True)
        self.bar.set_postfix(self._postfix())
        threading.Thread(target=self._tick, name="madqa-run-bar", daemon=True).start()

    def _tick(self) -> None:
        while not self._closed.wait(self.TICK_S):
            if self.bar is not None:
                self.bar.refresh()

    def start(self, total: int, finished: Sequence[Mapping[str, Any]]) -> None:
        for record in finished:
            self._score(record)
        self.status = "answering"
        if self.enabled and self.bar is None:
            self.open(total)
        if self.bar is not None:
            self.bar.total = total
            self.bar.n = len(finished)
            self.bar.set_postfix(self._postfix())

    def update(self, record: Mapping[str, Any]) -> None:
        self._score(record)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(self._postfix())

    def close(self) -> None:
        self._closed.set()
        if self.bar is not None:
            self.bar.leave = self.status != "preparing the agent"  # nothing was left to answer: no bar stays
            self.status = "done"
            self.bar.set_postfix(self._postfix(), refresh=False)
            self.bar.close()


def _logs_above_the_bar(enabled: bool) -> contextlib.AbstractContextManager[None]:
    """While the bar shows, log lines are written above it rather than into it."""
    if not enabled:
        return contextlib.nullcontext()
    from tqdm.contrib.logging import logging_redirect_tqdm

    return logging_redirect_tqdm()


def _gold_variants(split: str, dataset: str | None) -> dict[str, Any] | None:
    if split == "test":
        return None
    from madqa.loading_script.load import DatasetNotPreparedError, DatasetUnavailableError, load_gold

    try:
        return {str(r["id"]): r["answer_variants"] for r in load_gold(split, dataset)}
    except DatasetNotPreparedError as exc:  # the run could not read the questions either: stop now, in one line
        raise UserError(str(exc)) from None
    except DatasetUnavailableError as exc:
        logger.info("no running accuracy: %s", exc)
        return None


def _warn_if_incomplete(dataset: str | None) -> None:
    """A prepared dataset with documents missing changes what can be answered: say so before a run."""
    from madqa.loading_script.load import SAMPLE, dataset_spec
    from madqa.loading_script.prepared import read_prepared

    spec = dataset_spec(dataset)
    record = read_prepared(spec) if spec != SAMPLE else None
    if record is not None and not record.get("complete"):
        missing = [f["document"] for f in record.get("failures", [])]
        logger.warning(
            "%s is incomplete: %d document(s) were not fetched or read (%s); questions about them cannot "
            "be answered. Rerun `madqa setup --dataset %s` to retry.",
            spec,
            len(missing),
            ", ".join(missing[:5]) + (" …" if len(missing) > 5 else ""),
            spec,
        )


def _start_line(args: argparse.Namespace) -> str:
    """The run's first status line: what it runs, on what, and where it writes (before anything slow is loaded)."""
    which = "the questions" if args.limit is None else f"the first {args.limit} question{'s' * (args.limit != 1)}"
    repeats = f", {args.repeats} times each" if args.repeats else ""
    return (
        f"starting: the {args.agent} agent with model {args.model} on {which} of the {args.split} split{repeats}, "
        f"writing {args.output}"
    )


def _resume_command(args: argparse.Namespace) -> str:
    """The command that completes this run: its own command line with ``--resume`` (``--overwrite`` dropped)."""
    argv = sys.argv[1:]
    if "run" not in argv:  # called in-process (madqa.cli.main): this process's argv is not the run's
        return f"madqa run … -o {shlex.quote(str(args.output))} --resume"
    words = [w for w in argv if w != "--overwrite"]
    return "madqa " + shlex.join(words + ([] if "--resume" in words else ["--resume"]))


def _score_hint(output: Any, split: str, dataset: str | None) -> str:
    """The closing hint: the command that scores the file against the gold it was run on."""
    from madqa.loading_script.load import SAMPLE, dataset_spec

    if split == "test" and dataset_spec(dataset) != SAMPLE:  # its labels are not on this machine
        return f"the test labels of {dataset_spec(dataset)} are hidden: submit {output} on the leaderboard Space"
    return f"score it with: {conventions.score_command(output, split, dataset)}"


def _exit_now(status: int) -> None:
    """Leave at once: no interpreter shutdown, whose finalizers (llama.cpp's threads) crashed a stopped run."""
    logging.shutdown()  # flush what was logged
    os._exit(status)


@contextlib.contextmanager
def _interrupts(stop: Any, resume: str) -> Iterator[None]:
    """Ctrl+C during the block: the first sets ``stop`` (the runner starts no question and waits for those in
    flight), the second exits at once with status 130, never in the middle of writing a line."""

    def handler(signum: int, frame: Any) -> None:
        if not stop.is_set():
            stop.set()
            return
        with stop.writes_held():
            logger.warning("stopped at once; finished lines are kept. Resume with: %s", resume)
            _exit_now(130)

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if not stop.is_set():  # once interrupted, a second Ctrl+C must exit at once until the very end
            signal.signal(signal.SIGINT, previous)


def _print_summary(summary: Any, bar: _Bar, *, interrupted: bool) -> None:
    """``--json``: the run's outcome as one JSON document on stdout (the logs stay on stderr)."""
    import json

    accuracy = {"correct": bar.correct, "scored": bar.scored} if bar.scored else None
    report = {
        "output": str(summary.output),
        "written": summary.written,
        "skipped": summary.skipped,
        "errors": summary.errors,
        "retryable_ids": list(summary.retryable_ids),
        "running_accuracy": accuracy,
        "interrupted": interrupted,
    }
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    """Run the agent and report where the results are."""
    from madqa.agents.harness.runner import RunConfig, RunError, StopRequest, run_benchmark
    from madqa.loading_script.load import DatasetUnavailableError

    if args.retry_errors and not args.resume:
        raise UserError("--retry-errors needs --resume")
    if args.repeats is not None and args.repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {args.repeats}")
    # The first line within a second of the start: what follows (gold, corpus, index, model) can take a minute.
    logger.info("%s", _start_line(args))
    config = RunConfig(
        model=args.model,
        agent=args.agent,
        split=args.split,
        dataset=args.dataset,
        limit=args.limit,
        max_steps=args.max_steps,
        question_timeout=args.question_timeout,
        options=agent_options.options_of(args),
    )
    from madqa.agents.models.factory import check_dependencies

    try:
        check_dependencies(args.model)  # before the gold, the pages and the index are loaded
    except ValueError as exc:  # a MissingDependencyError too: one line naming the extra
        raise UserError(str(exc)) from None
    _warn_if_incomplete(args.dataset)
    logger.info("loading the %s split's questions%s…", args.split, "" if args.split == "test" else " and gold answers")
    bar = _Bar(_gold_variants(args.split, args.dataset), enabled=not args.no_progress)
    options = model_options_of(args)
    backend = ray_backend(args)
    stop = StopRequest(args.interrupt_wait)
    bar.open(args.limit)
    run_options: dict[str, Any] = {
        "resume": args.resume,
        "overwrite": args.overwrite,
        "retry_errors": args.retry_errors,
        "workers": args.workers,
        "progress": bar,
        "model_options": options,
        "backend": backend,
        "allow_mixed_settings": args.allow_mixed_settings,
        "stop": stop,
    }
    try:
        with _interrupts(stop, _resume_command(args)), _logs_above_the_bar(bar.enabled):
            if args.repeats is None:
                summary = run_benchmark(config, args.output, **run_options)
            else:
                from madqa.agents.harness.repeats import run_repeats

                summary = run_repeats(config, args.output, repeats=args.repeats, **run_options)
    except (RunError, DatasetUnavailableError, ValueError) as exc:
        raise UserError(str(exc)) from None
    finally:
        bar.close()
    if args.json:
        _print_summary(summary, bar, interrupted=stop.is_set())
    if stop.is_set():
        logger.warning(
            "interrupted: %d new line(s) kept in %s; resume with: %s",
            summary.written,
            summary.output,
            _resume_command(args),
        )
        if summary.abandoned:  # their threads still run: leave without waiting for them (or their finalizers)
            _exit_now(130)
        return 130
    acc = f", running accuracy {bar.correct}/{bar.scored}" if bar.scored else ""
    logger.info(
        "%s: %d new line(s), %d already there, %d error(s)%s",
        summary.output,
        summary.written,
        summary.skipped,
        summary.errors,
        acc,
    )
    logger.info("%s", _score_hint(summary.output, args.split, args.dataset))
    if summary.retryable_ids:
        ids = summary.retryable_ids
        logger.warning(
            "questions that failed for an infrastructure reason: %s (rerun them with --resume --retry-errors)",
            ", ".join(ids[:10]) + (" …" if len(ids) > 10 else ""),
        )
    if summary.errors > len(summary.retryable_ids):
        logger.warning(
            "%d question(s) without a usable answer from the model (kept: --retry-errors does not rerun them)",
            summary.errors - len(summary.retryable_ids),
        )
    return 1 if summary.written and summary.errors == summary.written else 0

"""Validate an uploaded results file with the metric's own checks, score it against the private test labels, store it.

Every rejection is a :class:`SubmissionError` whose message names the problem (line, field) and is safe to show:
it is built from the user's own input and public ids only, never from gold answers. Nothing is stored unless the
whole file is valid (the store writes one transaction per submission).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from madqa.metric.inputs import InputError, parse_references, parse_results
from madqa.metric.matching import match_predictions
from madqa.metric.report import DEFAULT_OPTIONS, ReportOptions, build_report, score_predictions
from madqa.metric.schema import Reference

from .disclosure import input_warnings, public_report
from .identity import MAX_FIELD_CHARS, REQUIRED_FIELDS, RateLimiter, SubmissionError, clean_form
from .refusals import DuplicateFile, KeyReplay, RateLimited, RateRule
from .storage import SubmissionStore

__all__ = ["MAX_FIELD_CHARS", "REQUIRED_FIELDS", "Accepted", "RateLimiter", "Scorer", "SubmissionError",
           "Evaluation", "clean_form", "evaluate_results", "format_accepted"]  # fmt: skip

logger = logging.getLogger(__name__)

#: Name under which the uploaded file is referred to in messages (the server-side temp path is never echoed).
SOURCE_NAME = "results.jsonl"


def _deep_line(text: str) -> int:
    """The first line whose JSON nesting is too deep for the parser."""
    import json

    for number, raw in enumerate(text.split("\n"), start=1):  # line numbers as the parser counts them
        try:
            json.loads(raw)
        except RecursionError:
            return number
        except ValueError:
            continue
    return 0


@dataclass(frozen=True)
class Accepted:
    """An accepted submission: its id, rank among all submissions and the report (no per-item data)."""

    id: int
    rank: int
    total: int
    report: dict[str, Any]
    #: ``True`` when this answers a retry: the submission was stored by an earlier call with the same key.
    replayed: bool = False
    #: What was scored leniently (the metric's input warnings; built from the file alone, never from labels). Read
    #: from the stored report, so a replayed submission shows the warnings it was accepted with.
    warnings: tuple[str, ...] = ()


def check_ids(predictions: Sequence[Any], test_ids: set[str], other_split_ids: Mapping[str, str]) -> None:
    """Every line with an id must name a test question; other splits' ids get their own message."""
    problems = []
    for p in predictions:
        if p.id is not None and p.id not in test_ids:
            shown = p.id if len(p.id) <= 80 else p.id[:77] + "..."
            split = other_split_ids.get(p.id)
            why = f"is a {split} question, not a test question" if split else "is not a test-split id"
            problems.append(f"{SOURCE_NAME} line {p.line}: field 'id' {shown!r} {why}")
    if problems:
        raise InputError(problems)


@dataclass(frozen=True)
class Evaluation:
    """A scored results text: the public report, the per-item scores (server side), the content's hash, and the
    metric's input warnings (from the file alone: safe to show)."""

    report: dict[str, Any]
    items: list[dict[str, Any]]
    content_sha256: str
    warnings: tuple[str, ...] = ()


def evaluate_results(
    text: str,
    references: Sequence[Reference],
    test_ids: set[str],
    other_split_ids: Mapping[str, str],
    *,
    options: ReportOptions = DEFAULT_OPTIONS,
    judge: Any = None,
) -> Evaluation:
    """Validate and score a results text against the test labels.

    Pure (no I/O): the scoring processes of :mod:`.scoring_pool` call it as the Space's request threads do. Every
    rejection happens before any work that touches a gold answer, so a refused file (which costs no quota) cannot
    time the labels. The per-item scores are always computed (they are stored), whatever ``options.include_items``.

    Raises:
        SubmissionError: any validation problem (the message names line and field, never a gold value).
    """
    try:
        try:
            parsed = parse_results(text, SOURCE_NAME)
            predictions = parsed.predictions
        except RecursionError:
            raise InputError(f"{SOURCE_NAME} line {_deep_line(text)}: JSON nested too deeply") from None
        check_ids(predictions, test_ids, other_split_ids)
        matching = match_predictions(predictions, references)
        if matching.unknown:
            first = matching.unknown[0]
            raise InputError(f"{len(matching.unknown)} line(s) match no test question, e.g. {first[:160]}")
    except InputError as exc:
        raise SubmissionError(str(exc)) from None
    run = score_predictions(predictions, references, mode=options.mode, judge=judge, matching=matching)
    report = build_report(run, references, replace(options, include_items=True), parsed.notes)
    items = report.pop("items")
    # the warnings are computed before any gold-dependent work, from the uploaded text only (no label can leak)
    warnings = tuple(parsed.notes.warnings())
    return Evaluation(public_report(report, items), items, canonical_sha256(text), warnings)


class Scorer:
    """Scores results files against the private test labels and stores accepted ones.

    Args:
        references: the labelled test split (server side only).
        store: where accepted submissions go.
        other_split_ids: public ids of the other splits, to name them in rejections.
        mode: ``anls`` or ``judge`` (then ``judge`` must be given).
        judge: batch judge for ``judge`` mode.
        n_resamples: Kuiper bootstrap resamples.
        max_bytes: size limit of a results file.
    """

    def __init__(
        self,
        references: Sequence[Reference],
        store: SubmissionStore,
        *,
        other_split_ids: Mapping[str, str] | None = None,
        mode: str = "anls",
        judge: Any = None,
        n_resamples: int = 1000,
        max_bytes: int = 20 * 1024 * 1024,
    ) -> None:
        self.references = list(references)
        self.test_ids = {r.id for r in self.references}
        self.store = store
        self.other_split_ids = dict(other_split_ids or {})
        self.judge, self.max_bytes = judge, max_bytes
        self.options = ReportOptions(mode=mode, n_resamples=n_resamples)  # type: ignore[arg-type]
        #: Walled scoring processes (:class:`~.scoring_pool.ScoringPool`); ``None`` scores in the calling thread.
        self.pool: Any = None
        self._busy: Counter[str] = Counter()  # submissions being scored, per identity
        self._lock = threading.Lock()

    @classmethod
    def from_labels(cls, labels_path: Path, store: SubmissionStore, **kwargs: Any) -> Scorer:
        """Build from the private labels JSONL (``Layout.test_labels``)."""
        from madqa.loading_script.load import load_gold

        rows = load_gold("test", labels_path=labels_path)
        return cls(parse_references(rows, "test labels"), store, **kwargs)

    def read_upload(self, path: str | Path | None) -> str:
        """The uploaded file's text (size- and encoding-checked)."""
        if path is None or not str(path):
            raise SubmissionError("no file: upload your results JSONL")
        file = Path(path)
        try:
            size = file.stat().st_size
            if size > self.max_bytes:
                raise SubmissionError(f"{SOURCE_NAME}: the file is larger than {self.max_bytes // (1024 * 1024)} MB")
            data = file.read_bytes()
        except OSError:
            raise SubmissionError("the uploaded file could not be read; please upload it again") from None
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise SubmissionError(f"{SOURCE_NAME} line {line}: the file is not valid UTF-8 text") from None

    def evaluate_text(self, text: str) -> Evaluation:
        """Validate and score a results text (public report, per-item scores, content hash).

        In ``anls`` mode with a :attr:`pool`, the work runs in the pool's walled scoring processes (CPU budget,
        bounded concurrency); otherwise here. The report is :func:`~.disclosure.public_report`'s (aggregates only).

        Raises:
            SubmissionError: any validation problem, a full queue or an exhausted CPU budget.
        """
        if self.pool is not None and self.judge is None:
            return self.pool.evaluate(text)  # type: ignore[no-any-return]
        return evaluate_results(text, self.references, self.test_ids, self.other_split_ids, options=self.options,
                                judge=self.judge)  # fmt: skip

    def submit(self, path: str | Path | None, form: Mapping[str, Any], *, origin: str = "user",
               identity: str | None = None, key: str | None = None, limiter: RateLimiter | None = None) -> Accepted:
        """Check the form and the file, score, store; returns the stored submission's id and rank.

        Reserved names are refused unless ``origin`` is a maintainers' one; see :meth:`submit_text` for the rest.
        """
        clean = clean_form(form, maintainer=origin != "user")
        text = self.read_upload(path)
        return self.submit_text(text, clean, origin=origin, identity=identity, key=key, limiter=limiter)

    def submit_text(self, text: str, form: Mapping[str, str], *, origin: str = "user", identity: str | None = None,
                    key: str | None = None, limiter: RateLimiter | None = None) -> Accepted:
        """Score and store a results text whose form is already clean.

        Args:
            identity: who submits (:func:`~.identity.identity_key`); scopes ``key`` and the rate limit.
            key: client-supplied idempotency key: a retry with the same key (and file) returns the stored
                submission (``replayed``) instead of storing it twice.
            limiter: the rate policy applied to ``identity`` (checked before scoring and again when storing;
                only accepted submissions count).

        Raises:
            SubmissionError: invalid file, duplicate file, key reused for another file, or rate limit.
        """
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        idem = None if not key else hashlib.sha256(f"{identity or ''}\0{key}".encode()).hexdigest()

        def rule() -> RateRule | None:
            return limiter.rule(identity) if limiter is not None and identity else None

        try:
            self.store.precheck(file_sha256=sha, idem_key=idem, rate=rule())  # refuse before any scoring work
            with self._in_flight(identity, rule()):
                done = self.evaluate_text(text)
                created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
                kind = results_system_type(text)
                report = {**done.report, "system_type": kind}  # also in the report: older readers and mirror files
                sid = self.store.add(form, report, done.items, created=created, origin=origin,
                                     file_sha256=sha, content_sha256=done.content_sha256, idem_key=idem,
                                     rate=rule(), system_type=kind)  # fmt: skip
        except KeyReplay as exc:
            if not exc.same_file:
                raise SubmissionError(f"this submission key was already used for submission #{exc.sid} with another "
                                      "file; reload the page to submit a new file") from None  # fmt: skip
            logger.info("retry of submission %s answered from the store", exc.sid)
            return self.accepted(exc.sid, replayed=True)
        except DuplicateFile as exc:
            raise SubmissionError(f"this file was already submitted as #{exc.sid} (same content); "
                                  "nothing was stored") from None  # fmt: skip
        except RateLimited as exc:
            raise SubmissionError(RateLimiter.message(exc.rule.limit, exc.rule.window_s, exc.wait_s)) from None
        accepted = self.accepted(sid)  # its warnings are the stored ones: a replay shows the same
        logger.info("accepted submission %s (%s): rank %d", sid, form.get("system"), accepted.rank)
        for warning in done.warnings:
            logger.warning("submission %s: %s", sid, warning)
        return accepted

    @contextmanager
    def _in_flight(self, identity: str | None, rule: RateRule | None) -> Iterator[None]:
        """Count a submission being scored against its author's quota until it is stored or refused.

        Without this, files sent at once by a user with one submission left would all pass the pre-check and be
        scored (their response times observed) although only one can be stored: free probes of the labels.
        """
        if identity is None or rule is None or rule.limit <= 0:
            yield
            return
        with self._lock:
            busy = self._busy[identity]
            if busy >= rule.limit:
                raise SubmissionError(f"rate limit: {busy} of your submissions are being scored, which is your "
                                      "whole quota; wait for their results (nothing was stored)")  # fmt: skip
            try:  # stored in the window + in flight must stay under the limit
                self.store.precheck(rate=replace(rule, limit=rule.limit - busy))
            except RateLimited as exc:
                raise SubmissionError(RateLimiter.message(rule.limit, rule.window_s, exc.wait_s)) from None
            self._busy[identity] += 1
        try:
            yield
        finally:
            with self._lock:
                self._busy[identity] -= 1
                if not self._busy[identity]:
                    del self._busy[identity]

    def accepted(self, sid: int, *, replayed: bool = False) -> Accepted:
        """The answer for stored submission ``sid``: its rank by accuracy among all submissions."""
        subs = self.store.submissions()
        report = next(s.report for s in subs if s.id == sid)
        mine = report.get("accuracy") or 0.0
        rank = 1 + sum(1 for s in subs if (s.report.get("accuracy") or 0.0) > mine)
        return Accepted(sid, rank, len(subs), report, replayed, input_warnings(report))


def results_system_type(text: str) -> str:
    """``"human"`` when every line of a results file says ``system_type: "human"`` (``madqa human``), else
    ``"agent"``; the board labels and filters rows by it.

    >>> results_system_type('{"id": "a", "system_type": "human"}\\n'), results_system_type('{"id": "a"}')
    ('human', 'agent')
    """
    if '"system_type"' not in text:  # the common case costs one scan, no parsing
        return "agent"
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        human = bool(lines) and all(json.loads(line).get("system_type") == "human" for line in lines)
    except (ValueError, AttributeError):
        human = False
    return "human" if human else "agent"


def canonical_sha256(text: str) -> str:
    """sha256 of a results text's content: each JSON line re-serialised with sorted keys, the lines sorted.

    Whitespace, key order, line order and blank lines do not make a file new (unparsable lines count as is).
    """
    import json

    lines = []
    for raw in text.split("\n"):
        if not raw.strip():
            continue
        try:
            lines.append(json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False))
        except (ValueError, RecursionError):
            lines.append(raw.strip())
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8", "surrogatepass")).hexdigest()


def format_accepted(acc: Accepted) -> str:
    """The submitter's summary: headline scores and rank (Markdown)."""
    r = acc.report

    def pct(key: str) -> str:
        value = r.get(key)
        return "n/a" if value is None else f"{100 * value:.1f}"

    ci = r.get("accuracy_ci")
    ci_text = f" (95% CI {100 * ci[0]:.1f}–{100 * ci[1]:.1f})" if ci else ""
    notes = "".join(f"\n- {_markdown_text(w)}" for w in acc.warnings)
    return (
        f"**Accepted** as submission #{acc.id} — rank **{acc.rank}** of {acc.total}.\n\n"
        f"Accuracy {pct('accuracy')}{ci_text} · Page F1 {pct('page_f1')} · Doc F1 {pct('doc_f1')} · "
        f"scoring mode `{r.get('mode')}` · coverage {r.get('n_predicted')}/{r.get('n')}"
        + (f"\n\n**Warnings** (scored anyway):{notes}" if notes else "")
    )


def _markdown_text(text: str) -> str:
    """A warning as literal Markdown text: it quotes field names from the uploaded file."""
    return "".join("\\" + ch if ch in "\\`*_{}[]()#+-.!<>|~" else ch for ch in text)

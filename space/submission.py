"""Validate an uploaded results file with the metric's own checks, score it against the private test labels, store it.

Every rejection is a :class:`SubmissionError` whose message names the problem (line, field) and is safe to show:
it is built from the user's own input and public ids only, never from gold answers. Nothing is stored unless the
whole file is valid (the store writes one transaction per submission).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from madqa.metric.inputs import InputError, parse_references, parse_results_text
from madqa.metric.report import build_report, score_predictions
from madqa.metric.schema import Reference

from .storage import FORM_FIELDS, SubmissionStore

logger = logging.getLogger(__name__)

#: Form fields a submitter must fill in, with their labels (``submitter`` may come from the HF login).
REQUIRED_FIELDS: dict[str, str] = {
    "system": "system name", "model": "model", "agent": "agent", "contact": "contact",
    "models_used": "models used", "training_data": "training-data statement", "compute": "compute budget",
}  # fmt: skip
MAX_FIELD_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: Name under which the uploaded file is referred to in messages (the server-side temp path is never echoed).
SOURCE_NAME = "results.jsonl"


def _deep_line(text: str) -> int:
    """The first line whose JSON nesting is too deep for the parser."""
    import json

    for number, raw in enumerate(text.splitlines(), start=1):
        try:
            json.loads(raw)
        except RecursionError:
            return number
        except ValueError:
            continue
    return 0


class SubmissionError(ValueError):
    """A rejected submission; ``str()`` is the user-facing message."""


@dataclass
class RateLimiter:
    """At most ``limit`` attempts per key within ``window_s`` seconds (``limit`` 0 disables it)."""

    limit: int
    window_s: float
    clock: Any = time.monotonic
    _seen: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, key: str) -> None:
        """Record one attempt for ``key``.

        Raises:
            SubmissionError: the key is over its limit.
        """
        if self.limit <= 0:
            return
        now = self.clock()
        with self._lock:
            seen = self._seen.setdefault(key, deque())
            while seen and now - seen[0] >= self.window_s:
                seen.popleft()
            if len(seen) >= self.limit:
                wait = int(self.window_s - (now - seen[0])) + 1
                raise SubmissionError(f"rate limit: at most {self.limit} submissions per {int(self.window_s)} s; "
                                      f"try again in {wait} s")  # fmt: skip
            seen.append(now)


@dataclass(frozen=True)
class Accepted:
    """An accepted submission: its id, rank among all submissions and the report (no per-item data)."""

    id: int
    rank: int
    total: int
    report: dict[str, Any]


def clean_form(form: Mapping[str, Any]) -> dict[str, str]:
    """Trimmed form values; missing required fields, overlong values and control characters are rejected."""
    out: dict[str, str] = {}
    for key in FORM_FIELDS:
        value = form.get(key)
        text = "" if value is None else str(value).strip()
        label = REQUIRED_FIELDS.get(key, key)
        if key in REQUIRED_FIELDS and not text:
            raise SubmissionError(f"form: the field '{label}' is required")
        if len(text) > MAX_FIELD_CHARS:
            raise SubmissionError(f"form: the field '{label}' is longer than {MAX_FIELD_CHARS} characters")
        if _CONTROL.search(text):
            raise SubmissionError(f"form: the field '{label}' contains control characters")
        out[key] = text
    out["submitter"] = out["submitter"] or "anonymous"
    return out


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
        self.mode, self.judge, self.n_resamples, self.max_bytes = mode, judge, n_resamples, max_bytes

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

    def check_ids(self, predictions: Sequence[Any]) -> None:
        """Every line with an id must name a test question; other splits' ids get their own message."""
        problems = []
        for p in predictions:
            if p.id is not None and p.id not in self.test_ids:
                shown = p.id if len(p.id) <= 80 else p.id[:77] + "..."
                split = self.other_split_ids.get(p.id)
                why = f"is a {split} question, not a test question" if split else "is not a test-split id"
                problems.append(f"{SOURCE_NAME} line {p.line}: field 'id' {shown!r} {why}")
        if problems:
            raise InputError(problems)

    def evaluate_text(self, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Validate and score a results text; returns ``(report, items)``.

        Raises:
            SubmissionError: any validation problem.
        """
        try:
            try:
                predictions = parse_results_text(text, SOURCE_NAME)
            except RecursionError:
                raise InputError(f"{SOURCE_NAME} line {_deep_line(text)}: JSON nested too deeply") from None
            self.check_ids(predictions)
            run = score_predictions(predictions, self.references, mode=self.mode, judge=self.judge)  # type: ignore[arg-type]
            if run.matching.unknown:
                first = run.matching.unknown[0]
                raise InputError(f"{len(run.matching.unknown)} line(s) match no test question, e.g. {first[:160]}")
        except InputError as exc:
            raise SubmissionError(str(exc)) from None
        report = build_report(run, self.references, mode=self.mode, n_resamples=self.n_resamples,  # type: ignore[arg-type]
                              include_items=True)  # fmt: skip
        items = report.pop("items")
        return report, items

    def submit(self, path: str | Path | None, form: Mapping[str, Any], *, origin: str = "user") -> Accepted:
        """Check the form and the file, score, store; returns the stored submission's id and rank."""
        clean = clean_form(form)
        text = self.read_upload(path)
        return self.submit_text(text, clean, origin=origin)

    def submit_text(self, text: str, form: Mapping[str, str], *, origin: str = "user") -> Accepted:
        """Score and store a results text whose form is already clean."""
        report, items = self.evaluate_text(text)
        created = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        sid = self.store.add(form, report, items, created=created, origin=origin, file_sha256=sha)
        accuracies = [s.report.get("accuracy") or 0.0 for s in self.store.submissions()]
        mine = report.get("accuracy") or 0.0
        rank = 1 + sum(1 for a in accuracies if a > mine)
        logger.info("accepted submission %s (%s): accuracy %.3f, rank %d", sid, form.get("system"), mine, rank)
        return Accepted(sid, rank, len(accuracies), report)


def format_accepted(acc: Accepted) -> str:
    """The submitter's summary: headline scores and rank (Markdown)."""
    r = acc.report

    def pct(key: str) -> str:
        value = r.get(key)
        return "n/a" if value is None else f"{100 * value:.1f}"

    ci = r.get("accuracy_ci")
    ci_text = f" (95% CI {100 * ci[0]:.1f}–{100 * ci[1]:.1f})" if ci else ""
    return (
        f"**Accepted** as submission #{acc.id} — rank **{acc.rank}** of {acc.total}.\n\n"
        f"Accuracy {pct('accuracy')}{ci_text} · Page F1 {pct('page_f1')} · Doc F1 {pct('doc_f1')} · "
        f"scoring mode `{r.get('mode')}` · coverage {r.get('n_predicted')}/{r.get('n')}"
    )

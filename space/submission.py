"""Validate an uploaded results file with the metric's own checks, score it against the private test labels, store it.

Every rejection is a :class:`SubmissionError` whose message names the problem (line, field) and is safe to show:
it is built from the user's own input and public ids only, never from gold answers. Nothing is stored unless the
whole file is valid (the store writes one transaction per submission).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from madqa.metric.inputs import parse_references
from madqa.metric.report import ReportOptions
from madqa.metric.schema import Reference

from .disclosure import input_warnings
from .identity import MAX_FIELD_CHARS, REQUIRED_FIELDS, RateLimiter, SubmissionError, clean_form
from .refusals import DuplicateFile, KeyReplay, RateLimited, RateRule
from .scoring import SOURCE_NAME, Evaluation, canonical_sha256, evaluate_results, file_cost, results_system_type
from .storage import SubmissionStore

__all__ = [
    "MAX_FIELD_CHARS",
    "REQUIRED_FIELDS",
    "Accepted",
    "RateLimiter",
    "Scorer",
    "SubmissionError",
    "Evaluation",
    "canonical_sha256",
    "clean_form",
    "evaluate_results",
    "format_accepted",
    "results_system_type",
]

logger = logging.getLogger(__name__)


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
        private_ids: the private part of the labels (:mod:`madqa.loading_script.label_parts`): everything a
            participant sees is computed from the other items; an accepted file's private part is scored in the
            background (:mod:`.private_part`) and published only through the Ladder (:mod:`.ladder`). Empty (the
            default): one part, every item shown.
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
        private_ids: frozenset[str] = frozenset(),
    ) -> None:
        self.references = list(references)
        self.test_ids = {r.id for r in self.references}
        self.private_ids = frozenset(private_ids) & frozenset(self.test_ids)
        #: The items every shown number is computed from (``None``: all of them, when there is no private part).
        self.public_ids: frozenset[str] | None = (
            frozenset(self.test_ids) - self.private_ids if self.private_ids else None
        )
        self.store = store
        self.other_split_ids = dict(other_split_ids or {})
        self.judge, self.max_bytes = judge, max_bytes
        self.options = ReportOptions(mode=mode, n_resamples=n_resamples)  # type: ignore[arg-type]
        #: Walled scoring processes (:class:`~.scoring_pool.ScoringPool`); ``None`` scores in the calling thread.
        self.pool: Any = None
        #: The private part's walled scoring process (``None``: scored in the background thread itself).
        self.private_pool: Any = None
        #: The price table of the board's cost column (:func:`price_table`: the shipped one, read at first use).
        self.prices: Any = None
        self._busy: Counter[str] = Counter()  # submissions being scored, per identity
        self._reserved: set[str] = set()  # idempotency keys and file hashes being scored
        self._lock = threading.Lock()
        self.private: Any = None
        if self.private_ids:
            from .private_part import PrivateScorer, PrivateScores

            self.private = PrivateScorer(PrivateScores(store.path), self.evaluate_private, mirror=lambda: store.mirror)

    @classmethod
    def from_labels(
        cls, labels_path: Path, store: SubmissionStore, *, private_share: float = 0.0, **kwargs: Any
    ) -> Scorer:
        """Build from the private labels JSONL (``Layout.test_labels``); ``private_share`` of its rows without an
        explicit ``part`` go to the private part (:func:`~madqa.loading_script.label_parts.private_ids`)."""
        from madqa.loading_script.io import read_jsonl
        from madqa.loading_script.label_parts import PartsError, private_ids
        from madqa.loading_script.load import load_gold

        rows = load_gold("test", labels_path=labels_path)
        raw = read_jsonl(labels_path)  # the explicit parts (load_gold keeps the question schema only)
        parts = {str(r.get("id")): r.get("part") for r in raw}
        try:
            hidden = private_ids([{**r, "part": parts.get(r["id"])} for r in rows], private_share=private_share)
        except PartsError as exc:
            raise ValueError(f"{labels_path}: {exc}") from None
        return cls(parse_references(rows, "test labels"), store, private_ids=hidden, **kwargs)

    def use_pools(self, workers: int, cpu_s: int = 0, n_resamples: int | None = None) -> None:
        """Score in walled processes: ``workers`` for the public part, one more for the private part."""
        from .scoring_pool import PoolLimits, ScoringPool

        n = self.options.n_resamples if n_resamples is None else n_resamples
        self.pool = ScoringPool(
            self.references,
            self.other_split_ids,
            n_resamples=n,
            scored_ids=self.public_ids,
            limits=PoolLimits(workers=workers, cpu_s=cpu_s),
        )
        if self.private_ids:
            self.private_pool = ScoringPool(
                self.references,
                self.other_split_ids,
                n_resamples=n,
                scored_ids=self.private_ids,
                limits=PoolLimits(workers=1, cpu_s=cpu_s, queue_timeout_s=3600.0),
            )

    def resume_private(self) -> int:
        """Queue the private parts a previous process left unscored (at start-up)."""
        return self.private.resume() if self.private is not None else 0

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
        return self._evaluate(text, self.pool, self.public_ids)

    def evaluate_private(self, text: str) -> Evaluation:
        """Score an (accepted) text's private part: maintainers' side only, never shown (see :mod:`.ladder`)."""
        return self._evaluate(text, self.private_pool, self.private_ids)

    def _evaluate(self, text: str, pool: Any, scored_ids: frozenset[str] | None) -> Evaluation:
        """Score the ``scored_ids`` of ``text``: in ``pool``'s scoring processes (anls mode), otherwise here."""
        if pool is not None and self.judge is None:
            return pool.evaluate(text)  # type: ignore[no-any-return]
        return evaluate_results(
            text,
            self.references,
            self.test_ids,
            self.other_split_ids,
            options=self.options,
            judge=self.judge,
            scored_ids=scored_ids,
        )

    def submit(
        self,
        path: str | Path | None,
        form: Mapping[str, Any],
        *,
        origin: str = "user",
        identity: str | None = None,
        key: str | None = None,
        limiter: RateLimiter | None = None,
    ) -> Accepted:
        """Check the form and the file, score, store; returns the stored submission's id and rank.

        Reserved names are refused unless ``origin`` is a maintainers' one; see :meth:`submit_text` for the rest.
        """
        clean = clean_form(form, maintainer=origin != "user")
        try:
            text = self.read_upload(path)
            return self.submit_text(text, clean, origin=origin, identity=identity, key=key, limiter=limiter)
        except SubmissionError as exc:  # the file's own name, not the placeholder the checks write
            raise SubmissionError(named_after_upload(str(exc), path)) from None

    def submit_text(
        self,
        text: str,
        form: Mapping[str, str],
        *,
        origin: str = "user",
        identity: str | None = None,
        key: str | None = None,
        limiter: RateLimiter | None = None,
    ) -> Accepted:
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
        content = canonical_sha256(text)  # the file's own JSON, no gold: a reordered copy is refused before scoring
        idem = None if not key else hashlib.sha256(f"{identity or ''}\0{key}".encode()).hexdigest()

        def rule() -> RateRule | None:
            return limiter.rule(identity) if limiter is not None and identity else None

        def private_row(con: Any, sid: int) -> None:  # written in the transaction that stores the submission
            self.private.scores.enqueue_in(con, sid, ladder_identity(identity, origin, sid, form), text)

        try:
            # every refusal happens here, before any gold is touched (also for files sent at once: _in_flight)
            self.store.precheck(file_sha256=sha, content_sha256=content, idem_key=idem, rate=rule())
            with self._in_flight(identity, rule(), [k for k in (idem, sha, content) if k]) as stored:
                done = self.evaluate_text(text)
                created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
                kind = results_system_type(text)
                cost = self.file_cost(text)  # from the file alone (its models and token counts), no gold
                report = {**done.report, "system_type": kind}  # also in the report: older readers and mirror files
                sid = stored(
                    lambda: self.store.add(
                        form,
                        report,
                        done.items,
                        created=created,
                        origin=origin,
                        file_sha256=sha,
                        content_sha256=content,
                        idem_key=idem,
                        rate=rule(),
                        system_type=kind,
                        cost=cost,
                        also=private_row if self.private is not None else None,
                    )
                )
        except KeyReplay as exc:
            if not exc.same_file:
                raise SubmissionError(
                    f"this submission key was already used for submission #{exc.sid} with another "
                    "file; reload the page to submit a new file"
                ) from None
            logger.info("retry of submission %s answered from the store", exc.sid)
            if self.private is not None:  # a store written before the queue row joined the transaction
                self.private.ensure(exc.sid, ladder_identity(identity, origin, exc.sid, form), text)
            return self.accepted(exc.sid, replayed=True)
        except DuplicateFile as exc:
            raise SubmissionError(
                f"this file was already submitted as #{exc.sid} (same content); nothing was stored"
            ) from None
        except RateLimited as exc:
            raise SubmissionError(RateLimiter.message(exc.rule.limit, exc.rule.window_s, exc.wait_s)) from None
        if self.private is not None:  # after the answer's numbers are fixed: nothing shown depends on it
            self.private.start(sid, ladder_identity(identity, origin, sid, form), text)
        accepted = self.accepted(sid)  # its warnings are the stored ones: a replay shows the same
        logger.info("accepted submission %s (%s): rank %d", sid, form.get("system"), accepted.rank)
        for warning in done.warnings:
            logger.warning("submission %s: %s", sid, warning)
        return accepted

    def file_cost(self, text: str) -> dict[str, Any] | None:
        """The board's cost cell of a results text (:func:`.scoring.file_cost`); ``None`` (shown as n/a) when the
        price table cannot be read, which is logged: a cost is never a reason to refuse a file."""
        from madqa.metric.cost import PriceError

        if self.prices is None:
            from madqa.agents.harness.prices import load_prices

            try:
                self.prices = load_prices()
            except PriceError as exc:
                logger.error("the board's cost column is n/a: %s", exc)
                return None
        return file_cost(text, self.prices)

    @contextmanager
    def _in_flight(
        self, identity: str | None, rule: RateRule | None, keys: Sequence[str] = ()
    ) -> Iterator[Callable[[Callable[[], int]], int]]:
        """Count a submission being scored against its author's quota, and reserve its idempotency key and file
        hashes, until it is stored or refused.

        Without this, files sent at once by a user with one submission left (or with one key, or the same file)
        would all pass the pre-check and be scored (their response times observed) although only one can be
        stored: free probes of the labels. Here the others are refused at once, before any scoring work.

        The block stores through the function it is given: the row is written and the submission stops counting
        as in flight under one hold of the lock, so that another submission's check never sees it twice (stored
        and in flight; a loaded run saw a quota of 3 accept only 2 of 8 sent at once).
        """
        limited = rule if identity is not None and rule is not None and rule.limit > 0 else None
        who = identity or ""
        with self._lock:
            if any(k in self._reserved for k in keys):
                raise SubmissionError(
                    "the same file or submission key is being scored right now; wait for its "
                    "result (nothing was stored)"
                )
            if limited is not None:
                busy = self._busy[who]
                if busy >= limited.limit:
                    raise SubmissionError(
                        f"rate limit: {busy} of your submissions are being scored, which is your "
                        "whole quota; wait for their results (nothing was stored)"
                    )
                try:  # stored in the window + in flight must stay under the limit
                    self.store.precheck(rate=replace(limited, limit=limited.limit - busy))
                except RateLimited as exc:
                    raise SubmissionError(RateLimiter.message(limited.limit, limited.window_s, exc.wait_s)) from None
                self._busy[who] += 1
            self._reserved.update(keys)
        released = False

        def release() -> None:  # with the lock held
            nonlocal released
            if released:
                return
            released = True
            self._reserved.difference_update(keys)
            if limited is not None:
                self._busy[who] -= 1
                if not self._busy[who]:
                    del self._busy[who]

        def stored(store: Callable[[], int]) -> int:
            with self._lock:
                sid = store()
                release()
                return sid

        try:
            yield stored
        finally:
            with self._lock:
                release()

    def accepted(self, sid: int, *, replayed: bool = False) -> Accepted:
        """The answer for stored submission ``sid``: its rank by accuracy among all submissions."""
        subs = self.store.submissions()
        report = next(s.report for s in subs if s.id == sid)
        mine = report.get("accuracy") or 0.0
        rank = 1 + sum(1 for s in subs if (s.report.get("accuracy") or 0.0) > mine)
        return Accepted(sid, rank, len(subs), report, replayed, input_warnings(report))


def upload_name(path: str | Path | None) -> str:
    """The uploaded file's own name as it may be shown (gradio keeps it as the stored copy's basename): at most
    80 characters, letters, digits and ``.-_ ()`` only, anything else ``_``; the placeholder when there is none."""
    name = Path(str(path or "")).name
    safe = "".join(ch if ch.isalnum() or ch in ".-_ ()" else "_" for ch in name)[:80].strip()
    return safe or SOURCE_NAME


def named_after_upload(message: str, path: str | Path | None) -> str:
    """A rejection message with the checks' placeholder file name (``results.jsonl``) replaced by the upload's."""
    name = upload_name(path)
    return message if name == SOURCE_NAME else message.replace(SOURCE_NAME, name)


def ladder_identity(identity: str | None, origin: str, sid: int, form: Mapping[str, str]) -> str:
    """Whose ladder a submission climbs (:mod:`.ladder`): the rate-limit identity (the Hub user on a Space); a
    maintainers' seed row is its own; without an identity (no rate limit), the submitter's name."""
    if origin == "seed":
        return f"seed:{sid}"
    if identity:
        return identity
    from .identity import name_keys

    return f"submitter:{name_keys(str(form.get('submitter', '')))[0]}"


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

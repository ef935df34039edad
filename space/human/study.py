"""A batch of questions for one annotator: its results file, crash-safe appends and resume.

:class:`StudyRun` owns one results file. Every submitted question is appended and fsynced at once
(:class:`madqa.agents.harness.record.ResultsWriter`), so a closed tab, a reload, a kill -9 of the server or a power cut
loses at most the question being worked on; on open, :func:`madqa.agents.harness.record.read_finished` reads the file
back
(repairing a torn last line) and the run resumes at the first question of the batch without a line. The file is
locked (``flock``) while a run holds it, so two servers, or two processes, never append to the same file.

:class:`~.registry.StudyRegistry` (in :mod:`.registry`) keeps one run per (annotator, batch, file) on a server.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from madqa.space.human.session import MEMORY_RUN_MAX_ACTIONS, Clock, QuestionSession, build_human_record, utc_now

if TYPE_CHECKING:  # the results file's module imports smolagents: only a run with a file needs it (Space start-up)
    from madqa.agents.harness.record import ResultsWriter

#: Annotator ids: letters, digits, ``.``, ``_``, ``-`` (they become part of file names).
ANNOTATOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class StudyError(ValueError):
    """A study that cannot start as asked (bad annotator id, file of someone else, file in use); says why."""


def check_annotator(annotator: str) -> str:
    """The annotator id, stripped, if it is a safe file-name part.

    Raises:
        StudyError: naming the rule.
    """
    value = (annotator or "").strip()
    if not ANNOTATOR_RE.match(value):
        raise StudyError(f"annotator id {annotator!r} is not valid: use 1-64 letters, digits, '.', '_' or '-'")
    return value


def default_output(
    folder: str | os.PathLike[str], split: str, batch: str, annotator: str, mode: str = "search"
) -> Path:
    """The default file of one annotator and batch: ``<folder>/human-<split>-<batch>[-oracle]-<annotator>.jsonl``."""
    suffix = "-oracle" if mode == "oracle" else ""
    return Path(folder) / f"human-{split}-{batch.lower()}{suffix}-{check_annotator(annotator)}.jsonl"


@dataclass(frozen=True)
class StudySettings:
    """What a run records besides the trajectory: where the questions come from and how they are shown."""

    split: str
    mode: str = "search"
    dataset: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)


class StudyRun:
    """One annotator working through one batch, logged to one results file (see the module docstring)."""

    def __init__(
        self,
        questions: Sequence[Mapping[str, Any]],
        path: str | os.PathLike[str] | None,
        *,
        annotator: str,
        batch: str,
        settings: StudySettings,
        clock: Clock = utc_now,
    ) -> None:
        """Open (and lock) the results file and find the first unanswered question.

        ``questions`` are the batch's rows in order; only ``id``, ``question`` and (oracle mode) ``evidence`` are
        kept, so nothing else of a row (labels of a practice split) can reach the interface through the run.

        Raises:
            StudyError: the file is locked by another process, or holds another annotator's lines.
            ResultsFileError: the file has a broken complete line or a repeated id.
        """
        self.annotator, self.batch, self.settings = check_annotator(annotator), batch, settings
        self.path = None if path is None else Path(path)
        #: Searches plus page views the whole run may log (``None``: no cap, a run with a file loses nothing).
        self.max_actions: int | None = MEMORY_RUN_MAX_ACTIONS if self.path is None else None
        self._clock = clock
        keep = ("id", "question", "evidence") if settings.mode == "oracle" else ("id", "question")
        self.questions = [{k: q[k] for k in keep if k in q} for q in questions]
        self._lock = threading.RLock()
        self._session: QuestionSession | None = None
        #: The lines of a run kept in memory only (``path=None``: the Space's practice tab stores nothing).
        self.lines: list[dict[str, Any]] = []
        self._writer: ResultsWriter | None = None
        if self.path is None:
            self.answered: dict[str, dict[str, Any]] = {}
            return
        from madqa.agents.harness.record import ResultsFileError, ResultsWriter

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = ResultsWriter(self.path)
        try:
            fcntl.flock(self._writer._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._writer.close()
            raise StudyError(f"{self.path} is in use by another `madqa human` process") from None
        try:
            self.answered = self._read_existing()
        except (StudyError, ResultsFileError):
            self._writer.close()
            raise

    def _read_existing(self) -> dict[str, dict[str, Any]]:
        from madqa.agents.harness.record import read_finished

        assert self.path is not None
        existing = read_finished(self.path)
        for rid, record in existing.items():
            owner = record.get("annotator")
            if owner is not None and owner != self.annotator:
                raise StudyError(
                    f"{self.path}: id {rid} was answered by annotator {owner!r}, not "
                    f"{self.annotator!r}; use your own file"
                )
        ids = {str(q["id"]) for q in self.questions}
        return {rid: rec for rid, rec in existing.items() if rid in ids}

    # -- progress -------------------------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """Questions in the batch."""
        return len(self.questions)

    @property
    def done(self) -> bool:
        """Whether every question of the batch has a line."""
        with self._lock:
            return all(str(q["id"]) in self.answered for q in self.questions)

    def position(self) -> int:
        """1-based number of the current question (``total + 1`` when done)."""
        with self._lock:
            for n, q in enumerate(self.questions, 1):
                if str(q["id"]) not in self.answered:
                    return n
            return self.total + 1

    def current_item(self) -> dict[str, Any] | None:
        """The first unanswered question (``id``, ``question``; ``evidence`` in oracle mode), ``None`` when done."""
        with self._lock:
            n = self.position()
            return None if n > self.total else self.questions[n - 1]

    def session(self) -> QuestionSession | None:
        """The trajectory of the current question, started the first time it is asked for."""
        with self._lock:
            item = self.current_item()
            if item is None:
                return None
            if self._session is None or self._session.id != str(item["id"]):
                self._session = QuestionSession(item, clock=self._clock, max_actions=self._actions_left())
            return self._session

    def _actions_left(self) -> int | None:
        """What the next question may still log of the run's :attr:`max_actions`."""
        if self.max_actions is None:
            return None
        used = sum(
            len(r["search_history"]) + len(r.get("refused_searches", ())) + len(r["page_views"]) for r in self.lines
        )
        return max(self.max_actions - used, 0)

    # -- answering ------------------------------------------------------------------------------------------

    def submit(self, question_id: str, answer: Sequence[str], *, gave_up: bool = False) -> dict[str, Any] | None:
        """Append the current question's line (fsynced before returning) and move to the next question.

        ``question_id`` must be the current question: a second click, or a stale tab answering a question that
        was already answered, returns ``None`` and writes nothing, so no id is ever written twice.
        """
        with self._lock:
            session = self.session()
            if session is None or session.id != str(question_id):
                return None
            record = build_human_record(
                session,
                [] if gave_up else list(answer),
                annotator=self.annotator,
                batch=self.batch,
                split=self.settings.split,
                mode=self.settings.mode,
                gave_up=gave_up,
                dataset=self.settings.dataset,
                config=self.settings.config,
            )
            if self._writer is not None:
                self._writer.write(record)
            else:
                self.lines.append(record)
            self.answered[session.id] = record
            self._session = None
            return record

    def close(self) -> None:
        """Release the file (and its lock)."""
        with self._lock:
            if self._writer is not None:
                self._writer.close()

    def jsonl(self) -> str:
        """The run's lines as JSONL text (for a download; in the file's order)."""
        with self._lock:
            lines = (
                self.lines
                if self._writer is None
                else [self.answered[str(q["id"])] for q in self.questions if str(q["id"]) in self.answered]
            )
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines)

"""A batch of questions for one annotator: its results file, crash-safe appends, resume, and the server's registry.

:class:`StudyRun` owns one results file. Every submitted question is appended and fsynced at once
(:class:`madqa.agents.record.ResultsWriter`), so a closed tab, a reload, a kill -9 of the server or a power cut
loses at most the question being worked on; on open, :func:`madqa.agents.record.read_finished` reads the file back
(repairing a torn last line) and the run resumes at the first question of the batch without a line. The file is
locked (``flock``) while a run holds it, so two servers, or two processes, never append to the same file.

:class:`StudyRegistry` keeps one run per (annotator, batch, file) on a server: a reload or a second tab of the same
annotator re-attaches to the same run, including the question in progress with its searches; different annotators
get different files (:func:`default_output`) and never share a run. Runs kept in memory only (the Space's practice
tab) are named by a secret only the visitor's browser holds (:func:`new_visitor_key`), and no client can evict
another's run by starting many (see :class:`StudyRegistry`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from madqa.agents.record import ResultsFileError, ResultsWriter, read_finished

from .session import MEMORY_RUN_MAX_ACTIONS, Clock, QuestionSession, build_human_record, utc_now

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
        assert self.path is not None
        existing = read_finished(self.path)
        for rid, record in existing.items():
            owner = record.get("annotator")
            if owner is not None and owner != self.annotator:
                raise StudyError(f"{self.path}: id {rid} was answered by annotator {owner!r}, not "
                                 f"{self.annotator!r}; use your own file")  # fmt: skip
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
        used = sum(len(r["search_history"]) + len(r["page_views"]) for r in self.lines)
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
                session, [] if gave_up else list(answer), annotator=self.annotator, batch=self.batch,
                split=self.settings.split, mode=self.settings.mode, gave_up=gave_up,
                dataset=self.settings.dataset, config=self.settings.config,
            )  # fmt: skip
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
            lines = self.lines if self._writer is None else [self.answered[str(q["id"])] for q in self.questions
                                                              if str(q["id"]) in self.answered]  # fmt: skip
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines)


#: New in-memory runs one client (address, or Hub user) may start per window: the Space's practice tab, where
#: anyone can press Start. A reload that re-attaches to a run, or a visitor coming back, is not a new run.
NEW_RUNS_PER_CLIENT, NEW_RUNS_WINDOW_S = 20, 3600.0
#: When the registry is full, a run of a client holding no more runs than the newcomer is dropped only if it was
#: last used this many seconds ago; otherwise the newcomer is refused.
FRESH_RUN_S = 900.0
#: Clients whose recent Starts are remembered (about 1 KB each at the limit); past it the longest-known are
#: forgotten, so addresses rotated by the million cost bounded memory (each is a client with its own limit anyway).
MAX_TRACKED_CLIENTS = 10_000


class RunLimitError(StudyError):
    """A new in-memory run refused: the client's limit of new runs, or a registry full of other visitors' runs."""


def new_visitor_key() -> str:
    """A fresh secret naming one visitor's in-memory runs (192 random bits; only that visitor's browser holds it)."""
    return secrets.token_urlsafe(24)


def visitor_name(key: str) -> str:
    """The annotator id shown for a visitor key: a one-way digest, so the id shown never gives the key away."""
    return "visitor-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


class StudyRegistry:
    """The runs of one server, by results file: one :class:`StudyRun` per file, shared by every tab that opens it.

    Runs kept in memory only (``path=None``) are keyed by a visitor key (the Space's practice tab: a secret of
    :func:`new_visitor_key`, held by the visitor's browser; else the annotator) and batch. At most
    ``max_memory_runs`` are kept, and the limits hold against any one client (a ``client`` string: the Space
    passes the address or Hub user):

    * a client starts at most ``new_runs_per_client`` new runs per ``window_s`` seconds (0: no limit); beyond it
      :class:`RunLimitError`;
    * when the registry is full, a client holding at least as many runs as any other client loses its own run used
      longest ago; otherwise the run used longest ago of the client(s) holding the most runs is dropped, and when
      every other client holds one run, that run is dropped only if it is idle for ``fresh_s``, else
      :class:`RunLimitError` ("full"). So one client, however many Starts it sends, only ever drops its own runs.
    """

    def __init__(
        self, max_memory_runs: int = 500, *, new_runs_per_client: int = NEW_RUNS_PER_CLIENT,
        window_s: float = NEW_RUNS_WINDOW_S, fresh_s: float = FRESH_RUN_S, clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        """An empty registry."""
        self._runs: OrderedDict[Path | tuple[str, str], StudyRun] = OrderedDict()
        self._lock = threading.Lock()
        self.max_memory_runs = max_memory_runs
        self.new_runs_per_client, self.window_s, self.fresh_s = new_runs_per_client, window_s, fresh_s
        self._clock = clock
        self._owner: dict[tuple[str, str], str] = {}
        self._used: dict[tuple[str, str], float] = {}
        self._starts: dict[str, deque[float]] = {}

    def open(
        self, path: str | os.PathLike[str] | None, annotator: str, batch: str, factory: Callable[[], StudyRun], *,
        key: str | None = None, client: str | None = None,
    ) -> StudyRun:  # fmt: skip
        """The run on ``path`` (``None``: in memory, named by ``key``, default the annotator), created with
        ``factory()`` the first time; a new in-memory run counts against ``client``'s limits (``None``: a trusted
        caller, no per-client limit).

        Raises:
            StudyError: the file is already open for another annotator or batch on this server.
            RunLimitError: a new in-memory run refused (see the class docstring); nothing was created.
        """
        name: Path | tuple[str, str] = (key or annotator, batch) if path is None else Path(path).resolve()
        with self._lock:
            run = self._runs.get(name)
            if run is not None:
                if (run.annotator, run.batch) != (annotator, batch):
                    raise StudyError(f"{path} is open for annotator {run.annotator!r}, batch {run.batch}: not yours")
                self._touch(name)  # a visitor who comes back is the last to be dropped
                return run
            if isinstance(name, Path):
                self._runs[name] = run = factory()
                return run
            now = self._clock()
            self._admit(client, now)
            self._make_room(client or "", now)
            self._runs[name] = run = factory()
            self._owner[name], self._used[name] = client or "", now
            if client is not None:
                self._starts.setdefault(client, deque()).append(now)
            return run

    def find(self, key: str, batch: str) -> StudyRun | None:
        """The in-memory run of ``key`` on ``batch`` if the registry still holds it (never creates one)."""
        with self._lock:
            run = self._runs.get((key, batch))
            if run is not None:
                self._touch((key, batch))
            return run

    def holds(self, key: str) -> bool:
        """Whether any in-memory run is named by ``key`` (a key the registry did not hand out names none)."""
        with self._lock:
            return any(isinstance(k, tuple) and k[0] == key for k in self._runs)

    def memory_runs(self) -> int:
        """How many in-memory runs are held."""
        with self._lock:
            return sum(isinstance(k, tuple) for k in self._runs)

    def _touch(self, name: Path | tuple[str, str]) -> None:
        self._runs.move_to_end(name)
        if isinstance(name, tuple):
            self._used[name] = self._clock()

    def _admit(self, client: str | None, now: float) -> None:
        """Refuse a client's new run beyond its limit in the window (and forget clients idle for a window)."""
        if client is None or self.new_runs_per_client <= 0:
            return
        if len(self._starts) > 256:
            for other in [c for c, times in self._starts.items() if not times or times[-1] <= now - self.window_s]:
                del self._starts[other]
            for other in list(self._starts)[: max(0, len(self._starts) - MAX_TRACKED_CLIENTS)]:
                del self._starts[other]
        times = self._starts.get(client, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if len(times) >= self.new_runs_per_client:
            wait = max(1, int(times[0] + self.window_s - now + 0.999))
            limit, window = self.new_runs_per_client, int(self.window_s)
            raise RunLimitError(f"too many new practice runs from your address: at most {limit} per {window} s. "
                                f"Continue a run you started, or try again in {wait} s")  # fmt: skip

    def _make_room(self, client: str, now: float) -> None:
        """Drop one in-memory run when the registry is full, never another client's for a client's flood."""
        memory = [k for k in self._runs if isinstance(k, tuple)]  # used longest ago first
        if len(memory) < self.max_memory_runs or not memory:
            return
        counts = Counter(self._owner[k] for k in memory)
        mine = counts.get(client, 0)
        most = max((n for c, n in counts.items() if c != client), default=0)
        if mine and mine >= most:
            victim = next(k for k in memory if self._owner[k] == client)
        elif most > 1:
            victim = next(k for k in memory if self._owner[k] != client and counts[self._owner[k]] == most)
        else:
            victim = memory[0]
            if now - self._used[victim] < self.fresh_s:
                raise RunLimitError(f"the practice tab is full ({len(memory)} visitors' runs are kept in memory and "
                                    "in use). Try again in a few minutes")  # fmt: skip
        self._runs.pop(victim)
        self._owner.pop(victim)
        self._used.pop(victim)

    def close(self) -> None:
        """Close every run (server shutdown)."""
        with self._lock:
            for run in self._runs.values():
                run.close()
            self._runs.clear()
            self._owner.clear()
            self._used.clear()

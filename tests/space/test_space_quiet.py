"""The submit answer's timing is no channel (issue 39): answers leave on a time grid, and the private part is scored
only while no answer is at work (stopped mid-file when one starts, at the lowest CPU priority).

Nothing here depends on the machine's speed: the grid runs on an injected clock, and the private scorer's waiting is
observed with events and the worker process's own state (``/proc``), each waited for with a generous bound that
returns as soon as it holds.
"""

from __future__ import annotations

import inspect
import json
import os
import threading
import typing
from pathlib import Path
from typing import Any

import pytest
from helpers.submission_form import submission_form

gr = pytest.importorskip("gradio")

from madqa.bench.space import synthetic_references  # noqa: E402
from madqa.space.quiet import (  # noqa: E402
    AnswerGrid,
    grid_cells,
    quiet_answers,
    release_at,
    timing_bits_bound,
)

FORM = submission_form()


class FakeClock:
    """A clock that moves only when slept on, or when a handler 'works' (``advance``)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _until(condition: Any, bound_s: float = 60.0) -> bool:
    done = threading.Event()
    for _ in range(int(bound_s / 0.02)):
        if condition():
            return True
        done.wait(0.02)
    return bool(condition())


def test_answers_leave_on_the_doubling_grid_whatever_their_work_took() -> None:
    clock = FakeClock()
    grid = AnswerGrid(4.0, clock=clock, sleep=clock.sleep)
    for work, leaves in ((0.0, 4.0), (0.7, 4.0), (2.5, 4.0), (4.0, 4.0), (4.2, 8.0), (9.0, 16.0), (100.0, 128.0)):
        start = clock()
        clock.now += work  # the handler's work
        assert grid.hold(start) - start == leaves
        assert clock() - start == leaves, work  # the answer really waited until its grid point
    assert grid_cells(4.0) == 8 and timing_bits_bound(4.0) == 3.0  # 4 s … 512 s cover the longest answer
    assert release_at(3.0, 0) == 3.0 and timing_bits_bound(0) == float("inf")  # no grid: nothing is bounded


def _handler(clock: FakeClock, work: float, seen: list[bool], activity: list[Any], scorer: Any) -> Any:
    def submit(path: str | None, key: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        seen.append(activity[0].busy)  # the private part is held off while the answer is at work
        if path == "refused":  # refused before any gold work (the checks of space/scoring.py come first)
            return "refused"
        scorer.evaluate_text(path)
        clock.now += work
        if path == "bad":
            raise RuntimeError("boom")
        return f"answer {path}"

    return submit


def test_the_wrapped_handler_keeps_gradios_injection_and_answers_on_the_grid_also_when_it_fails() -> None:
    class NoPrivate:
        private = None

        def evaluate_text(self, text: str) -> str:
            return text

    clock, seen, box, scorer = FakeClock(), [], [], NoPrivate()
    handler = _handler(clock, 1.3, seen, box, scorer)
    wrapped = quiet_answers(handler, scorer, grid=AnswerGrid(4.0, clock=clock, sleep=clock.sleep))
    box.append(wrapped.activity)
    # gradio reads the signature and the type hints to inject gr.Request and the OAuth profile
    assert inspect.signature(wrapped) == inspect.signature(handler)
    assert typing.get_type_hints(wrapped)["request"] is gr.Request
    start = clock()
    assert wrapped("f.jsonl", None, None) == "answer f.jsonl" and clock() - start == 4.0
    start = clock()
    with pytest.raises(RuntimeError):
        wrapped("bad", None, None)
    assert clock() - start == 4.0  # an internal error after the scoring began leaves on the grid too
    start = clock()
    assert wrapped("refused", None, None) == "refused" and clock() == start  # no gold touched: at once
    assert seen == [True, True, True] and not wrapped.activity.busy


def _scorer(tmp_path: Path) -> tuple[Any, list[Any]]:
    from madqa.loading_script.label_parts import private_ids
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    refs = synthetic_references(40)
    hidden = private_ids([{"id": r.id, "hop_type": r.hop_type, "domain": ""} for r in refs], seed=1)
    return Scorer(refs, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=20, private_ids=hidden), refs


def _text(refs: list[Any], tag: str = "") -> str:
    return "".join(
        json.dumps({"id": r.id, "answer": [f"x{tag}"], "steps": 1 + i % 5}) + "\n" for i, r in enumerate(refs)
    )


def test_the_private_part_waits_while_an_answer_is_at_work(tmp_path: Path) -> None:
    scorer, refs = _scorer(tmp_path)
    wrapped = quiet_answers(lambda: None, scorer, 0.0)  # wires the scorer's private part to the handlers' activity
    activity = wrapped.activity
    assert scorer.private.activity is activity
    started, evaluate = threading.Event(), scorer.private._evaluate
    scorer.private._evaluate = lambda text: (started.set(), evaluate(text))[1]
    holder = activity.active()
    holder.__enter__()  # a second answer is at work while the first file's private part is due
    try:
        acc = scorer.submit_text(_text(refs), FORM)
        assert not started.wait(1.0)  # queued, not started: it waits for the answer to leave
        assert scorer.private.scores.results() == []
    finally:
        holder.__exit__(None, None, None)
    assert started.wait(60) and scorer.private.drain(60)  # started as soon as no answer is at work
    assert [r.submission_id for r in scorer.private.scores.results()] == [acc.id]


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_private_scoring_process_is_stopped_while_an_answer_is_at_work_and_runs_at_lowest_priority(
    tmp_path: Path,
) -> None:
    scorer, refs = _scorer(tmp_path)
    scorer.use_pools(workers=1)
    try:
        wrapped = quiet_answers(lambda: None, scorer, 0.0)
        pool = scorer.private_pool
        (worker,) = pool._workers
        assert os.getpriority(os.PRIO_PROCESS, worker.proc.pid) == 19  # the private part's process: nice 19
        public = next(iter(scorer.pool._workers)).proc.pid
        assert os.getpriority(os.PRIO_PROCESS, public) == os.getpriority(os.PRIO_PROCESS, 0)  # the answers': as is
        expected = scorer.evaluate_private(_text(refs)).report
        out: list[Any] = []
        with wrapped.activity.active():  # an answer at work: the private file is sent, and its process stopped
            job = threading.Thread(target=lambda: out.append(scorer.evaluate_private(_text(refs))))
            job.start()
            assert _until(lambda: bool(pool._running))
            assert _until(lambda: _state(worker.proc.pid) == "T"), _state(worker.proc.pid)
            assert not out
        job.join(120)  # continued once no answer is at work
        assert out and out[0].report == expected and _state(worker.proc.pid) != "T"
    finally:
        scorer.pool.close()
        scorer.private_pool.close()


EXIT_CHILD = """
import sys, threading
from pathlib import Path
from madqa.bench.space import synthetic_references
from madqa.loading_script.label_parts import private_ids
from madqa.space.quiet import quiet_answers
from madqa.space.storage import SubmissionStore
from madqa.space.submission import Scorer

refs = synthetic_references(40)
hidden = private_ids([{"id": r.id, "hop_type": r.hop_type, "domain": ""} for r in refs], seed=1)
scorer = Scorer(refs, SubmissionStore(sys.argv[1]), n_resamples=20, private_ids=hidden)
scorer.use_pools(workers=1)
wrapped = quiet_answers(lambda: None, scorer, 0.0)
pool = scorer.private_pool
(worker,) = pool._workers
holder = wrapped.activity.active()  # an answer at work, never left: the private process stays stopped
holder.__enter__()
text = "".join('{"id": "%s", "answer": ["x"], "steps": 1}\\n' % r.id for r in refs)
threading.Thread(target=scorer.evaluate_private, args=(text,), daemon=True).start()
stat = Path(f"/proc/{worker.proc.pid}/stat")
while not (pool._running and stat.read_text().rsplit(")", 1)[1].split()[0] == "T"):
    threading.Event().wait(0.02)
print("stopped", flush=True)
sys.exit(0)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_space_exits_while_the_private_process_is_stopped(tmp_path: Path) -> None:
    import subprocess
    import sys

    # multiprocessing ends daemon processes at exit with SIGTERM and waits for them: a stopped one would never end
    done = subprocess.run(
        [sys.executable, "-c", EXIT_CHILD, str(tmp_path / "db.sqlite")], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0 and done.stdout.strip() == "stopped", done.stderr[-2000:]

"""What every benchmark measures the same way: wall and CPU time, peak memory, quantiles, and printing the figures.

Peak memory of a process is read from ``/proc/<pid>/status`` (``VmHWM``) where it can be, not from ``ru_maxrss``:
on Linux a child's ``ru_maxrss`` also counts its parent's memory at the fork before its ``exec`` (measured: ``true``
run from a 500 MB Python process reports 511 MB); ``VmHWM`` starts afresh at exec.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
_PROC = Path("/proc")


def best_of_alternating(
    repeats: int, first: Callable[[], T], second: Callable[[], Any], clock: Callable[[], float] = time.perf_counter
) -> tuple[float, float, T]:
    """Fastest wall time of each of two functions, timed in turn (first, second, first, …), and ``first``'s result.

    Timing all repeats of one side, then all of the other, lets a change in the machine's load fall on one side
    only (seen: a ratio swinging from 0.51 to 0.94); alternating exposes both to the same load. ``clock``: the
    timer (seconds; tests inject one).
    """
    best_a = best_b = float("inf")
    result = None
    for _ in range(max(1, repeats)):
        start = clock()
        result = first()
        best_a = min(best_a, clock() - start)
        start = clock()
        second()
        best_b = min(best_b, clock() - start)
    return best_a, best_b, result  # type: ignore[return-value]


def load_average() -> tuple[float, float, float] | None:
    """The machine's 1, 5 and 15 minute load averages (``None`` where the system has none)."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


@dataclass(frozen=True)
class Spread:
    """Minimum, median and maximum of a figure over the repeats of an alternation (``n`` values)."""

    n: int
    min: float
    median: float
    max: float

    @staticmethod
    def of(values: Sequence[float]) -> Spread:
        """The spread of ``values`` (``nan`` everywhere for none)."""
        if not values:
            return Spread(0, float("nan"), float("nan"), float("nan"))
        return Spread(len(values), min(values), statistics.median(values), max(values))

    def text(self, unit: str = "", scale: float = 1.0, digits: int = 2) -> str:
        """``median (min-max)``, each value times ``scale``, with ``unit`` after each."""
        f = f"{{:.{digits}f}}{unit}"
        return f"{f.format(self.median * scale)} ({f.format(self.min * scale)}-{f.format(self.max * scale)})"


@dataclass
class Alternation:
    """What :func:`alternate` measured: seconds per side, repeat and item, the order run, and the load around it.

    Attributes:
        sides: the side names in the order each item runs them.
        seconds: ``seconds[side][repeat][item]``.
        order: ``(side, repeat, item)`` of every timed call, in the order they ran.
        load_before, load_after: :func:`load_average` before the first and after the last call.
    """

    sides: list[str]
    seconds: dict[str, list[list[float]]]
    order: list[tuple[str, int, int]] = field(default_factory=list)
    load_before: tuple[float, float, float] | None = None
    load_after: tuple[float, float, float] | None = None

    def totals(self, side: str) -> Spread:
        """Spread over the repeats of one side's total seconds for all items."""
        return Spread.of([sum(rep) for rep in self.seconds[side]])

    def quantile(self, side: str, q: float) -> Spread:
        """Spread over the repeats of one side's ``q`` quantile across the items (0.5: the median item)."""
        return Spread.of([percentile(rep, q) for rep in self.seconds[side]])

    def ratio(self, slower: str, faster: str, q: float | None = None) -> Spread:
        """Spread over the repeats of ``slower``'s figure divided by ``faster``'s in the same repeat: the totals, or
        the ``q`` quantile across the items. Each repeat's two sides ran under the same load."""
        out = []
        for a, b in zip(self.seconds[slower], self.seconds[faster], strict=True):
            num, den = (sum(a), sum(b)) if q is None else (percentile(a, q), percentile(b, q))
            out.append(num / den if den > 0 else float("inf"))
        return Spread.of(out)

    def best_per_item(self, side: str) -> list[float]:
        """One side's fastest seconds of each item over the repeats (other load only ever slows a call)."""
        return [min(times) for times in zip(*self.seconds[side], strict=True)]

    def load_text(self) -> str:
        """The load averages around the measurement, for the report (``n/a`` where unknown)."""

        def one(load: tuple[float, float, float] | None) -> str:
            return "n/a" if load is None else "/".join(f"{x:.2f}" for x in load)

        return f"load average (1/5/15 min) {one(self.load_before)} before, {one(self.load_after)} after"

    def summary(self) -> dict[str, Any]:
        """The figures as JSON-ready values: per side the totals and the item quantiles, and the load."""
        per_side: dict[str, Any] = {}
        for side in self.sides:
            per_side[side] = {
                "total_s": vars(self.totals(side)),
                "p50_s": vars(self.quantile(side, 0.5)),
                "p95_s": vars(self.quantile(side, 0.95)),
            }
        return {
            "repeats": len(next(iter(self.seconds.values()), [])),
            "first_calls": [side for side, _, _ in self.order[: 2 * len(self.sides)]],
            "sides": per_side,
            "load_before": self.load_before,
            "load_after": self.load_after,
        }


def alternate(
    sides: Mapping[str, Callable[[Any], Any]],
    items: Sequence[Any] = (None,),
    repeats: int = 3,
    *,
    clock: Callable[[], float] = time.perf_counter,
    load: Callable[[], tuple[float, float, float] | None] = load_average,
) -> Alternation:
    """Time every side on every item in turn, ``repeats`` times: for each repeat, for each item, each side once
    (A B A B ...), so a change in the machine's load falls on all sides alike (timing one side's repeats, then the
    other's, once printed 4.9x for what was 2.7x side by side). Each call is timed on its own with ``clock``
    (tests inject one); a side is called with the item. Returns the seconds of every call and the load around them.
    """
    names = list(sides)
    n = max(1, repeats)
    seconds = {name: [[0.0] * len(items) for _ in range(n)] for name in names}
    result = Alternation(names, seconds, load_before=load())
    for rep in range(n):
        for i, item in enumerate(items):
            for name in names:
                start = clock()
                sides[name](item)
                seconds[name][rep][i] = clock() - start
                result.order.append((name, rep, i))
    result.load_after = load()
    return result


def best_of(repeats: int, fn: Callable[[], T]) -> tuple[float, T]:
    """Fastest wall time of ``repeats`` calls (the machine's other load only ever slows a run) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result  # type: ignore[return-value]


def _median_of(fn: Callable[[], Any], repeat: int, clock: Callable[[], float]) -> float:
    times = []
    for _ in range(max(1, repeat)):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def median_wall(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall seconds of ``repeat`` calls (at least one)."""
    return _median_of(fn, repeat, time.perf_counter)


def median_cpu(fn: Callable[[], Any], repeat: int) -> float:
    """Median CPU seconds of this process over ``repeat`` calls (at least one): immune to other processes' load."""
    return _median_of(fn, repeat, time.process_time)


def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    """User + system CPU seconds of this process (or of its waited-for children with ``RUSAGE_CHILDREN``)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile by nearest rank (``nan`` for no values).

    >>> percentile([3.0, 1.0, 2.0, 4.0, 5.0], 0.95)
    5.0
    """
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


def proc_status_kib(pid: int | str, field: str) -> int | None:
    """A ``kB`` field (``VmHWM``, ``VmRSS``) of ``/proc/<pid>/status`` (``None`` when unreadable)."""
    try:
        with open(_PROC / str(pid) / "status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def vm_hwm_mib(pid: int | str = "self") -> float | None:
    """Peak resident memory of a process since its ``exec`` (``VmHWM``), ``None`` when unreadable."""
    kib = proc_status_kib(pid, "VmHWM")
    return None if kib is None else kib / 1024


def max_rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    """``ru_maxrss`` in MiB (KiB on Linux, bytes on macOS): where ``/proc`` is missing, or for a whole pool."""
    scale = 1 if os.uname().sysname == "Darwin" else 1024
    return resource.getrusage(who).ru_maxrss * scale / 2**20


def peak_rss_mib() -> float:
    """Peak resident memory of this process: ``VmHWM``, else ``ru_maxrss``."""
    found = vm_hwm_mib()
    return found if found is not None else max_rss_mib()


def current_rss_mib() -> float:
    """Resident memory of this process now (``nan`` without ``/proc``)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def child_peak_rss_mib(proc: subprocess.Popen, interval_s: float = 0.01) -> float:
    """Wait for ``proc``, sampling its ``VmHWM`` every ``interval_s`` (it only grows): its peak in MiB."""
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, vm_hwm_mib(proc.pid) or 0.0)
        time.sleep(interval_s)
    return peak


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for stat in _PROC.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def stop(process: subprocess.Popen, timeout_s: float = 15.0) -> None:
    """End a child process: SIGTERM, then SIGKILL when it has not exited within ``timeout_s``."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for a server the benchmark launches."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def emit(figures: dict[str, Any], lines: list[str], as_json: bool, indent: int | None = 1) -> int:
    """Print a benchmark's figures: one JSON object on stdout with ``--json``, else the readable lines."""
    if as_json:
        json.dump(figures, sys.stdout, indent=indent)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0

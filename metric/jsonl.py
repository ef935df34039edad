r"""JSONL reading and bounded input errors: the part of input validation that knows nothing of MADQA's fields.

Lines are split on ``\n`` only (``\r\n`` accepted), never with ``str.splitlines``, which also splits on
U+2028, U+2029, U+0085, ``\x0b``, ``\x0c`` and ``\x1c``-``\x1e``: the first three may appear raw inside a JSON
string, so splitting there would break a valid line and shift every later line number. A line longer than
``schema.MAX_LINE_CHARS`` is refused before it is parsed.

An :class:`InputError` keeps at most :data:`MAX_REPORTED_PROBLEMS` problems of at most :data:`MAX_PROBLEM_CHARS`
characters each and counts the rest, and values quoted from the input go through :func:`show`: whatever was
uploaded, the message stays a few kilobytes (a 10^5-line bad file once produced a 1.2 MB message).
"""

from __future__ import annotations

import json
from typing import Any

from .schema import MAX_LINE_CHARS

#: At most this many problems are kept and spelled out in an :class:`InputError` (the rest are counted).
MAX_REPORTED_PROBLEMS = 20
#: Each kept problem is cut to this many characters (it starts with its file, line and field, so those stay).
MAX_PROBLEM_CHARS = 300
#: User values quoted in a message are cut to this many characters of their ``repr``.
MAX_SHOWN_VALUE_CHARS = 60


def show(value: Any) -> str:
    """``repr(value)`` cut to :data:`MAX_SHOWN_VALUE_CHARS` (a message must stay small whatever was uploaded).

    >>> show("abc"), show("x" * 10**6)[-30:], show(list(range(1000)))
    ("'abc'", 'xxxxxxxx… (1000002 characters)', 'a list of 1000 items')
    """
    if isinstance(value, (list, dict)) and len(value) > MAX_SHOWN_VALUE_CHARS:
        return f"a {type(value).__name__} of {len(value)} items"  # repr of a huge container costs too much
    text = repr(value)
    if len(text) <= MAX_SHOWN_VALUE_CHARS:
        return text
    return f"{text[: MAX_SHOWN_VALUE_CHARS - 2]}… ({len(text)} characters)"


def _clip(problem: str) -> str:
    return problem if len(problem) <= MAX_PROBLEM_CHARS else problem[: MAX_PROBLEM_CHARS - 1] + "…"


class InputError(ValueError):
    """Invalid user input; ``str()`` is one bounded summary line.

    Attributes:
        problems: the first :data:`MAX_REPORTED_PROBLEMS` ``where: what`` messages, each at most
            :data:`MAX_PROBLEM_CHARS` characters (a 10^5-line bad file must not make a megabyte message).
        count: how many problems were found in all (``>= len(problems)``).
    """

    def __init__(self, problems: list[str] | str, *, count: int | None = None):
        given = [problems] if isinstance(problems, str) else list(problems)
        self.problems = [_clip(p) for p in given[:MAX_REPORTED_PROBLEMS]]
        self.count = max(len(given) if count is None else count, len(self.problems))
        more = self.count - len(self.problems)
        super().__init__("; ".join(self.problems) + (f"; … and {more} more problem(s)" if more > 0 else ""))


class Problems:
    """Collects problems, keeping the first :data:`MAX_REPORTED_PROBLEMS` and counting the rest."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.count = 0

    def add(self, exc: InputError) -> None:
        """Record the problems of ``exc``."""
        self.kept.extend(exc.problems[: MAX_REPORTED_PROBLEMS - len(self.kept)])
        self.count += exc.count

    def __bool__(self) -> bool:
        return self.count > 0

    def error(self) -> InputError:
        """One :class:`InputError` with every recorded problem."""
        return InputError(self.kept, count=self.count)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (use null or a number)")


def load_json_line(text: str, where: str) -> Any:
    """Parse one JSON value, rejecting ``NaN``/``Infinity``.

    Raises:
        InputError: naming ``where``.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise InputError(f"{where}: invalid JSON ({exc})") from None


def split_lines(text: str) -> list[str]:
    r"""JSONL lines: split on ``\n`` only (a ``\r\n`` ending loses its ``\r``).

    ``str.splitlines`` would also split on U+2028, U+2029, U+0085, ``\x0b``, ``\x0c`` and ``\x1c``-``\x1e``,
    which may appear raw inside a JSON string, and would then break a valid line and shift line numbers.

    >>> split_lines('{"a": "x\u2028y"}\r\n{}')
    ['{"a": "x\u2028y"}', '{}']
    """
    return [raw[:-1] if raw.endswith("\r") else raw for raw in text.split("\n")]


def read_jsonl_text(text: str, source: str) -> list[tuple[int, Any]]:
    """Split JSONL text into ``(line number, value)`` pairs, skipping blank lines.

    Raises:
        InputError: for invalid lines (all of them counted) or when there is no line at all.
    """
    rows, problems = json_lines(text, source)
    if problems:
        raise problems.error()
    return rows


def json_lines(text: str, source: str) -> tuple[list[tuple[int, Any]], Problems]:
    """``(line number, value)`` for every valid non-blank line, and one problem per invalid line (or empty file).

    A line over :data:`~.schema.MAX_LINE_CHARS` is refused before it is parsed.
    """
    rows: list[tuple[int, Any]] = []
    problems = Problems()
    for number, raw in enumerate(split_lines(text), start=1):
        if not raw.strip():
            continue
        where = f"{source} line {number}"
        try:
            if len(raw) > MAX_LINE_CHARS:
                raise InputError(f"{where}: the line has {len(raw)} characters; the limit is {MAX_LINE_CHARS}")
            rows.append((number, load_json_line(raw, where)))
        except InputError as exc:
            problems.add(exc)
    if not rows and not problems:
        problems.add(InputError(f"{source}: the file is empty (no JSON lines)"))
    return rows, problems

"""Warnings about results lines that are scored anyway: what was read leniently, counted once per file.

Three things in a results file are not errors but may change a score without the author noticing, so each is
counted and warned about once per file (never once per line: a 10^5-line file must not give 10^5 messages):

* a line without an ``answer`` key (the public harness writes none for a failed question): scored as no answer;
* a citation to a page above :data:`~.schema.MAX_PAGE` (models cite pages such as 1506387294): kept, and scored
  as a wrong citation, since no gold page is that high (it lowers Page F1 precision);
* a field whose name is close to a scored field that the line lacks (absent, ``null``, ``[]`` or ``""``), such as
  ``citatons`` or ``anwser``: ignored like any other extra field, but warned about by name, once per name, with
  the line where it first appears.

Every message is built from the file's own content (names, counts, line numbers), never from gold data, so the
Space may show it to a participant. The cost is bounded: only names of at most :data:`MAX_CHECKED_KEY_CHARS`
characters are compared, each distinct name once per file, and at most :data:`MAX_CHECKED_KEYS` of them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .jsonl import show
from .schema import MAX_PAGE, Citation

#: The fields of a results line that change a score.
SCORED_FIELDS = ("id", "question", "answer", "citations", "search_history", "steps", "iterations")
#: The fields of one citation.
CITATION_FIELDS = ("document", "file", "page")
#: Other fields that `madqa run` and `madqa human` write: never warned about. Any other extra field is warned about
#: only when it is close to a scored field that its line lacks, so extra fields of other producers stay silent.
EXTRA_FIELDS = frozenset(
    {
        "schema_version",
        "dataset",
        "agent",
        "model",
        "usage",
        "costs",
        "elapsed_s",
        "error",
        "final_state",
        "config",
        "trajectory",
        "effort",
        "repl",
        "page_views",
        "system_type",
        "annotator",
        "batch",
        "split",
        "mode",
        "started_at",
        "ended_at",
        "attempts",
        "repeat",
        "seed",
    }
)

#: Similarity (difflib ratio) from which a name counts as a misspelling of a scored field.
CUTOFF = 0.8
#: Longer names are never compared (no scored field is longer than 14 characters, so none could be close).
MAX_CHECKED_KEY_CHARS = 30
#: At most this many distinct unknown names are compared per file; the rest are not checked (bounded cost).
MAX_CHECKED_KEYS = 1000
#: At most this many misspelt names are warned about per file; the rest are counted in one more message.
MAX_WARNED_KEYS = 10


def close_field(name: str, fields: tuple[str, ...]) -> str | None:
    """The field that ``name`` is likely a misspelling of, else ``None``.

    That is difflib's closest at :data:`CUTOFF`, or an anagram (difflib misses a swap of two letters in a short
    word, ``pgae``).

    >>> [close_field(n, SCORED_FIELDS + CITATION_FIELDS) for n in ("citatons", "pgae", "Answer", "usage")]
    ['citations', 'page', 'answer', None]
    """
    lower = name.lower()
    close = difflib.get_close_matches(lower, fields, n=1, cutoff=CUTOFF)
    if close:
        return close[0]
    return next((f for f in fields if len(f) >= 4 and sorted(f) == sorted(lower)), None)


def _given(owner: Mapping[str, Any], key: str) -> bool:
    """Whether ``owner`` gives ``key`` a value (``null``, ``[]`` and ``""`` give none: the look-alike may)."""
    value = owner.get(key)
    return value is not None and not (isinstance(value, (list, str)) and not value)


@dataclass(frozen=True)
class UnknownField:
    """A field name that is likely a misspelling of a scored field.

    Attributes:
        name: the name as written.
        suggestion: the scored field it is close to.
        where: the line (or ``predictions[i]``) where it first appears, with ``in citations`` for a citation's
            field.
        lines: how many lines have it.
    """

    name: str
    suggestion: str
    where: str
    lines: int = 1


@dataclass
class InputNotes:
    """What one results file had that is scored leniently (see the module docstring).

    Attributes:
        source: the file's name in messages.
        lines_without_answer: lines with no ``answer`` key.
        citations_above_max_page: citations whose page is above :data:`~.schema.MAX_PAGE`.
        unknown_fields: likely misspellings, by name, in order of first appearance.
    """

    source: str
    lines_without_answer: int = 0
    citations_above_max_page: int = 0
    unknown_fields: dict[str, UnknownField] = field(default_factory=dict)
    _checked: dict[str, str | None] = field(default_factory=dict, repr=False)

    def note(self, record: Mapping[str, Any], where: str, citations: Iterable[Citation]) -> None:
        """Count what line ``record`` (already parsed to ``citations``) has that is read leniently."""
        if "answer" not in record:
            self.lines_without_answer += 1
        self.citations_above_max_page += sum(1 for c in citations if c.page is not None and c.page > MAX_PAGE)
        seen: set[str] = set()  # a name counts once per line
        for key in record:
            suggestion = self._suggest(key, SCORED_FIELDS, EXTRA_FIELDS, record)
            if suggestion is not None:
                self._add(key, suggestion, where, seen)
        raw = record.get("citations")
        for item in raw if isinstance(raw, list) else ():
            if isinstance(item, Mapping):
                for key in item:
                    suggestion = self._suggest(key, CITATION_FIELDS, frozenset(), item)
                    if suggestion is not None:
                        self._add(key, suggestion, f"{where} (in citations)", seen)

    def _suggest(
        self, key: Any, scored: tuple[str, ...], extra: frozenset[str], owner: Mapping[str, Any]
    ) -> str | None:
        if not isinstance(key, str) or key in scored or key in extra or len(key) > MAX_CHECKED_KEY_CHARS:
            return None
        if key not in self._checked:
            if len(self._checked) >= MAX_CHECKED_KEYS:
                return None
            self._checked[key] = close_field(key, scored)
        suggestion = self._checked[key]
        if suggestion is None or _given(owner, suggestion):
            return None  # the scored field is there: the look-alike is some other extra field
        if suggestion in ("document", "file") and (_given(owner, "document") or _given(owner, "file")):
            return None
        return suggestion

    def _add(self, key: str, suggestion: str, where: str, seen: set[str]) -> None:
        if key in seen:
            return
        seen.add(key)
        known = self.unknown_fields.get(key)
        if known is None:
            self.unknown_fields[key] = UnknownField(key, suggestion, where)
        else:
            self.unknown_fields[key] = UnknownField(key, known.suggestion, known.where, known.lines + 1)

    def warnings(self) -> list[str]:
        """One message per kind (and per misspelt name, up to :data:`MAX_WARNED_KEYS`), in a fixed order."""
        out = []
        for unknown in list(self.unknown_fields.values())[:MAX_WARNED_KEYS]:
            more = f", on {unknown.lines} lines in all" if unknown.lines > 1 else ""
            out.append(
                f"{unknown.where}: unknown field {show(unknown.name)} (did you mean {unknown.suggestion!r}?);"
                f" it is ignored{more}"
            )
        hidden = len(self.unknown_fields) - MAX_WARNED_KEYS
        if hidden > 0:
            out.append(f"{self.source}: {hidden} more unknown field name(s) close to a scored field are ignored")
        if self.lines_without_answer:
            out.append(
                f"{self.source}: {self.lines_without_answer} line(s) have no 'answer' field; scored as no answer"
            )
        if self.citations_above_max_page:
            out.append(
                f"{self.source}: {self.citations_above_max_page} citation(s) to pages above {MAX_PAGE:,} "
                "scored as wrong citations"
            )
        return out

    def summary(self) -> dict[str, Any]:
        """The counts for the report (``input_notes``): plain JSON values."""
        return {
            "lines_without_answer": self.lines_without_answer,
            "citations_above_max_page": self.citations_above_max_page,
            "unknown_fields": {name: u.suggestion for name, u in self.unknown_fields.items()},
        }

"""The sample's content, read from the JSON tables in ``data/`` (shipped as package data).

A family module keeps its logic (rendering, questions) in Python and its records (menus, invoices, agendas, ...)
as data: ``data/<family>.json`` holds a list of objects whose keys are the fields of the family's dataclass.
The dataclass's type hints say how a JSON value becomes the field's value: arrays become tuples, ISO strings
under a ``dt.date`` hint become dates, object keys under a ``dict[int, ...]`` hint become ints. Numbers are kept
as JSON wrote them (``16`` stays an int, ``4.75`` a float), so the sample's bytes do not depend on where its
content lives.

Questions whose answers are written out (not computed from the records) live in ``data/<family>_questions.json``:
``{"question": ..., "answer": {"<kind>": [arguments]}, "evidence": [reference, ...]}``, where the kind names one
of :mod:`answers`' variant builders and each evidence reference is what the family's ``evidence`` function takes
(a string, or a list of its arguments) to name a ``(file, page)``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample.model import Cluster

__all__ = ["answer_variants", "ask_questions", "load_records", "load_table", "records_from"]

Record = TypeVar("Record")


def load_table(name: str) -> Any:
    """The parsed content of ``data/<name>.json``."""
    text = resources.files(__package__).joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def _convert(hint: Any, value: Any) -> Any:
    """``value`` as read from JSON, shaped as ``hint`` says (tuples, dates, int keys); scalars as they are."""
    origin = get_origin(hint)
    args = get_args(hint)
    if hint is dt.date:
        return dt.date.fromisoformat(value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], item) for item in value)
        if args:
            return tuple(_convert(item_hint, item) for item_hint, item in zip(args, value, strict=True))
        return tuple(value)
    if origin is dict:
        key_hint, value_hint = args
        return {(int(k) if key_hint is int else k): _convert(value_hint, v) for k, v in value.items()}
    return value


def records_from(entries: list[dict[str, Any]], record_type: type[Record]) -> tuple[Record, ...]:
    """``entries`` (JSON objects keyed by field name) as ``record_type`` dataclasses, shaped by its type hints."""
    hints = get_type_hints(record_type)
    fields = {field.name for field in dataclasses.fields(record_type)}  # type: ignore[arg-type]
    records = []
    for entry in entries:
        unknown = set(entry) - fields
        if unknown:  # a misspelt key would otherwise surface as a missing argument, or not at all for a default
            raise ValueError(f"{record_type.__name__} has no field(s) {sorted(unknown)}")
        records.append(record_type(**{key: _convert(hints[key], value) for key, value in entry.items()}))
    return tuple(records)


def load_records(name: str, record_type: type[Record]) -> tuple[Record, ...]:
    """The records of ``data/<name>.json`` as ``record_type`` dataclasses, in file order."""
    return records_from(load_table(name), record_type)


#: Answer kinds of a question table: each maps the spec's arguments to answer variants.
_ANSWER_KINDS: dict[str, Callable[..., A.Variants]] = {
    "text": A.text_variants,
    "quantity": A.quantity_variants,
    "money": A.money_variants,
    "list": A.list_variants,
    "yes_no": A.yes_no,
    "date": lambda iso: A.date_variants(dt.date.fromisoformat(iso)),
}


def answer_variants(
    spec: dict[str, list[Any]], kinds: Mapping[str, Callable[..., A.Variants]] = MappingProxyType({})
) -> A.Variants:
    """The answer variants an ``{"<kind>": [arguments]}`` spec describes (e.g. ``{"money": [5250]}``).

    ``kinds`` adds a family's own kinds, answers read off its records (e.g. a menu's ``price`` of an item).
    """
    ((kind, arguments),) = spec.items()
    return {**_ANSWER_KINDS, **kinds}[kind](*arguments)


def ask_questions(
    cluster: Cluster,
    name: str,
    evidence: Callable[..., tuple[str, int]],
    kinds: Mapping[str, Callable[..., A.Variants]] = MappingProxyType({}),
) -> None:
    """Ask the questions of ``data/<name>_questions.json`` in file order, their pages named by ``evidence``."""
    for entry in load_table(f"{name}_questions"):
        references = [[ref] if isinstance(ref, str) else ref for ref in entry["evidence"]]
        answers = answer_variants(entry["answer"], kinds)
        cluster.ask(entry["question"], answers, *[evidence(*ref) for ref in references])

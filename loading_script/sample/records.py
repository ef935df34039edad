"""The sample's content, read from the JSON tables in ``data/`` (shipped as package data).

A family module keeps its logic (rendering, questions) in Python and its records (menus, invoices, agendas, ...)
as data: ``data/<family>.json`` holds a list of objects whose keys are the fields of the family's dataclass.
The dataclass's type hints say how a JSON value becomes the field's value: arrays become tuples, ISO strings
under a ``dt.date`` hint become dates, object keys under a ``dict[int, ...]`` hint become ints. Numbers are kept
as JSON wrote them (``16`` stays an int, ``4.75`` a float), so the sample's bytes do not depend on where its
content lives.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from importlib import resources
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

__all__ = ["load_records", "load_table"]

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


def load_records(name: str, record_type: type[Record]) -> tuple[Record, ...]:
    """The records of ``data/<name>.json`` as ``record_type`` dataclasses, in file order."""
    hints = get_type_hints(record_type)
    fields = {field.name for field in dataclasses.fields(record_type)}  # type: ignore[arg-type]
    records = []
    for entry in load_table(name):
        unknown = set(entry) - fields
        if unknown:
            raise ValueError(f"data/{name}.json: {record_type.__name__} has no field(s) {sorted(unknown)}")
        records.append(record_type(**{key: _convert(hints[key], value) for key, value in entry.items()}))
    return tuple(records)

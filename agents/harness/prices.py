"""The price table of :mod:`madqa.metric.cost`: the shipped ``prices.yaml`` or a ``--prices FILE``.

Reading is here (files, YAML, line numbers); the table's shape and checks are the metric's
(:func:`madqa.metric.cost.parse_prices`), so a bad file is reported as ``FILE line N: model 'ID': field …``.
An optional top-level ``as_of: YYYY-MM-DD`` (when the listed prices were read) is taken out before the models are
parsed and kept as :attr:`~madqa.metric.cost.PriceTable.as_of`; the reports that price runs print it.
"""

from __future__ import annotations

import datetime
import importlib.resources
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from madqa.metric.cost import PriceError, PriceTable, parse_prices

#: The shipped table (package data of ``madqa.agents``).
BUILTIN = "prices.yaml"
#: The top-level key of the date the prices were read (not a model id).
AS_OF = "as_of"


def _key_lines(text: str) -> dict[str, int]:
    """Model id → 1-based line number of its key in a YAML mapping (empty when the text is no mapping)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value}


def parse_price_text(text: str, source: str) -> PriceTable:
    """A price table from YAML text.

    Raises:
        PriceError: invalid YAML (with its line) or an invalid table (see :func:`~madqa.metric.cost.parse_prices`).
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source} line {mark.line + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PriceError(f"{where}: not valid YAML ({problem})") from None
    except ValueError as exc:  # a date-like value that is no date (``2025-13-01``): YAML's reader raises this
        raise PriceError(f"{source}: not valid YAML ({exc})") from None
    lines = _key_lines(text)
    as_of = None
    if isinstance(data, dict) and AS_OF in data:
        as_of = _as_of(data.pop(AS_OF), f"{source} line {lines[AS_OF]}" if AS_OF in lines else source)
    return replace(parse_prices(data, source, lines), as_of=as_of)


def _as_of(value: Any, where: str) -> str:
    """The ``as_of`` date as ``YYYY-MM-DD`` (YAML reads an unquoted date as a date, a quoted one as text)."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise PriceError(f"{where}: field 'as_of' must be a date YYYY-MM-DD (when the prices were read), got {value!r}")


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The table of ``path``, or the shipped one when ``path`` is ``None``.

    Raises:
        PriceError: a missing or unreadable file, or an invalid table.
    """
    if path is None:
        text = importlib.resources.files("madqa.agents.harness").joinpath(BUILTIN).read_text(encoding="utf-8")
        return parse_price_text(text, f"built-in {BUILTIN}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PriceError(f"{path}: no such price file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PriceError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    return parse_price_text(text, str(path))

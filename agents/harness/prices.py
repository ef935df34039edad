"""The price table of :mod:`madqa.metric.cost`: the shipped ``prices.yaml`` or a ``--prices FILE``.

Reading is here (files, YAML, line numbers); the table's shape and checks are the metric's
(:func:`madqa.metric.cost.parse_prices`), so a bad file is reported as ``FILE line N: model 'ID': field …``.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import yaml

from madqa.metric.cost import PriceError, PriceTable, parse_prices

#: The shipped table (package data of ``madqa.agents``).
BUILTIN = "prices.yaml"


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
    return parse_prices(data, source, _key_lines(text))


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

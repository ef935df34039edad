"""Check a document against the Hub's schemas this project keeps (``*.schema.yaml``), without a new dependency.

The schemas are JSON Schema, kept as YAML so that their header can say where they come from. Validating them at
build time with ``jsonschema`` would make it a core dependency for two small files this project writes itself, so
this module reads the keywords those schemas use (``type``, ``required``, ``properties``, ``additionalProperties:
false``, ``enum``, ``const``, ``minLength``, ``minItems``, ``items``, ``pattern``, ``allOf``, ``anyOf``,
``if``/``then``) and refuses a schema with any other keyword, so a schema edit cannot be silently ignored. The
tests check the same documents with ``jsonschema`` and that both agree on broken ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

import yaml

KNOWN_KEYWORDS = frozenset(
    {
        "$schema",
        "title",
        "description",
        "type",
        "required",
        "properties",
        "additionalProperties",
        "enum",
        "const",
        "minLength",
        "minItems",
        "items",
        "pattern",
        "allOf",
        "anyOf",
        "if",
        "then",
    }
)
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
}


class SchemaViolation(ValueError):
    """A document that breaks its schema: ``field`` is where (``tasks[1].id``; ``""`` for the whole document)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"field '{field or '<document>'}': {problem}")
        self.field, self.problem = field, problem


def load_schema(package: str, name: str) -> dict[str, Any]:
    """A schema shipped as package data (``package``: ``madqa.loading_script``, ``madqa.metric``)."""
    schema = yaml.safe_load(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
    _check_keywords(schema, name)
    return dict(schema)


def _check_keywords(schema: Any, where: str) -> None:
    if not isinstance(schema, Mapping):
        return
    unknown = set(schema) - KNOWN_KEYWORDS
    if unknown:
        raise ValueError(f"{where}: keyword(s) {sorted(unknown)} are not read by madqa.loading_script.schema_check")
    for name, sub in schema.get("properties", {}).items():
        _check_keywords(sub, f"{where}.properties.{name}")
    for key in ("items", "if", "then"):
        _check_keywords(schema.get(key), f"{where}.{key}")
    for key in ("allOf", "anyOf"):
        for i, sub in enumerate(schema.get(key, [])):
            _check_keywords(sub, f"{where}.{key}[{i}]")


def _join(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("number", "integer"):
        return False
    return isinstance(value, _TYPES[name])


def check(document: Any, schema: Mapping[str, Any], path: str = "") -> None:
    """Raise :class:`SchemaViolation` for the first place ``document`` breaks ``schema``."""
    kind = schema.get("type")
    if kind is not None and not _is_type(document, kind):
        raise SchemaViolation(path, f"expected {kind}, got {type(document).__name__}")
    if "const" in schema and document != schema["const"]:
        raise SchemaViolation(path, f"must be {schema['const']!r}")
    if "enum" in schema and document not in schema["enum"]:
        raise SchemaViolation(path, f"{document!r} is not one of {', '.join(map(str, schema['enum']))}")
    if isinstance(document, str):
        if len(document) < schema.get("minLength", 0):
            raise SchemaViolation(path, "must not be empty")
        if "pattern" in schema and not re.search(schema["pattern"], document):
            raise SchemaViolation(path, f"{document!r} does not match {schema['pattern']}")
    if isinstance(document, list):
        if len(document) < schema.get("minItems", 0):
            raise SchemaViolation(path, f"needs at least {schema['minItems']} item(s)")
        for i, item in enumerate(document):
            if "items" in schema:
                check(item, schema["items"], _join(path, i))
    if isinstance(document, dict):
        for name in schema.get("required", []):
            if name not in document:
                raise SchemaViolation(_join(path, name), "is required")
        properties = schema.get("properties", {})
        for name, value in document.items():
            if name in properties:
                check(value, properties[name], _join(path, name))
            elif schema.get("additionalProperties") is False and "properties" in schema:
                raise SchemaViolation(_join(path, str(name)), "is not a field of the specification")
    for sub in schema.get("allOf", []):
        check(document, sub, path)
    if "anyOf" in schema:
        problems = []
        for sub in schema["anyOf"]:
            try:
                check(document, sub, path)
                break
            except SchemaViolation as exc:
                problems.append(str(exc))
        else:
            raise SchemaViolation(path, "matches none of: " + "; ".join(problems))
    if "if" in schema and "then" in schema:
        try:
            check(document, schema["if"], path)
        except SchemaViolation:
            return
        check(document, schema["then"], path)

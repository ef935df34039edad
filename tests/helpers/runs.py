"""Shared by the tests (moved out of test_compare.py, which other tests imported)."""

from __future__ import annotations

import json
from pathlib import Path


def gold_rows(n: int) -> list[dict]:
    """``n`` gold rows ``g1..gn``: question ``q{i}?``, answer ``Answer{i}``, evidence ``x.pdf`` page ``i``."""
    return [
        {
            "id": f"g{i}",
            "question": f"q{i}?",
            "answer_variants": [[f"Answer{i}"]],
            "evidence": [{"document": "x.pdf", "page": i}],
        }
        for i in range(1, n + 1)
    ]


GOLD = gold_rows(4)


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def line(i: int, correct: bool, steps: int, cite: bool, **extra) -> dict:
    return {
        "id": f"g{i}",
        "question": f"q{i}?",
        "answer": [f"Answer{i}" if correct else "wrong"],
        "citations": [{"document": "x.pdf", "page": i}] if cite else [],
        "search_history": [{"query": f"s{n}", "results": [], "count": 0} for n in range(steps)],
        **extra,
    }

"""The embedded sample, generated once per test session (a few seconds), with the lookups its tests use.

Shared by test_sample_generator.py (files, schema, corpus shape, layouts, OCR) and test_sample_questions.py (the
paper's question properties).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from madqa.loading_script.sample import generate_sample

LAYOUTS = {"running_text", "multi_column", "table", "form", "checkbox", "scanned"}
TICK_GLYPHS = "\u2713\u2714\u2611\u2612\u2717\u2718\u00d7"


def tokens(text: str) -> list[str]:
    """Lowercase alphanumeric tokens (the extractiveness tokenisation)."""
    return re.findall(r"[a-z0-9]+", text.lower())


def normalise(text: str) -> str:
    """Lowercase with whitespace runs collapsed to one space."""
    return " ".join(text.lower().split())


def contains_run(haystack: list[str], needle: list[str]) -> bool:
    """Whether ``needle`` occurs as a contiguous run in ``haystack``."""
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


@dataclass
class Sample:
    """The generated sample plus lookups used by the tests."""

    out: Path
    seconds: float
    documents: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    manifest: dict[str, Any]
    texts: dict[tuple[str, int], str]  # text layer of every page
    drawings: dict[tuple[str, int], list[dict[str, Any]]]  # vector paths of checkbox pages
    images: dict[tuple[str, int], int]  # images per page

    def scanned(self, doc: str, page: int) -> bool:
        return page in self.manifest["documents"][doc]["scanned_pages"]

    def probes(self, doc: str, page: int) -> list[str]:
        return self.manifest["documents"][doc]["ocr_probes"].get(str(page), [])

    def layouts(self, doc: str, page: int) -> list[str]:
        return self.manifest["documents"][doc]["layouts"][str(page)]

    def evidence_tokens(self, question: dict[str, Any]) -> set[str]:
        """Tokens readable on the evidence pages: the text layer, or the OCR probes of scanned pages."""
        found: set[str] = set()
        for ev in question["evidence"]:
            key = (ev["document"], ev["page"])
            if self.scanned(*key):
                found.update(t for probe in self.probes(*key) for t in tokens(probe))
            else:
                found.update(tokens(self.texts[key]))
        return found


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(name="sample", scope="session")
def generated_sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    out = tmp_path_factory.mktemp("sample")
    started = time.perf_counter()
    result = generate_sample(out, seed=0)
    seconds = time.perf_counter() - started
    texts: dict[tuple[str, int], str] = {}
    drawings: dict[tuple[str, int], list[dict[str, Any]]] = {}
    images: dict[tuple[str, int], int] = {}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for record in result.documents:
        name = record["document"]
        with pymupdf.open(out / "documents" / name) as pdf:
            for index, page in enumerate(pdf, start=1):
                texts[(name, index)] = page.get_text()
                images[(name, index)] = len(page.get_images())
                if "checkbox" in manifest["documents"][name]["layouts"][str(index)]:
                    drawings[(name, index)] = page.get_drawings()
    return Sample(
        out,
        seconds,
        _read_jsonl(out / "documents.jsonl"),
        _read_jsonl(out / "questions.jsonl"),
        manifest,
        texts,
        drawings,
        images,
    )

"""Deterministic generator of MADQA's embedded sample benchmark.

The sample is a small, self-contained stand-in for the real corpus: clusters of related PDFs (yearly
reports of one utility, menus and health inspections of one street, permits and council agendas of one
city, ...) written with PyMuPDF, plus questions with answer variants and minimal page-level evidence.
Layouts cover running text, two-column pages, ruled tables, forms, drawn checkboxes and image-only scans.

>>> from pathlib import Path
>>> from madqa.loading_script.sample import generate_sample
>>> result = generate_sample(Path("/tmp/madqa-sample"), seed=0)  # doctest: +SKIP
>>> len(result.documents), len(result.questions)  # doctest: +SKIP
(42, 190)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from madqa.loading_script.features import validate_question
from madqa.loading_script.sample import (
    agendas,
    handbook,
    inspections,
    invoices,
    lessons,
    menus,
    permits,
    resumes,
    utility,
    verdicts,
)
from madqa.loading_script.sample.model import Cluster
from madqa.loading_script.sample_version import SAMPLE_VERSION

__all__ = ["SAMPLE_VERSION", "SampleResult", "generate_sample"]

logger = logging.getLogger(__name__)

_CLUSTERS: tuple[Callable[[int], Cluster], ...] = (
    utility.build,
    menus.build,
    inspections.build,
    permits.build,
    agendas.build,
    invoices.build,
    lessons.build,
    handbook.build,
    resumes.build,
    verdicts.build,
)


@dataclass(frozen=True)
class SampleResult:
    """What :func:`generate_sample` wrote.

    Attributes:
        out_dir: the output folder.
        documents: the ``documents.jsonl`` records.
        questions: the ``questions.jsonl`` records.
        manifest: the ``manifest.json`` content.
    """

    out_dir: Path
    documents: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    manifest: dict[str, Any]


def _collect(seed: int) -> Cluster:
    corpus = Cluster()
    for build in _CLUSTERS:
        corpus.extend(build(seed))
    return corpus


def _check(corpus: Cluster) -> None:
    """Reject duplicate files or questions and evidence pointing outside the corpus."""
    pages = {doc.name: doc.num_pages for doc in corpus.documents}
    if len(pages) != len(corpus.documents):
        raise ValueError("duplicate document file names in the sample")
    seen: set[str] = set()
    for spec in corpus.questions:
        if spec.question in seen:
            raise ValueError(f"duplicate question: {spec.question!r}")
        seen.add(spec.question)
        for name, page in spec.evidence:
            if name not in pages or not 1 <= page <= pages[name]:
                raise ValueError(f"evidence {name} page {page} does not exist ({spec.question!r})")


def _write_jsonl(path: Path, records: list[dict[str, Any]], *, private: bool = False) -> None:
    """Write ``records``; ``private`` files (every label, the test split's included) are owner-only (0600)."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if not private:
        path.write_text(text, encoding="utf-8")
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # never world-readable, not even briefly
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def generate_sample(out_dir: Path, seed: int = 0) -> SampleResult:
    """Generate the sample benchmark into ``out_dir`` (overwriting earlier output).

    Writes ``documents/<file>.pdf``, ``documents.jsonl``, ``questions.jsonl`` (mode 0600: it holds every label,
    the test split's included) and ``manifest.json``. The same
    ``seed`` always yields byte-identical files.

    Args:
        out_dir: destination folder (created if missing).
        seed: seed of the filler text, table figures and scan noise.

    Returns:
        The records written, as a :class:`SampleResult`.
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    corpus = _collect(seed)
    _check(corpus)
    doc_dir = out_dir / "documents"
    doc_dir.mkdir(parents=True, exist_ok=True)
    names = {doc.name for doc in corpus.documents}
    for stale in doc_dir.glob("*.pdf"):
        if stale.name not in names:
            stale.unlink()
    by_name = {doc.name: doc for doc in corpus.documents}
    documents = []
    manifest: dict[str, Any] = {"version": SAMPLE_VERSION, "seed": seed, "documents": {}}
    for doc in corpus.documents:
        (doc_dir / doc.name).write_bytes(doc.pdf)
        documents.append(
            {
                "document": doc.name,
                "num_pages": doc.num_pages,
                "document_category": doc.category,
                "domain": doc.domain,
                "sha256": hashlib.sha256(doc.pdf).hexdigest(),
            }
        )
        manifest["documents"][doc.name] = {
            "scanned_pages": list(doc.scanned_pages),
            "layouts": {str(page): list(tags) for page, tags in doc.layouts.items()},
            "ocr_probes": {str(page): list(texts) for page, texts in doc.ocr_probes.items()},
        }
    questions = []
    for number, spec in enumerate(corpus.questions, start=1):
        first = by_name[spec.evidence[0][0]]
        record = {
            "id": f"q{number:04d}",
            "question": spec.question,
            "answer_variants": [list(v) for v in spec.answer_variants],
            "evidence": [{"document": name, "page": page} for name, page in spec.evidence],
            "document_category": first.category,
            "domain": first.domain,
        }
        validate_question(record, f"sample question {record['id']}")
        questions.append(record)
    _write_jsonl(out_dir / "documents.jsonl", documents)
    _write_jsonl(out_dir / "questions.jsonl", questions, private=True)  # holds the test split's labels
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    logger.info(
        "sample v%s (seed %d): %d documents, %d questions in %.1fs -> %s",
        SAMPLE_VERSION,
        seed,
        len(documents),
        len(questions),
        time.perf_counter() - started,
        out_dir,
    )
    return SampleResult(out_dir=out_dir, documents=documents, questions=questions, manifest=manifest)

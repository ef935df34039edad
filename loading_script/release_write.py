"""Write a prepared dataset folder (see :mod:`.release`): data files through a staging folder, then the card.

The PDFs stay where the fetcher put them (``documents/``); ``data/`` is replaced as a whole, so a failed write
never leaves a mix of old and new data files, and ``prepared.json`` (written by the caller, last) marks the folder
usable only after both.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .benchmark_eval import write_eval_yaml
from .build import DOCUMENTS_FILE, PAGES_FILE, QA_FILE
from .extract import sha256_file
from .features import DOCUMENT_FEATURES, DOCUMENTS_SPLITS, PAGE_FEATURES, PAGES_SPLIT, QA_FEATURES
from .io import write_parquet
from .load import card_metadata


def _card(source: Path, spec: str, revision: str, splits: Sequence[str], stats: Mapping[str, Any]) -> str:
    meta = card_metadata(source)
    header: dict[str, Any] = {}
    for key in ("license", "pretty_name", "language", "task_categories", "tags"):
        if key in meta:
            header[key] = meta[key]
    header["configs"] = [
        {
            "config_name": "default",
            "default": True,
            "data_files": [
                {"split": s, "path": QA_FILE.format(split=s).replace("-00000-of-00001", "-*")} for s in splits
            ],
        },
        {
            "config_name": "documents",
            "data_files": [
                {"split": s, "path": DOCUMENTS_FILE.replace("-00000-of-00001", "-*")} for s in DOCUMENTS_SPLITS
            ],
        },
        {
            "config_name": "pages",
            "data_files": [{"split": PAGES_SPLIT, "path": PAGES_FILE.replace("-00000-of-00001", "-*")}],
        },
    ]
    body = (
        f"# {meta.get('pretty_name') or spec} (prepared by madqa)\n\n"
        f"A local copy of `{spec}` at revision `{revision}`, prepared by `madqa setup --dataset {spec}`: its\n"
        "questions, its documents (PDFs fetched by URL into `documents/`) and the page-text corpus (`pages`).\n"
        f"Documents in the corpus: {stats['documents']} of {stats['documents_listed']} listed"
        + (f", and {n} PDF(s) attached to them (`<document>#<name>`)" if (n := stats["attachments"]) else "")
        + f"; pages: {stats['pages']}. See `prepared.json` for the failures and the extraction settings.\n"
        "The documents' own terms of use apply; see the source dataset's card.\n"
    )
    return f"---\n{yaml.safe_dump(header, sort_keys=False, allow_unicode=True)}---\n\n{body}"


def write_prepared(
    target: Path,
    *,
    source: Path,
    spec: str,
    revision: str,
    questions: Mapping[str, Sequence[Mapping[str, Any]]],
    documents: Sequence[Mapping[str, Any]],
    pages: Sequence[Mapping[str, Any]],
    failures: Mapping[str, Any],
    pdf_dir: str,
    attachments: Mapping[str, str] | None = None,
    unwritten: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write ``data/``, ``README.md`` and ``eval.yaml`` of a prepared folder; returns its statistics.

    ``attachments``: attached PDF's document → the listed document it came from (:mod:`.release_attachments`),
    each listed after the listed documents, with its parent's category and domain and no URL; ``unwritten``: those
    whose PDF could not be written (no ``path``).
    """
    attachments, unwritten = attachments or {}, unwritten or {}
    by_name = {str(row.get("document") or ""): row for row in documents}
    documents = [
        *documents,
        *(
            {
                "document": name,
                "url": None,
                "document_category": by_name[root].get("document_category"),
                "domain": by_name[root].get("domain"),
            }
            for name, root in sorted(attachments.items())
        ),
    ]
    pages_per_doc = Counter(str(p["document"]) for p in pages)
    doc_records = []
    for row in documents:
        name = str(row.get("document") or "")
        in_corpus = name in pages_per_doc and name not in failures
        pdf = target / pdf_dir / name
        doc_records.append(
            {
                "document": name,
                "url": row.get("url"),
                "path": f"{pdf_dir}/{name}" if in_corpus and pdf.is_file() and name not in unwritten else None,
                "num_pages": pages_per_doc.get(name) if in_corpus else None,
                "sha256": sha256_file(pdf)
                if in_corpus and pdf.is_file() and name not in unwritten
                else row.get("sha256"),
                "document_category": row.get("document_category"),
                "domain": row.get("domain"),
            }
        )
    stats = {
        "questions": {s: len(rows) for s, rows in questions.items()},
        "documents_listed": len(documents) - len(attachments),
        "attachments": len(attachments),
        "documents": sum(r["num_pages"] is not None for r in doc_records if r["document"] not in attachments),
        "pages": len(pages),
        "text_sources": dict(Counter(str(p.get("text_source")) for p in pages)),
    }
    staging = target / f".data.staging{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for split, rows in questions.items():
            write_parquet([dict(r) for r in rows], QA_FEATURES, staging / Path(QA_FILE.format(split=split)).name)
        write_parquet(doc_records, DOCUMENT_FEATURES, staging / Path(DOCUMENTS_FILE).relative_to("data"))
        page_rows = [{k: p.get(k) for k in PAGE_FEATURES} for p in pages]
        write_parquet(page_rows, PAGE_FEATURES, staging / Path(PAGES_FILE).relative_to("data"))
        old = target / f".data.old{os.getpid()}"
        if (target / "data").exists():
            (target / "data").replace(old)
        staging.replace(target / "data")
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    tmp = target / f".README.md.tmp{os.getpid()}"
    tmp.write_text(_card(source, spec, revision, list(questions), stats), encoding="utf-8")
    tmp.replace(target / "README.md")
    write_eval_yaml(target, str(card_metadata(source).get("pretty_name") or spec))
    return stats

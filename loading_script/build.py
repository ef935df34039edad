"""Build the Hub-ready dataset folder from the sample's questions, documents and extracted pages.

Output (``Layout.dataset_dir``, basename ``madqa``)::

    README.md                                   the card from dataset_card/, with dataset_info and sample stats
    eval.yaml                                   the Hub benchmark's tasks (:mod:`.benchmark_eval`)
    data/{train,dev,test}-00000-of-00001.parquet questions (test without answer_variants/evidence/hop_type)
    data/documents/document_urls-00000-of-00001.parquet
    data/pages/pages-00000-of-00001.parquet
    documents/*.pdf

The test labels go to ``Layout.test_labels`` (outside the public folder). The folder is built in a staging
directory and swapped in at the end, so a failed build never leaves a half-written dataset behind.
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .benchmark_eval import write_eval_yaml
from .features import (
    DOCUMENT_FEATURES,
    DOCUMENTS_SPLITS,
    FEATURES_BY_CONFIG,
    HIDDEN_SPLIT,
    OCR_SOURCES,
    PAGE_FEATURES,
    PAGES_SPLIT,
    QA_FEATURES,
    QA_SPLITS,
    SchemaError,
    hop_type,
    is_yes_no,
    validate_question,
)
from .io import read_jsonl, write_jsonl, write_parquet
from .splits import assign_splits

logger = logging.getLogger(__name__)

STATS_MARKER = "<!-- madqa:sample-stats -->"
QA_FILE = "data/{split}-00000-of-00001.parquet"
DOCUMENTS_FILE = "data/documents/document_urls-00000-of-00001.parquet"
PAGES_FILE = "data/pages/pages-00000-of-00001.parquet"
PDF_DIR = "documents"
#: The ``eval.yaml`` name of the built sample (the release's is its card's ``pretty_name``).
SAMPLE_BENCHMARK_NAME = "MADQA (synthetic sample)"


@dataclass
class BuildResult:
    """Counts of what :func:`build_dataset` wrote."""

    split_sizes: dict[str, int]
    num_documents: int
    num_pages: int
    stats: dict[str, Any]


def _check_questions(
    questions: list[dict[str, Any]], documents: Mapping[str, Mapping[str, Any]], source: Path
) -> None:
    seen: set[str] = set()
    for q in questions:
        where = f"{source}: line {q.get('_line', '?')}"
        validate_question(q, where)
        if q["id"] in seen:
            raise SchemaError(f"{where}: duplicate id '{q['id']}'")
        seen.add(q["id"])
        for ev in q["evidence"]:
            doc = documents.get(ev["document"])
            if doc is None:
                raise SchemaError(f"{where}: evidence document '{ev['document']}' is not in the corpus")
            if ev["page"] > int(doc["num_pages"]):
                raise SchemaError(
                    f"{where}: evidence page {ev['page']} of '{ev['document']}' exceeds its {doc['num_pages']} pages"
                )


def sample_stats(
    questions: Sequence[Mapping[str, Any]],
    splits: Mapping[str, str],
    documents: Sequence[Mapping[str, Any]],
    pages: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Measured statistics of a built sample (reported in the card and by ``madqa info``)."""
    lengths = [int(d["num_pages"]) for d in documents]
    hops = Counter(hop_type(q["evidence"]) for q in questions)
    return {
        "documents": len(documents),
        "categories": len({d["document_category"] for d in documents}),
        "domains": len({d["domain"] for d in documents}),
        "pages": len(pages),
        "pages_per_document": {"min": min(lengths), "median": statistics.median(lengths), "max": max(lengths)},
        "ocr_pages": sum(p["text_source"] in OCR_SOURCES for p in pages),
        "questions": len(questions),
        "splits": dict(sorted(Counter(splits.values()).items())),
        "hop_types": {h: hops.get(h, 0) for h in ("single", "cross_page", "cross_doc")},
        "yes_no": sum(is_yes_no(q["answer_variants"]) for q in questions),
        "list_answers": sum(any(len(v) > 1 for v in q["answer_variants"]) for q in questions),
    }


def _stats_table(stats: Mapping[str, Any]) -> str:
    ppd = stats["pages_per_document"]
    n = stats["questions"]
    hops = stats["hop_types"]
    rows = [
        ("Documents", f"{stats['documents']} in {stats['categories']} categories, {stats['domains']} domains"),
        ("Pages", f"{stats['pages']} (per document: min {ppd['min']}, median {ppd['median']}, max {ppd['max']})"),
        ("Pages read by OCR", str(stats["ocr_pages"])),
        ("Questions", f"{n} ({', '.join(f'{k} {v}' for k, v in stats['splits'].items())})"),
        ("Hop types", ", ".join(f"{k} {v} ({100 * v / n:.1f}%)" for k, v in hops.items())),
        ("Yes/no questions", str(stats["yes_no"])),
        ("List answers", str(stats["list_answers"])),
    ]
    lines = ["| Statistic | Value |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows)]
    return "Measured by `madqa setup` on the generated sample:\n\n" + "\n".join(lines)


def render_card(split_sizes: Mapping[str, int], num_documents: int, num_pages: int, stats: Mapping[str, Any]) -> str:
    """The dataset card: ``dataset_card/README.md`` plus a generated ``dataset_info`` block and the stats table."""
    import datasets
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard

    template = resources.files("madqa.dataset_card").joinpath("README.md").read_text(encoding="utf-8")
    card = DatasetCard(template)
    configs = {c["config_name"]: c for c in card.data.to_dict().get("configs", [])}
    expected = {
        "default": {s: QA_FILE.format(split=s).replace("-00000-of-00001", "-*") for s in QA_SPLITS},
        "documents": {s: DOCUMENTS_FILE.replace("-00000-of-00001", "-*") for s in DOCUMENTS_SPLITS},
        "pages": {PAGES_SPLIT: PAGES_FILE.replace("-00000-of-00001", "-*")},
    }
    for name, files in expected.items():
        declared = {f["split"]: f["path"] for f in configs.get(name, {}).get("data_files", [])}
        if declared != files:
            raise SchemaError(
                f"dataset_card/README.md: config '{name}' declares {declared}, the builder writes {files}"
            )
    sizes = {
        "default": dict(split_sizes),
        "documents": {s: num_documents for s in DOCUMENTS_SPLITS},
        "pages": {PAGES_SPLIT: num_pages},
    }
    infos = DatasetInfosDict()
    for name, features in FEATURES_BY_CONFIG.items():
        split_dict = datasets.SplitDict()
        for split, n in sizes[name].items():
            split_dict.add(datasets.SplitInfo(name=split, num_examples=n))
        infos[name] = datasets.DatasetInfo(features=features, config_name=name, splits=split_dict)
    infos.to_dataset_card_data(card.data)
    text = str(card)
    if STATS_MARKER not in text:
        raise SchemaError(f"dataset_card/README.md: the marker {STATS_MARKER} is missing")
    return text.replace(STATS_MARKER, _stats_table(stats))


def build_dataset(
    sample_dir: Path, pages: Sequence[Mapping[str, Any]], out_dir: Path, test_labels_path: Path, *, seed: int = 0
) -> BuildResult:
    """Write the public dataset folder and the private test labels.

    Args:
        sample_dir: generator output (``questions.jsonl``, ``documents.jsonl``, ``documents/*.pdf``).
        pages: extracted page rows for those documents.
        out_dir: the public dataset folder to (re)create.
        test_labels_path: where the hidden test labels are written; must be outside ``out_dir``.
        seed: split-assignment seed.

    Returns:
        A :class:`BuildResult`.

    Raises:
        SchemaError: on invalid questions, evidence outside the corpus, or a card that disagrees with the data.
    """
    out_dir, test_labels_path = out_dir.resolve(), test_labels_path.resolve()
    if out_dir == test_labels_path or out_dir in test_labels_path.parents:
        raise ValueError(f"the test labels {test_labels_path} must be outside the public folder {out_dir}")
    questions = read_jsonl(sample_dir / "questions.jsonl")
    doc_rows = read_jsonl(sample_dir / "documents.jsonl")
    documents = {d["document"]: d for d in doc_rows}
    _check_questions(questions, documents, sample_dir / "questions.jsonl")
    page_docs = {p["document"] for p in pages}
    missing = sorted(set(documents) - page_docs)
    if missing:
        raise SchemaError(f"no extracted pages for: {', '.join(missing)}")
    splits = assign_splits(questions, seed=seed)

    by_split: dict[str, list[dict[str, Any]]] = {s: [] for s in QA_SPLITS}
    labels: list[dict[str, Any]] = []
    for q in sorted(questions, key=lambda r: r["id"]):
        row = {k: q[k] for k in QA_FEATURES if k != "hop_type"}
        row["hop_type"] = hop_type(q["evidence"])
        if splits[q["id"]] == HIDDEN_SPLIT:
            labels.append(dict(row))
            row.update(answer_variants=[], evidence=[], hop_type=None)
        by_split[splits[q["id"]]].append(row)
    doc_records = [
        {
            "document": d["document"],
            "url": d.get("url"),
            "path": f"{PDF_DIR}/{d['document']}",
            "num_pages": int(d["num_pages"]),
            "sha256": d["sha256"],
            "document_category": d["document_category"],
            "domain": d["domain"],
        }
        for d in sorted(doc_rows, key=lambda r: r["document"])
    ]
    page_rows = sorted(
        (dict(p) for p in pages if p["document"] in documents), key=lambda p: (p["document"], p["page"])
    )
    stats = sample_stats(questions, splits, doc_records, page_rows)
    split_sizes = {s: len(rows) for s, rows in by_split.items()}

    staging = out_dir.with_name(f".{out_dir.name}.staging{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for split, rows in by_split.items():
            write_parquet(rows, QA_FEATURES, staging / QA_FILE.format(split=split))
        write_parquet(doc_records, DOCUMENT_FEATURES, staging / DOCUMENTS_FILE)
        write_parquet(page_rows, PAGE_FEATURES, staging / PAGES_FILE)
        (staging / PDF_DIR).mkdir(parents=True)
        for d in doc_records:
            shutil.copy2(sample_dir / PDF_DIR / d["document"], staging / d["path"])
        (staging / "README.md").write_text(
            render_card(split_sizes, len(doc_records), len(page_rows), stats), encoding="utf-8"
        )
        write_eval_yaml(staging, SAMPLE_BENCHMARK_NAME)
        write_jsonl(test_labels_path, labels, private=True)
        old = out_dir.with_name(f".{out_dir.name}.old{os.getpid()}")
        if out_dir.exists():
            out_dir.replace(old)
        staging.replace(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    logger.info("wrote %s (%s) and %d hidden test labels", out_dir, split_sizes, len(labels))
    return BuildResult(split_sizes, len(doc_records), len(page_rows), stats)

"""`madqa setup`: generate the sample, extract its pages, build the Hub-format dataset, register offline names.

The metric's offline installation is not a data step: the `madqa setup` command (:mod:`madqa.cli.setup_cmd`) does
it after this pipeline.

Each step is skipped when its inputs are unchanged (stamps hold the digests of what a step consumed), so a second
run is a fast no-op; ``force=True`` redoes everything.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .benchmark_eval import EVAL_YAML
from .extract import ExtractionReport, OcrUnavailableError, extract_corpus, list_pdfs, sha256_file
from .io import read_jsonl
from .paths import Layout
from .register import register_offline_names, registration_cache, registration_ok
from .sample_version import SAMPLE_VERSION

logger = logging.getLogger(__name__)

STAMP_FILE = "setup-stamp.json"


@dataclass
class SetupResult:
    """What `madqa setup` did (``steps_run`` lists the steps that were not up to date)."""

    layout: Layout
    steps_run: list[str] = field(default_factory=list)
    #: the `datasets` cache the name ``madqa`` is registered in for this home (``None``: not registered)
    datasets_cache: Path | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    skipped_pdfs: list[tuple[str, str]] = field(default_factory=list)


def _read_stamp(layout: Layout) -> dict[str, Any]:
    try:
        return json.loads((layout.root / STAMP_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _write_stamp(layout: Layout, stamp: dict[str, Any]) -> None:
    layout.root.mkdir(parents=True, exist_ok=True)
    tmp = layout.root / f".{STAMP_FILE}.tmp"
    tmp.write_text(json.dumps(stamp, indent=1, sort_keys=True))
    tmp.replace(layout.root / STAMP_FILE)


def _sample_is_current(layout: Layout, seed: int) -> bool:
    try:
        manifest = json.loads((layout.sample_dir / "manifest.json").read_text())
        documents = read_jsonl(layout.sample_dir / "documents.jsonl")
    except (OSError, ValueError):
        return False
    if manifest.get("version") != SAMPLE_VERSION or manifest.get("seed") != seed:
        return False
    pdf_dir = layout.sample_dir / "documents"
    return all(
        (pdf_dir / d["document"]).is_file() and sha256_file(pdf_dir / d["document"]) == d["sha256"] for d in documents
    )


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def run_setup(
    layout: Layout | None = None,
    *,
    seed: int = 0,
    workers: int | None = None,
    force: bool = False,
    progress: bool = True,
    register: bool = True,
    extract_settings: Any = None,
) -> SetupResult:
    """Run (or skip, when up to date) every set-up step.

    Args:
        layout: where to write (default: ``MADQA_HOME``).
        seed: the sample generator's seed (also the split seed).
        workers: extraction processes (default: all CPUs).
        force: redo every step.
        progress: tqdm progress bars.
        register: register the ``madqa`` names in the `datasets`/`evaluate` caches.
        extract_settings: :class:`.pdf_text.ExtractSettings` for the page extraction (``None``: the defaults).

    Returns:
        A :class:`SetupResult`.

    Raises:
        OcrUnavailableError: when pages need OCR and Tesseract is missing (after text-layer pages were extracted).
    """
    layout = layout or Layout.default()
    result = SetupResult(layout)
    stamp = {} if force else _read_stamp(layout)

    if force or not _sample_is_current(layout, seed):
        from .sample import generate_sample  # pymupdf and the generators: only when the sample is (re)written

        logger.info("generating the sample benchmark (seed %d) in %s", seed, layout.sample_dir)
        generate_sample(layout.sample_dir, seed=seed)
        result.steps_run.append("generate")
    documents = read_jsonl(layout.sample_dir / "documents.jsonl")
    questions_digest = sha256_file(layout.sample_dir / "questions.jsonl")
    os.chmod(layout.sample_dir / "questions.jsonl", 0o600)  # all labels: also tightens a home made before #10

    build_key = _digest(
        SAMPLE_VERSION,
        seed,
        questions_digest,
        sorted(d["sha256"] for d in documents),
        *([str(extract_settings)] if extract_settings is not None else []),
    )
    built = (
        all((layout.dataset_dir / name).is_file() for name in ("README.md", EVAL_YAML))
        and layout.test_labels.is_file()
    )
    if force or stamp.get("build") != build_key or not built:
        report: ExtractionReport = extract_corpus(
            list_pdfs(layout.sample_dir / "documents"),
            cache_dir=layout.page_cache_dir,
            workers=workers,
            progress=progress,
            settings=extract_settings,
        )
        result.skipped_pdfs = report.skipped
        result.steps_run.append("extract")
        if report.ocr_missing:
            raise OcrUnavailableError(
                f"{report.ocr_needed_missing} page(s) need OCR but Tesseract is not installed: install the Debian "
                "package 'tesseract-ocr' (apt-get install tesseract-ocr) and run `madqa setup` again"
            )
        from .build import build_dataset  # `datasets` (its Features): only when the dataset is (re)built

        build = build_dataset(layout.sample_dir, report.pages, layout.dataset_dir, layout.test_labels, seed=seed)
        result.stats = build.stats
        result.steps_run.append("build")
        stamp = {"build": build_key, "stats": build.stats}
        _write_stamp(layout, stamp)
    else:
        result.stats = stamp.get("stats", {})

    if register:
        cache, other = registration_cache(layout.root, layout.dataset_dir)
        result.datasets_cache = cache
        if force or stamp.get("registered") != build_key or not registration_ok(layout.registry_dir, cache):
            register_offline_names(layout.dataset_dir, layout.registry_dir, cache=cache, home=layout.root)
            stamp["registered"] = build_key
            _write_stamp(layout, stamp)
            result.steps_run.append("register")
        if other is not None:
            logger.warning(
                "load_dataset('madqa') with the shared datasets cache %s loads MADQA_HOME %s (other data); this "
                "home's is registered in %s: load it with HF_DATASETS_CACHE=%s set, or load_dataset('%s')",
                other["cache"],
                other["home"],
                cache,
                cache,
                layout.dataset_dir,
            )
    return result


__all__ = ["OcrUnavailableError", "SetupResult", "run_setup"]

"""Prepare a dataset in the release's schema (``OxRML/MADQA`` or a local folder) for offline runs.

``madqa setup --dataset SPEC`` calls :func:`prepare_dataset`. It reads the source's questions and documents
configs (a Hub snapshot of the card and data files, or the folder itself), fetches every PDF by URL
(:mod:`.fetch`: parallel, retried, checked, resumable), obtains the page corpus (extracted here with
:mod:`.extract`, or downloaded from a published page-corpus repo, ``--pages-repo``), and writes one local folder
``$MADQA_HOME/datasets/<slug>/`` in the project's schema (configs ``default``, ``documents``, ``pages``; PDFs in
``documents/``). ``prepared.json`` is written last; :meth:`.paths.Layout.prepared_dataset` finds it, and
:func:`.load.resolve_dataset` then answers that folder for the spec, so ``--dataset SPEC`` and
``MADQA_DATASET=SPEC`` work offline from any command.

Decisions: a document that cannot be fetched or read is named (document, URL, reason), stored in
``prepared.json`` and the folder is still registered, marked *incomplete* (``madqa info`` and ``madqa run`` say
so); a rerun fetches only what is missing. The source's test split carries no labels and none are created here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .features import DOCUMENTS_SPLIT, PAGES_SPLIT, QA_SPLITS
from .load import (
    SAMPLE,
    DatasetUnavailableError,
    card_metadata,
    dataset_spec,
    folder_configs,
    normalise_question_row,
    read_folder_config,
)
from .paths import PREPARED_FILE, Layout

logger = logging.getLogger(__name__)

#: Environment variable naming a published page corpus (Hub dataset id or local folder) to use instead of OCR.
ENV_PAGES_REPO = "MADQA_PAGES_REPO"
#: Bump when the prepared folder's layout changes (part of the up-to-date key).
PREPARED_VERSION = 1
PDF_DIR = "documents"


@dataclass
class PrepareResult:
    """What :func:`prepare_dataset` did.

    Attributes:
        spec: the dataset spec as given.
        folder: the prepared folder.
        source_revision: the Hub commit, or a digest of a local source's card and data files.
        steps_run: steps that were not up to date (empty: nothing to do).
        fetched: documents downloaded in this run; present: already there.
        failures: ``{"document", "url", "reason"}`` for each document not in the corpus.
        stats: questions per split, documents, pages by text source.
    """

    spec: str
    folder: Path
    source_revision: str = ""
    steps_run: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every listed document is in the corpus."""
        return not self.failures


def _digest_files(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode() + b"\0")
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _source_files(folder: Path, configs: Sequence[str]) -> list[Path]:
    meta = card_metadata(folder)
    out = [folder / "README.md"]
    for entry in meta.get("configs", []):
        if entry.get("config_name") in configs:
            for spec in entry.get("data_files", []):
                out.extend(sorted(folder.glob(spec["path"])))
    return out


def acquire_source(spec: str, *, token: str | None = None) -> tuple[Path, str]:
    """The source as a local folder and its revision: the folder itself, or a Hub snapshot of card + data files.

    Raises:
        DatasetUnavailableError: unknown spec, a Hub repo that cannot be reached or is not a dataset in the
            release's schema.
    """
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "README.md").is_file():
            raise DatasetUnavailableError(f"{path} has no README.md with `configs:` (not a dataset folder)")
        missing = [c for c in ("default", "documents") if c not in folder_configs(path)]
        if missing:
            raise DatasetUnavailableError(f"{path}/README.md declares no config {', '.join(map(repr, missing))}")
        return path.resolve(), "local:" + _digest_files(_source_files(path, ("default", "documents")))[:16]
    if spec.count("/") != 1 or spec.startswith((".", "/", "~")):
        raise DatasetUnavailableError(f"dataset '{spec}' is neither 'sample', a dataset folder, nor a Hub repo id")
    return _hub_snapshot(spec, token=token)


def _hub_snapshot(repo_id: str, *, token: str | None) -> tuple[Path, str]:
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    try:
        card = Path(hf_hub_download(repo_id, "README.md", repo_type="dataset", token=token))
        meta = card_metadata(card.parent)
        patterns = ["README.md"] + [f["path"] for c in meta.get("configs", [])
                                    if c.get("config_name") in ("default", "documents") for f in c["data_files"]]
        folder = Path(snapshot_download(repo_id, repo_type="dataset", token=token, allow_patterns=patterns))
    except RepositoryNotFoundError:
        raise DatasetUnavailableError(
            f"Hub dataset '{repo_id}' not found (or gated/private: log in with `hf auth login`)"
        ) from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled, ConnectionError):
        raise DatasetUnavailableError(
            f"Hub dataset '{repo_id}' is not in the local cache and the Hub cannot be reached (offline?)"
        ) from None
    except EntryNotFoundError:
        raise DatasetUnavailableError(f"Hub dataset has no README.md: {repo_id}") from None
    except HfHubHTTPError as exc:
        raise DatasetUnavailableError(f"Hub dataset '{repo_id}': {exc}") from None
    missing = [c for c in ("default", "documents") if c not in folder_configs(folder)]
    if missing:
        raise DatasetUnavailableError(f"Hub dataset '{repo_id}' declares no config {', '.join(map(repr, missing))}")
    return folder, folder.name  # snapshot folders are named by the commit hash


def _first_split(data: Any, preferred: str) -> Any:
    return data[preferred] if preferred in data else data[next(iter(data))]


#: Column names accepted for a document's file name and its URL, first match wins (the release uses the first).
NAME_COLUMNS = ("document", "file_name", "filename")
URL_COLUMNS = ("url", "pdf_url", "download_url", "link")
_DOCUMENTCLOUD_PAGE = re.compile(r"^https?://(?:www\.)?documentcloud\.org/documents/(\d+)-([A-Za-z0-9_-]+?)(?:\.html)?/?$")


def pdf_url(url: str) -> str:
    """The PDF's own URL: a DocumentCloud *viewer* page URL is turned into its PDF asset; others pass unchanged.

    >>> pdf_url("https://www.documentcloud.org/documents/2411-annual-report")
    'https://assets.documentcloud.org/documents/2411/annual-report.pdf'
    >>> pdf_url("https://example.org/a.pdf")
    'https://example.org/a.pdf'
    """
    match = _DOCUMENTCLOUD_PAGE.match(url.strip())
    if match is None:
        return url.strip()
    return f"https://assets.documentcloud.org/documents/{match.group(1)}/{match.group(2)}.pdf"


def _first(row: Mapping[str, Any], columns: Sequence[str]) -> str:
    return next((str(row[c]) for c in columns if row.get(c)), "")


def _document_requests(folder: Path, rows: Sequence[Mapping[str, Any]]) -> tuple[list[Any], list[dict[str, str]]]:
    """Fetch requests for the documents config (a local ``path`` wins over the ``url``) and the rows refused."""
    from .fetch import FetchRequest

    requests, refused, seen = [], [], set()
    for i, row in enumerate(rows):
        name = str(row.get("document") or "")
        url = pdf_url(str(row.get("url") or ""))
        where = f"documents row {i + 1}"
        if not name or Path(name).name != name or name.startswith("."):  # no paths, no hidden/reserved names
            refused.append({"document": name, "url": url, "reason": f"{where}: unsafe, hidden or empty file name"})
            continue
        if name in seen:
            refused.append({"document": name, "url": url, "reason": f"{where}: duplicate document name"})
            continue
        seen.add(name)
        local = folder / str(row["path"]) if row.get("path") else None
        if local is not None and local.is_file():
            url = str(local)
        if not url:
            refused.append({"document": name, "url": "", "reason": f"{where}: neither a url nor a local path"})
            continue
        size = row.get("size") if isinstance(row.get("size"), int) else None
        requests.append(FetchRequest(name, url, sha256=row.get("sha256") or None, size=size))
    return requests, refused


def _tesseract_version() -> str | None:
    try:
        out = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (out.stdout or out.stderr).splitlines()
    return lines[0].strip() if lines else None


def extraction_settings(ocr: bool) -> dict[str, Any]:
    """The settings that determine the extracted page texts (recorded in ``prepared.json`` and published cards)."""
    from . import extract

    return {"extractor_version": extract.EXTRACTOR_VERSION, "ocr": ocr, "ocr_dpi": extract.OCR_DPI,
            "ocr_language": extract.OCR_LANGUAGE, "min_text_chars": extract.MIN_TEXT_CHARS,
            "tesseract": _tesseract_version() if ocr else None}  # fmt: skip


def _read_prepared(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / PREPARED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_prepared(spec: str, layout: Layout | None = None) -> dict[str, Any] | None:
    """The ``prepared.json`` record of a prepared spec (``None`` when it was never prepared)."""
    folder = (layout or Layout.default()).prepared_dataset(spec)
    return _read_prepared(folder) if folder is not None else None


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def prepare_dataset(
    spec: str,
    *,
    layout: Layout | None = None,
    pages_repo: str | None = None,
    workers: int | None = None,
    fetch_settings: Any = None,
    ocr: bool = True,
    force: bool = False,
    progress: bool = True,
    token: str | None = None,
) -> PrepareResult:
    """Prepare ``spec`` in ``$MADQA_HOME/datasets/<slug>`` (idempotent; see the module docstring).

    Args:
        spec: a Hub dataset id or a folder in the release's schema (not ``sample``: that is :func:`.run_setup`).
        layout: where to write (default ``MADQA_HOME``).
        pages_repo: a published page corpus (Hub id or folder) to use instead of extracting; default
            ``MADQA_PAGES_REPO``.
        workers: extraction processes.
        fetch_settings: :class:`.fetch.FetchSettings` (parallelism, timeout, retries).
        ocr: OCR pages without a usable text layer.
        force: redo every step.
        progress: progress bars.
        token: Hub token (default: the logged-in one).

    Raises:
        DatasetUnavailableError: a bad spec or pages repo (the message says what to fix).
        OcrUnavailableError: pages need OCR and Tesseract is missing (text-layer pages were extracted and cached).
    """
    from .extract import ExtractionReport, OcrUnavailableError, extract_corpus
    from .fetch import FetchSettings, fetch_documents
    from .pages_repo import load_pages_repo

    if spec == SAMPLE:
        raise ValueError("the sample is built by run_setup, not prepare_dataset")
    layout = layout or Layout.default()
    pages_repo = pages_repo if pages_repo is not None else (os.environ.get(ENV_PAGES_REPO) or None)
    source, revision = acquire_source(spec, token=token)
    target = layout.prepared_dir(spec)
    result = PrepareResult(spec, target, revision)
    previous = {} if force else _read_prepared(target)

    questions = {s: [normalise_question_row(r) for r in rows]
                 for s, rows in read_folder_config(source, "default").items() if s in QA_SPLITS}  # fmt: skip
    doc_rows = [{**r, "document": _first(r, NAME_COLUMNS), "url": _first(r, URL_COLUMNS) or None}
                for r in _first_split(read_folder_config(source, "documents"), DOCUMENTS_SPLIT)]
    requests, refused = _document_requests(source, doc_rows)
    settings = fetch_settings or FetchSettings()
    fetch = fetch_documents(requests, target / PDF_DIR, settings, progress=progress)
    result.fetched, result.present = list(fetch.fetched), list(fetch.present)
    failures = {f["document"]: f for f in refused}
    failures.update({f.document: {"document": f.document, "url": f.url, "reason": f.reason} for f in fetch.failed})
    if fetch.fetched:
        result.steps_run.append("fetch")
    available = sorted(r.document for r in requests if r.document not in failures)
    paths = [target / PDF_DIR / name for name in available]

    pages_info: dict[str, Any]
    if pages_repo:
        pages, pages_info = load_pages_repo(pages_repo, token=token)
        made_from = pages_info.get("corpus_source_revision")
        if made_from and made_from != revision:
            logger.warning("the page corpus %s was extracted from revision %s of its source, this is %s: documents "
                           "it lacks are reported below", pages_repo, made_from, revision)  # fmt: skip
    elif "pages" in folder_configs(source):
        pages = [dict(r) for r in _first_split(read_folder_config(source, "pages"), PAGES_SPLIT)]
        pages_info = {"source": "source dataset's pages config"}
    else:
        pages, pages_info = [], {"source": "extracted", "settings": extraction_settings(ocr)}
    key = _key(PREPARED_VERSION, revision, [asdict(r) for r in requests], sorted(failures), pages_info)
    up_to_date = (previous.get("key") == key and (target / "README.md").is_file() and not result.fetched)
    if up_to_date:
        result.failures = list(previous.get("failures", []))
        result.stats = previous.get("stats", {})
        return result

    if pages_info["source"] == "extracted":
        report: ExtractionReport = extract_corpus(paths, cache_dir=layout.page_cache_dir, workers=workers, ocr=ocr,
                                                  progress=progress)  # fmt: skip
        result.steps_run.append("extract")
        if report.ocr_missing:
            raise OcrUnavailableError(
                f"{report.ocr_needed_missing} page(s) need OCR but Tesseract is not installed: install the Debian "
                f"package 'tesseract-ocr' and run `madqa setup --dataset {spec}` again (or pass --no-ocr)"
            )
        by_name = {r.document: r for r in requests}
        for name, reason in report.skipped:
            failures[name] = {"document": name, "url": by_name[name].url if name in by_name else "",
                              "reason": f"unreadable PDF: {reason}"}  # fmt: skip
        pages = report.pages
    with_pages = {str(p["document"]) for p in pages}
    for name in available:
        if name not in failures and name not in with_pages:
            failures[name] = {"document": name, "url": next(r.url for r in requests if r.document == name),
                              "reason": f"no pages for it in the page corpus ({pages_info['source']})"}  # fmt: skip
    known = {r.document for r in requests} - set(failures)
    pages = sorted((p for p in pages if p["document"] in known), key=lambda p: (p["document"], int(p["page"])))
    result.failures = [failures[d] for d in sorted(failures)]

    from .release_write import write_prepared

    result.stats = write_prepared(
        target, source=source, spec=spec, revision=revision, questions=questions, documents=doc_rows,
        pages=pages, failures=failures, pdf_dir=PDF_DIR,
    )  # fmt: skip
    result.steps_run.append("build")
    record = {
        "version": PREPARED_VERSION, "spec": spec, "source_revision": revision, "key": key,
        "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "pages": pages_info,
        "complete": not failures, "failures": result.failures, "stats": result.stats,
        "license": card_metadata(source).get("license"),
    }  # fmt: skip
    tmp = target / f".{PREPARED_FILE}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(target / PREPARED_FILE)
    logger.info("prepared %s in %s (%d documents, %d pages, %d failure(s))", spec, target,
                result.stats.get("documents", 0), result.stats.get("pages", 0), len(failures))  # fmt: skip
    return result


def ensure_dataset(spec: str | None = None, *, pages_repo: str | None = None, layout: Layout | None = None,
                   progress: bool = False, workers: int | None = None) -> Path:
    """A local folder for ``spec``, preparing it when needed (what the Space does at start).

    ``sample`` (or nothing): the idempotent sample set-up, then its folder. A local folder that already has a
    ``pages`` config: the folder itself. Otherwise the prepared folder, prepared now if it is not yet (or if it was
    prepared from another pages repo). An existing preparation is used as it is, without contacting the Hub, so a
    restart never depends on the network; ``madqa setup --dataset SPEC`` brings it up to date.

    Raises:
        DatasetUnavailableError: a bad spec (the message names it).
        OcrUnavailableError: see :func:`prepare_dataset`.
    """
    layout = layout or Layout.default()
    spec = dataset_spec(spec)
    pages_repo = pages_repo or os.environ.get(ENV_PAGES_REPO) or None
    if spec == SAMPLE:
        from .pipeline import run_setup

        return run_setup(layout, progress=progress).layout.dataset_dir
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "README.md").is_file() and "pages" in folder_configs(path):
        return path.resolve()
    found = layout.prepared_dataset(spec)
    recorded = (_read_prepared(found).get("pages") or {}).get("repo") if found is not None else None
    if found is not None and (not pages_repo or recorded == pages_repo):
        return found  # no network once prepared: a restart must not depend on the Hub (`madqa setup` refreshes)
    return prepare_dataset(spec, layout=layout, pages_repo=pages_repo, workers=workers, progress=progress).folder


def remove_prepared(spec: str, layout: Layout | None = None) -> bool:
    """Delete a prepared folder (``madqa setup --dataset SPEC --force`` starts from nothing); ``True`` if removed."""
    folder = (layout or Layout.default()).prepared_dir(spec)
    if not folder.exists():
        return False
    shutil.rmtree(folder)
    return True


def summarize_prepared(record: Mapping[str, Any]) -> dict[str, Any]:
    """The ``madqa info`` figures of a prepared dataset: fetched/failed documents, pages by source, questions."""
    stats = record.get("stats", {})
    return {
        "source_revision": record.get("source_revision"),
        "prepared_at": record.get("prepared_at"),
        "complete": bool(record.get("complete")),
        "documents_listed": stats.get("documents_listed"),
        "documents_in_corpus": stats.get("documents"),
        "documents_failed": len(record.get("failures", [])),
        "failures": list(record.get("failures", [])),
        "pages_source": (record.get("pages") or {}).get("source"),
        "text_sources": stats.get("text_sources", {}),
        "questions": stats.get("questions", {}),
    }


def count_text_sources(pages: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Pages per ``text_source``."""
    return dict(Counter(str(p.get("text_source")) for p in pages))

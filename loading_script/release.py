"""Prepare a dataset in the release's schema (``OxRML/MADQA`` or a local folder) for offline runs.

``madqa setup --dataset SPEC`` calls :func:`prepare_dataset`. It reads the source's questions and documents
configs (a Hub snapshot of the card and data files, or the folder itself), fetches every PDF by URL
(:mod:`.fetch`: parallel, retried, checked, resumable), obtains the page corpus (extracted here with
:mod:`.extract`, or downloaded from a published page-corpus repo, ``--pages-repo``), and writes one local folder
``$MADQA_HOME/datasets/<slug>/`` in the project's schema (configs ``default``, ``documents``, ``pages``; PDFs in
``documents/``). ``prepared.json`` is written last; :meth:`.paths.Layout.prepared_dataset` finds it, and
:func:`.load.resolve_dataset` then answers that folder for the spec, so ``--dataset SPEC`` and
``MADQA_DATASET=SPEC`` work offline from any command.

A PDF attached to a document is a document of its own, ``<parent>#<name>`` (:mod:`.release_attachments`).

Decisions: a document that cannot be fetched or read is named (document, URL, reason), stored in
``prepared.json`` and the folder is still registered, marked *incomplete* (``madqa info`` and ``madqa run`` say
so); a rerun fetches only what is missing. The source's test split carries no labels and none are created here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .features import DOCUMENTS_SPLIT, PAGES_SPLIT, QA_SPLITS
from .load import (
    SAMPLE,
    card_metadata,
    dataset_spec,
    folder_configs,
    normalise_question_row,
    read_folder_config,
)
from .paths import PREPARED_FILE, Layout
from .prepared import extraction_settings, read_prepared, read_prepared_folder
from .release_attachments import attachment_roots, write_attachments
from .release_source import NAME_COLUMNS, URL_COLUMNS, acquire_source, document_requests, first, first_split

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


def dataset_provenance(dataset: str | os.PathLike[str] | None = None, layout: Layout | None = None) -> dict[str, Any]:
    """``{"name", "revision"}`` of a dataset spec, stored in every results line and compared with the gold's.

    ``sample`` (or the folder it is built in, as the Space names it): revision ``<generator version>+seed<seed>``
    from the sample's manifest. A prepared spec (or a
    prepared folder): the ``source_revision`` of ``prepared.json``, named by the spec it was prepared from. Any
    other folder is named by its absolute path, a Hub id by itself; their revision is unknown (``None``): finding
    it would need the network. Never raises (provenance must not stop a run); unreadable files give ``None``.
    """
    layout = layout or Layout.default()
    spec = dataset_spec(dataset)
    if spec != SAMPLE and _same_folder(spec, layout.dataset_dir):  # the built sample's folder (the Space's) is it
        spec = SAMPLE
    if spec == SAMPLE:
        try:
            manifest = json.loads((layout.sample_dir / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = None
        known = isinstance(manifest, dict) and manifest.get("version") is not None
        revision = f"{manifest['version']}+seed{manifest.get('seed')}" if known else None  # type: ignore[index]
        return {"name": SAMPLE, "revision": revision}
    folder = Path(spec).expanduser()
    prepared = read_prepared(spec, layout) or (read_prepared_folder(folder) if folder.is_dir() else None)
    if prepared:
        return {"name": str(prepared.get("spec") or spec), "revision": prepared.get("source_revision") or None}
    return {"name": str(folder.resolve()) if folder.is_dir() else spec, "revision": None}


def _same_folder(spec: str, folder: Path) -> bool:
    """Whether ``spec`` names ``folder`` (never raises)."""
    try:
        return Path(spec).expanduser().resolve() == folder.resolve()
    except (OSError, RuntimeError, ValueError):
        return False


@contextmanager
def _exclusive(lock_path: Path, spec: str) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (waiting, with a message, while another process holds it)."""
    import fcntl

    with open(lock_path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info("waiting for another `madqa setup --dataset %s` to finish", spec)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


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
    extract_settings: Any = None,
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
        extract_settings: :class:`.pdf_text.ExtractSettings` for the extraction (``None``: the defaults).

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
    target.mkdir(parents=True, exist_ok=True)
    with _exclusive(target / ".lock", spec):  # a second `madqa setup` (or a Space start) of the spec waits
        result = PrepareResult(spec, target, revision)
        previous = {} if force else read_prepared_folder(target)

        questions = {
            s: [normalise_question_row(r) for r in rows]
            for s, rows in read_folder_config(source, "default").items()
            if s in QA_SPLITS
        }
        doc_rows = [
            {**r, "document": first(r, NAME_COLUMNS), "url": first(r, URL_COLUMNS) or None}
            for r in first_split(read_folder_config(source, "documents"), DOCUMENTS_SPLIT)
        ]
        requests, refused = document_requests(source, doc_rows, remote=not Path(spec).expanduser().is_dir())
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
                logger.warning(
                    "the page corpus %s was extracted from revision %s of its source, this is %s: "
                    "documents it lacks are reported below",
                    pages_repo,
                    made_from,
                    revision,
                )
        elif "pages" in folder_configs(source):
            pages = [dict(r) for r in first_split(read_folder_config(source, "pages"), PAGES_SPLIT)]
            pages_info = {"source": "source dataset's pages config"}
        else:
            pages, pages_info = [], {"source": "extracted", "settings": extraction_settings(ocr, extract_settings)}
        key = _key(PREPARED_VERSION, revision, [asdict(r) for r in requests], sorted(failures), pages_info)
        up_to_date = previous.get("key") == key and (target / "README.md").is_file() and not result.fetched
        if up_to_date:
            result.failures = list(previous.get("failures", []))
            result.stats = previous.get("stats", {})
            return result

        if pages_info["source"] == "extracted":
            report: ExtractionReport = extract_corpus(
                paths,
                cache_dir=layout.page_cache_dir,
                workers=workers,
                ocr=ocr,
                progress=progress,
                settings=extract_settings,
            )
            result.steps_run.append("extract")
            if report.ocr_missing:
                raise OcrUnavailableError(
                    f"{report.ocr_needed_missing} page(s) need OCR but Tesseract is not installed: install the Debian "
                    f"package 'tesseract-ocr' and run `madqa setup --dataset {spec}` again (or pass --no-ocr)"
                )
            by_name = {r.document: r for r in requests}
            for name, reason in report.skipped:
                failures[name] = {
                    "document": name,
                    "url": by_name[name].url if name in by_name else "",
                    "reason": f"unreadable PDF: {reason}",
                }
            pages = report.pages
        with_pages = {str(p["document"]) for p in pages}
        for name in available:
            if name not in failures and name not in with_pages:
                url = next(r.url for r in requests if r.document == name)
                reason = f"no pages for it in the page corpus ({pages_info['source']})"
                failures[name] = {"document": name, "url": url, "reason": reason}
        known = {r.document for r in requests} - set(failures)
        attached = attachment_roots({str(p["document"]) for p in pages}, known)  # attached PDFs: documents too
        pages = sorted(
            (p for p in pages if p["document"] in known or p["document"] in attached),
            key=lambda p: (p["document"], int(p["page"])),
        )
        result.failures = [failures[d] for d in sorted(failures)]

        from .release_write import write_prepared

        unwritten = write_attachments(target / PDF_DIR, attached)
        result.stats = write_prepared(
            target,
            source=source,
            spec=spec,
            revision=revision,
            questions=questions,
            documents=doc_rows,
            pages=pages,
            failures=failures,
            pdf_dir=PDF_DIR,
            attachments=attached,
            unwritten=unwritten,
        )
        result.steps_run.append("build")
        record = {
            "version": PREPARED_VERSION,
            "spec": spec,
            "source_revision": revision,
            "key": key,
            "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "pages": pages_info,
            "complete": not failures,
            "failures": result.failures,
            "stats": result.stats,
            "attachments": attached,
            "license": card_metadata(source).get("license"),
        }
        tmp = target / f".{PREPARED_FILE}.tmp{os.getpid()}"
        tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
        tmp.replace(target / PREPARED_FILE)
        logger.info(
            "prepared %s in %s (%d documents, %d pages, %d failure(s))",
            spec,
            target,
            result.stats.get("documents", 0),
            result.stats.get("pages", 0),
            len(failures),
        )
        return result


def ensure_dataset(
    spec: str | None = None,
    *,
    pages_repo: str | None = None,
    layout: Layout | None = None,
    progress: bool = False,
    workers: int | None = None,
) -> Path:
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
    recorded = (read_prepared_folder(found).get("pages") or {}).get("repo") if found is not None else None
    if found is not None and (not pages_repo or recorded == pages_repo):
        return found  # no network once prepared: a restart must not depend on the Hub (`madqa setup` refreshes)
    return prepare_dataset(spec, layout=layout, pages_repo=pages_repo, workers=workers, progress=progress).folder


def remove_prepared(spec: str, layout: Layout | None = None) -> bool:
    """Delete a prepared folder (``madqa setup --dataset SPEC --redo`` starts from nothing); ``True`` if removed."""
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
        "attached_documents": stats.get("attachments", 0),
        "documents_failed": len(record.get("failures", [])),
        "failures": list(record.get("failures", [])),
        "pages_source": (record.get("pages") or {}).get("source"),
        "text_sources": stats.get("text_sources", {}),
        "questions": stats.get("questions", {}),
    }

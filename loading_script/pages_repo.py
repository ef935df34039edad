"""A published page corpus: push the extracted ``pages`` of a prepared dataset to the Hub, and read one back.

OCR of the release takes hours, so the maintainers extract it once and publish it
(``madqa publish pages --dataset SPEC --repo ORG/NAME``); everyone else passes ``--pages-repo ORG/NAME`` (or sets
``MADQA_PAGES_REPO``) to ``madqa setup --dataset SPEC`` and skips extraction. The corpus repo is an ordinary Hub
dataset (one ``pages`` config, the project's page features, the source's licence) whose card also records, under
the ``madqa:`` key, the source dataset, its revision and the extraction settings, so a reader can tell whether the
corpus matches the questions it is used with.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .build import PAGES_FILE
from .features import PAGE_FEATURES, PAGES_SPLIT
from .load import DatasetUnavailableError, card_metadata, dataset_spec, folder_configs, read_folder_config

logger = logging.getLogger(__name__)

#: Format of the corpus repo (the ``madqa.pages_format`` card key).
PAGES_FORMAT = 1
PAGES_CONFIG = "pages"


@dataclass
class PublishPagesResult:
    """What :func:`publish_pages` pushed."""

    repo_id: str
    url: str
    files: list[str] = field(default_factory=list)
    pages: int = 0
    documents: int = 0


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


def pages_card(
    *,
    source: str,
    revision: str,
    license_id: str | None,
    extraction: Mapping[str, Any],
    num_pages: int,
    num_documents: int,
    text_sources: Mapping[str, int],
) -> str:
    """The corpus repo's ``README.md``: HF card metadata (configs, features, licence) plus the provenance."""
    import datasets
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard, DatasetCardData

    data = DatasetCardData(
        license=license_id or "other",
        pretty_name=f"Page-text corpus of {source}",
        language=["en"],
        task_categories=["text-retrieval"],
        tags=["madqa", "pdf", "ocr", "page-text"],
        size_categories=[_size_category(num_pages)],
        source_datasets=[source],
        configs=[
            {
                "config_name": PAGES_CONFIG,
                "default": True,
                "data_files": [{"split": PAGES_SPLIT, "path": PAGES_FILE.replace("-00000-of-00001", "-*")}],
            }
        ],
        madqa={
            "pages_format": PAGES_FORMAT,
            "source": source,
            "source_revision": revision,
            "extraction": dict(extraction),
        },
    )
    infos = DatasetInfosDict()
    splits = datasets.SplitDict()
    splits.add(datasets.SplitInfo(name=PAGES_SPLIT, num_examples=num_pages))
    infos[PAGES_CONFIG] = datasets.DatasetInfo(features=PAGE_FEATURES, config_name=PAGES_CONFIG, splits=splits)
    infos.to_dataset_card_data(data)
    by_source = ", ".join(f"{k} {v}" for k, v in sorted(text_sources.items()))
    settings = "\n".join(f"| `{k}` | {v} |" for k, v in extraction.items())
    body = f"""
# Page-text corpus of `{source}`

The text of every page of the documents of [`{source}`](https://huggingface.co/datasets/{source}) at revision
`{revision}`: {num_pages} pages of {num_documents} PDFs ({by_source}). Produced by `madqa setup --dataset {source}`
and published with `madqa publish pages`, so that users of the benchmark need not OCR the collection again.

## Use

```bash
madqa setup --dataset {source} --pages-repo THIS_REPO
```

## Fields

| field | meaning |
|---|---|
| `document` | file name of the PDF, as in the source's `documents` config (a PDF attached to one: `<doc>#<name>`) |
| `page` | 1-based page number |
| `text` | the page's text (the PDF's text layer, else Tesseract OCR) |
| `text_source` | `pdf` (text layer), `ocr` (Tesseract), `pdf+ocr` (short layer over a scan, and OCR), `none` |

## Extraction settings

| setting | value |
|---|---|
{settings}

## Licence

The texts are derived from the source's documents; the source's terms apply (`{license_id or "see the source"}`).
"""
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}").content


def publish_pages(
    dataset: str | None,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    allow_incomplete: bool = False,
    api: Any = None,
) -> PublishPagesResult:
    """Push the page corpus of a prepared dataset (or any folder with a ``pages`` config) to ``repo_id``.

    Raises:
        DatasetUnavailableError: nothing prepared for ``dataset``, or an incomplete preparation without
            ``allow_incomplete`` (a corpus missing documents would silently change everyone's results).
    """
    from .load import SAMPLE, resolve_dataset
    from .prepared import read_prepared_folder

    spec = dataset_spec(dataset)
    folder = resolve_dataset(spec)
    if not isinstance(folder, Path) or PAGES_CONFIG not in folder_configs(folder):
        raise DatasetUnavailableError(f"no page corpus for '{spec}': run `madqa setup --dataset {spec}` first")
    record = read_prepared_folder(folder)
    if record and not record.get("complete") and not allow_incomplete:
        raise DatasetUnavailableError(
            f"the preparation of '{spec}' is incomplete ({len(record.get('failures', []))} document(s) missing, "
            "see `madqa info`): fix or rerun `madqa setup`, or pass --allow-incomplete"
        )
    rows = list(read_folder_config(folder, PAGES_CONFIG)[PAGES_SPLIT])
    from collections import Counter

    from .prepared import extraction_settings

    pages_info = record.get("pages", {}) if record else {}
    extraction = pages_info.get("settings") or extraction_settings(True)
    source = "sample" if spec == SAMPLE else spec
    card = pages_card(
        source=source,
        revision=str(record.get("source_revision", "local")),
        extraction=extraction,
        license_id=(record or {}).get("license") or card_metadata(folder).get("license"),
        num_pages=len(rows),
        num_documents=len({r["document"] for r in rows}),
        text_sources=Counter(str(r["text_source"]) for r in rows),
    )
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="madqa-pages-") as tmp:
        staged = Path(tmp)
        (staged / "README.md").write_text(card, encoding="utf-8")
        sources = sorted((folder / "data" / "pages").glob("pages-*.parquet"))
        if len(sources) != 1:
            raise DatasetUnavailableError(f"{folder}: expected one data/pages/pages-*.parquet, found {len(sources)}")
        (staged / PAGES_FILE).parent.mkdir(parents=True)
        shutil.copyfile(sources[0], staged / PAGES_FILE)
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(
            folder_path=str(staged),
            repo_id=repo_id,
            repo_type="dataset",
            commit_message=f"MADQA page corpus of {source} ({len(rows)} pages)",
        )
        files = sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file())
    logger.info("published %d pages to %s", len(rows), repo_id)
    return PublishPagesResult(repo_id, str(url), files, len(rows), len({r["document"] for r in rows}))


def _pages_folder(repo: str, token: str | None) -> Path:
    path = Path(repo).expanduser()
    if path.is_dir():
        return path.resolve()
    if repo.count("/") != 1 or repo.startswith((".", "/", "~")):
        raise DatasetUnavailableError(f"pages repo '{repo}' is neither a folder nor a Hub dataset id")
    from huggingface_hub import snapshot_download

    from .release_source import hub_errors

    with hub_errors(f"pages repo '{repo}'"):
        return Path(
            snapshot_download(repo, repo_type="dataset", token=token, allow_patterns=["README.md", "data/pages/*"])
        )


def _pages_file(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``madqa extract -o`` file (``.parquet`` or ``.jsonl``)."""
    if path.suffix == ".jsonl":
        from .io import read_jsonl

        return [{k: r.get(k) for k in PAGE_FEATURES} for r in read_jsonl(path)]
    if path.suffix != ".parquet":
        raise DatasetUnavailableError(f"pages file {path}: expected a .parquet or .jsonl file from `madqa extract`")
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def load_pages_repo(repo: str, *, token: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The page rows of a published corpus (Hub id, folder, or a ``madqa extract`` output file) and provenance."""
    if Path(repo).expanduser().is_file():
        rows = _pages_file(Path(repo).expanduser())
        missing = [k for k in PAGE_FEATURES if rows and k not in rows[0]]
        if missing:
            raise DatasetUnavailableError(f"pages file {repo}: the pages lack the field(s) {', '.join(missing)}")
        return rows, {"source": f"pages file {repo}", "repo": repo}
    folder = _pages_folder(repo, token)
    if not (folder / "README.md").is_file() or PAGES_CONFIG not in folder_configs(folder):
        raise DatasetUnavailableError(f"pages repo '{repo}' has no README.md declaring a '{PAGES_CONFIG}' config")
    data = read_folder_config(folder, PAGES_CONFIG)
    rows = [dict(r) for r in data[PAGES_SPLIT if PAGES_SPLIT in data else next(iter(data))]]
    missing = [k for k in PAGE_FEATURES if rows and k not in rows[0]]
    if missing:
        raise DatasetUnavailableError(f"pages repo '{repo}': the pages lack the field(s) {', '.join(missing)}")
    meta = card_metadata(folder).get("madqa") or {}
    info = {
        "source": f"pages repo {repo}",
        "repo": repo,
        "revision": folder.name if not Path(repo).expanduser().is_dir() else None,
        "corpus_source": meta.get("source"),
        "corpus_source_revision": meta.get("source_revision"),
        "settings": meta.get("extraction"),
    }
    return rows, info

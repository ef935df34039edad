"""Where a release's questions and documents come from: the source folder or Hub snapshot, and the fetch list.

:func:`acquire_source` turns a spec into a local folder in the release's schema plus its revision (the Hub commit,
or a digest of a local folder's card and data files); :func:`document_requests` turns the documents config into
fetch requests, refusing unsafe names and naming each refused row.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .load import DatasetUnavailableError, card_metadata, folder_configs


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


@contextmanager
def hub_errors(what: str) -> Iterator[None]:
    """Turn the Hub client's errors while reading ``what`` (e.g. "Hub dataset 'org/x'") into one clear line."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    try:
        yield
    except RepositoryNotFoundError:
        raise DatasetUnavailableError(f"{what} not found (or gated/private: log in with `hf auth login`)") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled, ConnectionError):
        raise DatasetUnavailableError(
            f"{what} is not in the local cache and the Hub cannot be reached (offline?)"
        ) from None
    except EntryNotFoundError:
        raise DatasetUnavailableError(f"{what} has no README.md") from None
    except HfHubHTTPError as exc:
        raise DatasetUnavailableError(f"{what}: {exc}") from None


def _hub_snapshot(repo_id: str, *, token: str | None) -> tuple[Path, str]:
    from huggingface_hub import hf_hub_download, snapshot_download

    with hub_errors(f"Hub dataset '{repo_id}'"):
        card = Path(hf_hub_download(repo_id, "README.md", repo_type="dataset", token=token))
        meta = card_metadata(card.parent)
        patterns = ["README.md"] + [
            f["path"]
            for c in meta.get("configs", [])
            if c.get("config_name") in ("default", "documents")
            for f in c["data_files"]
        ]
        folder = Path(snapshot_download(repo_id, repo_type="dataset", token=token, allow_patterns=patterns))
    missing = [c for c in ("default", "documents") if c not in folder_configs(folder)]
    if missing:
        raise DatasetUnavailableError(f"Hub dataset '{repo_id}' declares no config {', '.join(map(repr, missing))}")
    return folder, folder.name  # snapshot folders are named by the commit hash


def first_split(data: Any, preferred: str) -> Any:
    return data[preferred] if preferred in data else data[next(iter(data))]


#: Column names accepted for a document's file name and its URL, first match wins (the release uses the first).
NAME_COLUMNS = ("document", "file_name", "filename")
URL_COLUMNS = ("url", "pdf_url", "download_url", "link")
_DOCUMENTCLOUD_PAGE = re.compile(
    r"^https?://(?:www\.)?documentcloud\.org/documents/(\d+)-([A-Za-z0-9_-]+?)(?:\.html)?/?$"
)


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


def first(row: Mapping[str, Any], columns: Sequence[str]) -> str:
    return next((str(row[c]) for c in columns if row.get(c)), "")


def document_requests(
    folder: Path, rows: Sequence[Mapping[str, Any]], *, remote: bool = False
) -> tuple[list[Any], list[dict[str, str]]]:
    """Fetch requests for the documents config (a local ``path`` wins over the ``url``) and the rows refused.

    A ``path`` must stay inside ``folder``; for a ``remote`` source (a Hub snapshot) only http(s) URLs are fetched:
    a dataset someone else wrote must not make the set-up copy this machine's files (labels, keys) anywhere.
    """
    from .fetch import FetchRequest

    root = folder.resolve()

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
        local = (folder / str(row["path"])).resolve() if row.get("path") else None
        if local is not None and root in local.parents and local.is_file():
            url = str(local)
        elif remote and url and not url.lower().startswith(("http://", "https://")):
            refused.append(
                {"document": name, "url": url, "reason": f"{where}: only http(s) URLs are fetched for a Hub dataset"}
            )
            continue
        if not url:
            refused.append({"document": name, "url": "", "reason": f"{where}: neither a url nor a local path"})
            continue
        size = row.get("size") if isinstance(row.get("size"), int) else None
        requests.append(FetchRequest(name, url, sha256=row.get("sha256") or None, size=size))
    return requests, refused

"""Read MADQA from the local sample, a local folder in the release's schema, or the Hub release.

The source is a *dataset spec*: ``"sample"`` (the folder `madqa setup` wrote), a path to a folder, or a Hub
repo id (``OxRML/MADQA``). It comes from the caller, else the ``MADQA_DATASET`` environment variable, else
``"sample"`` — the network is used only when a Hub id is asked for that ``madqa setup --dataset SPEC`` did not
prepare (and never with ``HF_HUB_OFFLINE`` set); when that read fails, :class:`DatasetNotPreparedError` says, in one
line, to run that command. Local folders are read through the
``parquet`` builder using the card's ``configs:``, so they never touch the ``madqa`` cache name registered for
the literal ``load_dataset("madqa")``. Rows are normalised to :mod:`.features` (``hop_type`` derived when absent,
missing document columns filled with ``None``).
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .features import (
    DOCUMENT_COLUMNS,
    DOCUMENTS_SPLIT,
    HIDDEN_SPLIT,
    LEGACY_DOCUMENTS_SPLIT,
    PAGES_SPLIT,
    QA_COLUMNS,
    QA_SPLITS,
    hop_type,
)
from .io import quiet_datasets, read_jsonl
from .paths import PREPARED_FILE, Layout

logger = logging.getLogger(__name__)

DEFAULT_RELEASE = "OxRML/MADQA"
SAMPLE = "sample"
ENV_DATASET = "MADQA_DATASET"


class DatasetUnavailableError(RuntimeError):
    """The requested dataset or split cannot be read; the message says how to fix it."""


class DatasetNotPreparedError(DatasetUnavailableError):
    """A Hub dataset that ``madqa setup --dataset SPEC`` never prepared here, and the Hub cannot be read.

    Raised at once when the Hub is switched off (``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE``) and nothing is cached,
    or after the Hub client's own retries when it cannot be reached. The message is one line naming the command that
    prepares the dataset; commands stop on it rather than trying again.
    """


_OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_TRUE = {"1", "ON", "YES", "TRUE"}
#: The Hub client logs two WARNING lines per retry of an unreachable host (ten in all before it gives up).
_HUB_RETRY_LOGGER = "huggingface_hub.utils._http"
_MAX_REASON_CHARS = 200
#: Parsed card headers by (README path, inode, mtime, size): one start of the Space reads the same card about ten times
#: (every split and config), and PyYAML's pure-Python parser takes ~20 ms each (issue 47).
_CARDS: dict[tuple[str, int, int, int], dict[str, Any]] = {}


def hub_offline() -> bool:
    """Whether the user switched the Hub off (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set to 1/ON/YES/TRUE)."""
    return any(os.environ.get(name, "").strip().upper() in _TRUE for name in _OFFLINE_VARS)


def setup_command(spec: str) -> str:
    """The command that prepares ``spec`` for offline use."""
    return f"madqa setup --dataset {spec}"


def dataset_spec(dataset: str | os.PathLike[str] | None = None) -> str:
    """The spec asked for: ``dataset`` itself, else ``MADQA_DATASET``, else ``"sample"``."""
    return str(dataset) if dataset is not None else (os.environ.get(ENV_DATASET) or SAMPLE)


def resolve_dataset(
    dataset: str | os.PathLike[str] | None = None, layout: Layout | None = None, *, prepared: bool = True
) -> str | Path:
    """Turn a dataset spec into a local folder (``Path``) or a Hub repo id (``str``).

    A spec that ``madqa setup --dataset SPEC`` prepared resolves to its prepared folder (questions, documents
    fetched, pages, all local), so the Hub id works offline afterwards; ``prepared=False`` skips that lookup
    (used by the preparation itself, which reads the source).
    """
    spec = dataset_spec(dataset)
    if prepared and spec != SAMPLE:
        found = (layout or Layout.default()).prepared_dataset(spec)
        if found is not None:
            return found
    if spec == SAMPLE:
        folder = (layout or Layout.default()).dataset_dir
        if not (folder / "README.md").is_file():
            raise DatasetUnavailableError(f"the sample dataset is not built at {folder}: run `madqa setup` first")
        return folder
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "README.md").is_file():
            raise DatasetUnavailableError(f"{path} has no README.md with `configs:` (not a dataset folder)")
        return path.resolve()
    if spec.count("/") == 1 and not spec.startswith((".", "/")):
        return spec
    raise DatasetUnavailableError(f"dataset '{spec}' is neither 'sample', a dataset folder, nor a Hub repo id")


def card_metadata(folder: Path) -> dict[str, Any]:
    """The YAML front matter of ``folder/README.md`` (``{}`` when it has none)."""
    import yaml

    card = folder / "README.md"
    stat = card.stat()
    key = (str(card.resolve()), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    if key not in _CARDS:
        text = card.read_text(encoding="utf-8")
        try:
            meta = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else {}
        except yaml.YAMLError as exc:
            raise DatasetUnavailableError(f"{folder}/README.md: the YAML header does not parse ({exc})") from None
        _CARDS[key] = meta if isinstance(meta, dict) else {}
    return copy.deepcopy(_CARDS[key])  # callers may change what they get


def folder_configs(folder: Path) -> list[str]:
    """Config names the card of a dataset folder declares."""
    return [str(c.get("config_name")) for c in card_metadata(folder).get("configs", []) if isinstance(c, dict)]


def _local_data_files(folder: Path, config: str) -> dict[str, list[str]]:
    meta = card_metadata(folder)
    entries = [c for c in (meta or {}).get("configs", []) if c.get("config_name") == config]
    if not entries:
        raise DatasetUnavailableError(f"{folder}/README.md declares no config '{config}'")
    files: dict[str, list[str]] = {}
    for spec in entries[0]["data_files"]:
        matched = sorted(str(p) for p in folder.glob(spec["path"]))
        if not matched:
            raise DatasetUnavailableError(f"{folder}: no file matches '{spec['path']}' (config '{config}')")
        files[spec["split"]] = matched
    return files


def load_config(config: str = "default", dataset: str | os.PathLike[str] | None = None, **kwargs: Any) -> Any:
    """Load one config as a ``DatasetDict`` from any source (see the module docstring).

    Raises:
        DatasetUnavailableError: the source cannot be read (:class:`DatasetNotPreparedError` for a Hub id that was
            never prepared, when the Hub is off or out of reach).
    """
    source = resolve_dataset(dataset)
    if isinstance(source, Path):
        return read_folder_config(source, config, **kwargs)
    return read_hub_config(source, config, **kwargs)


@contextmanager
def _quiet_hub_retries() -> Iterator[None]:
    """Hide the Hub client's per-retry WARNING lines (kept with ``-v``); the outcome is reported as one line."""
    retry_logger = logging.getLogger(_HUB_RETRY_LOGGER)
    if logger.isEnabledFor(logging.DEBUG):
        yield
        return
    level = retry_logger.level
    retry_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        retry_logger.setLevel(level)


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def read_hub_config(repo_id: str, config: str, **kwargs: Any) -> Any:
    """One config of a Hub dataset that was never prepared here (``datasets`` and its cache).

    With the Hub switched off, ``datasets`` reads only its cache and opens no connection.

    Raises:
        DatasetNotPreparedError: the Hub is off or cannot be reached (or the repo cannot be read) and nothing is
            cached: one line naming ``madqa setup --dataset REPO``. A missing config still raises ``ValueError``
            (see :func:`load_pages`).
    """
    import datasets

    fix = f"run `{setup_command(repo_id)}` once with network access to prepare it for offline use"
    try:
        with _quiet_hub_retries():
            return datasets.load_dataset(repo_id, config, **kwargs)
    except OSError as exc:  # ConnectionError, OfflineModeIsEnabled, DatasetNotFoundError, httpx errors via datasets
        if hub_offline():
            why = "the Hub is switched off (HF_HUB_OFFLINE is set) with no cached copy"
        else:
            why = f"the Hub cannot be read ({_reason(exc)})"
        raise DatasetNotPreparedError(
            f"dataset '{repo_id}' is not prepared on this machine, and {why}: {fix}"
        ) from None


def read_folder_config(folder: Path, config: str, **kwargs: Any) -> Any:
    """One config of a local dataset folder: split name -> rows (dicts), read from its Parquet files (no network).

    Without ``kwargs`` the files are read with pyarrow alone: ``load_dataset("parquet", …)`` would import
    ``datasets`` (pandas, a second), convert the files into its cache and, on its way, import scipy (its streaming
    patches): most of every ``madqa info`` or ``madqa evaluate`` (issue 47). With ``kwargs`` (a split, features,
    …) it is ``load_dataset`` as before, a ``DatasetDict``.
    """
    files = _local_data_files(folder, config)
    if kwargs:
        import datasets

        with quiet_datasets():
            return datasets.load_dataset("parquet", data_files=files, **kwargs)
    import pyarrow.parquet as pq

    # ParquetFile, not read_table: read_table goes through pyarrow.dataset, which imports pandas
    return {
        split: [row for path in paths for row in pq.ParquetFile(path).read().to_pylist()]
        for split, paths in files.items()
    }


def normalise_question_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: row.get(k) for k in QA_COLUMNS}
    out["answer_variants"] = [list(v) for v in (out["answer_variants"] or [])]
    out["evidence"] = [{"document": e["document"], "page": int(e["page"])} for e in (out["evidence"] or [])]
    if not out.get("hop_type"):
        out["hop_type"] = hop_type(out["evidence"])
    return out


def load_questions(split: str, dataset: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The public question rows of one split (test rows carry no labels)."""
    if split not in QA_SPLITS:
        raise DatasetUnavailableError(f"unknown split '{split}'; choose one of {', '.join(QA_SPLITS)}")
    data = load_config("default", dataset)
    if split not in data:
        raise DatasetUnavailableError(f"the dataset has no split '{split}' (it has {', '.join(data)})")
    return [normalise_question_row(r) for r in data[split]]


def load_gold(
    split: str, dataset: str | os.PathLike[str] | None = None, *, labels_path: Path | None = None
) -> list[dict[str, Any]]:
    """Labelled questions of a split. Test labels come from the private labels file (server side only).

    Raises:
        DatasetUnavailableError: when the split's labels are hidden and no labels file is available.
    """
    if split == HIDDEN_SPLIT:
        path = labels_path
        if path is None:
            spec = dataset_spec(dataset)
            if spec != SAMPLE:
                raise DatasetUnavailableError(
                    f"the test labels of '{spec}' are hidden: score the test split on the leaderboard Space"
                )
            path = Layout.default().test_labels
        if not path.is_file():
            raise DatasetUnavailableError(f"test labels not found at {path}: run `madqa setup` first")
        rows = [normalise_question_row(r) for r in read_jsonl(path)]
    else:
        rows = load_questions(split, dataset)
    unlabelled = [r["id"] for r in rows if not r["answer_variants"] or not r["evidence"]]
    if unlabelled:
        raise DatasetUnavailableError(
            f"split '{split}' has {len(unlabelled)} unlabelled item(s), e.g. {unlabelled[0]}"
        )
    return rows


def load_documents(dataset: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The documents config (one row per PDF), with every column of :data:`~.features.DOCUMENT_COLUMNS`."""
    data = load_config("documents", dataset)
    split = next((s for s in (DOCUMENTS_SPLIT, LEGACY_DOCUMENTS_SPLIT) if s in data), next(iter(data)))
    return [{k: row.get(k) for k in DOCUMENT_COLUMNS} for row in data[split]]


def load_pages(dataset: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The page-text corpus (``pages`` config).

    Raises:
        DatasetUnavailableError: the dataset has no page corpus yet (the release ships none): the message names
            the ``madqa setup --dataset SPEC`` command that makes one.
    """
    source = resolve_dataset(dataset)
    hint = f"run `madqa setup --dataset {dataset_spec(dataset)}` first (it fetches the PDFs and extracts their text)"
    if isinstance(source, Path) and "pages" not in folder_configs(source):
        raise DatasetUnavailableError(f"{source} has no page corpus (`pages` config): {hint}")
    try:
        data = load_config("pages", dataset)
    except ValueError as exc:  # a Hub dataset without a pages config: datasets names the configs it has
        if isinstance(source, Path):  # an empty corpus (every document failed) loads as "no data"
            raise DatasetUnavailableError(
                f"{source}: the page corpus is empty or unreadable ({exc}); {hint}"
            ) from None
        raise DatasetUnavailableError(f"'{source}' has no page corpus here ({exc}): {hint}") from None
    split = PAGES_SPLIT if PAGES_SPLIT in data else next(iter(data))
    return list(data[split])


def document_file(record: Mapping[str, Any], dataset: str | os.PathLike[str] | None = None) -> Path:
    """Local path of a document's PDF: its ``path`` in a local folder, else its ``url`` via the download manager.

    Downloads go through `datasets`' ``DownloadManager`` (cached, resumable); nothing is fetched for local files.
    """
    source = resolve_dataset(dataset)
    if isinstance(source, Path) and record.get("path"):
        local = source / str(record["path"])
        if local.is_file():
            return local
    if isinstance(source, Path) and (source / PREPARED_FILE).is_file():  # prepared: never fetch behind the user
        raise DatasetUnavailableError(
            f"document '{record.get('document')}' was not fetched by `madqa setup --dataset {dataset_spec(dataset)}`"
            " (see `madqa info`); run that command again to retry the failed downloads"
        )
    url = record.get("url")
    if not url:
        raise DatasetUnavailableError(f"document '{record.get('document')}' has neither a local file nor a url")
    import datasets

    return Path(datasets.DownloadManager(dataset_name="madqa").download(str(url)))


def materialize_documents(dataset: str | os.PathLike[str] | None, folder: Path) -> list[Path]:
    """Make every PDF of a dataset available under its own name in ``folder`` (symlinks to local or downloaded files).

    Returns:
        The PDF paths in ``folder``, sorted by name. A document that cannot be fetched is logged and left out.
    """
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for record in load_documents(dataset):
        name = str(record["document"])
        if Path(name).name != name or not name:
            logger.warning("skipping document with an unsafe name: %r", name)
            continue
        try:
            source = document_file(record, dataset)
        except (DatasetUnavailableError, OSError) as exc:
            logger.warning("skipping %s: %s", name, exc)
            continue
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source.resolve())
        out.append(link)
    return sorted(out)

"""The Space's only contact with the Hugging Face Hub: the mirror of accepted submissions and the labels download.

Nothing is contacted at import or when no token and repo are configured; the ``CommitScheduler`` is built lazily
on the first accepted submission. Local copies live in owner-only folders (:func:`.privacy.private_dir`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .privacy import PRIVATE_MODE, private_dir
from .storage import FORM_FIELDS, ITEM_FIELDS, OPTIONAL_FORM_FIELDS, SubmissionStore

logger = logging.getLogger(__name__)


class HubMirror:
    """Mirror accepted submissions to a Hub dataset: one JSON file per submission, pushed by a ``CommitScheduler``.

    Files are written locally first (``folder``); the scheduler is created on the first save, so constructing a
    mirror never touches the network. ``api`` lets tests pass a fake ``HfApi``.
    """

    def __init__(self, repo_id: str, token: str | None, folder: Path, *, every_min: float = 5, api: Any = None):
        self.repo_id, self.token, self.folder, self.every_min, self.api = repo_id, token, Path(folder), every_min, api
        private_dir(self.folder)
        self._scheduler: Any = None
        self._lock = threading.Lock()

    def _get_scheduler(self) -> Any:
        if self._scheduler is None:
            from huggingface_hub import CommitScheduler

            self._scheduler = CommitScheduler(
                repo_id=self.repo_id,
                repo_type="dataset",
                folder_path=self.folder,
                path_in_repo="submissions",
                every=self.every_min,
                private=True,
                token=self.token,
                allow_patterns=["*.json"],
                hf_api=self.api,
            )
        return self._scheduler

    def save(self, sid: int, header: Mapping[str, Any], items: Sequence[Sequence[Any]]) -> None:
        """Write one submission file; push errors are logged, never raised to the submitter."""
        rows = [dict(zip(ITEM_FIELDS, row, strict=True)) for row in items]  # one value per field
        self._write(f"sub-{sid:06d}.json", {"id": sid, "header": dict(header), "items": rows}, f"submission {sid}")

    def _write(self, filename: str, record: Mapping[str, Any], what: str) -> None:
        """Write one mirror file under the scheduler's lock; errors are logged (the local store holds the data)."""
        try:
            with self._lock:
                scheduler = self._get_scheduler()
                with scheduler.lock:
                    (self.folder / filename).write_text(json.dumps(record), encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 - the local store already holds it
            logger.warning("could not mirror %s to %s: %s", what, self.repo_id, exc)

    def save_private(
        self, sid: int, identity: str, status: str, report: Mapping[str, Any], items: Sequence[Mapping[str, Any]]
    ) -> None:
        """Write one submission's private-part result (:mod:`.private_part`) beside its submission file."""
        rows = [{k: it.get("id" if k == "item_id" else k) for k in ITEM_FIELDS} for it in items]
        record = {"id": sid, "identity": identity, "status": status, "report": dict(report), "items": rows}
        self._write(f"private-{sid:06d}.json", record, f"the private part of submission {sid}")

    def save_pending(self, sid: int, identity: str, text: str) -> None:
        """Write an accepted file's text while its private part waits to be scored, so a Space restored from the
        mirror (no persistent disk) queues it again instead of losing it (:func:`rebuild_from_folder`)."""
        self._write(
            f"pending-{sid:06d}.json",
            {"id": sid, "identity": identity, "text": text},
            f"the queued private part of submission {sid}",
        )

    def stop(self) -> None:
        """Stop the background scheduler (tests)."""
        if self._scheduler is not None:
            self._scheduler.stop()


def rebuild_from_folder(store: SubmissionStore, folder: Path) -> int:
    """Re-insert mirrored submission files (e.g. a downloaded Hub snapshot) into an empty store; returns the count."""
    added, new_ids = 0, {}
    for path in sorted(Path(folder).glob("sub-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        header = record["header"]
        report = json.loads(header["report"])
        items = [{**it, "id": it["item_id"]} for it in record["items"]]
        form = {k: header.get(k) or "" for k in (*FORM_FIELDS, *OPTIONAL_FORM_FIELDS)}  # older files: no traces
        sid = store.add(
            form,
            report,
            items,
            created=header["created"],
            origin=header["origin"],
            file_sha256=header["file_sha256"],
            content_sha256=header.get("content_sha256"),
            idem_key=header.get("idem_key"),
            system_type=_system_type(header, report),
            cost=json.loads(header["cost"]) if header.get("cost") else None,  # older files: no cost
        )
        new_ids[int(record.get("id", sid))] = sid
        added += 1
    private = sorted(Path(folder).glob("private-*.json"))
    pending = sorted(Path(folder).glob("pending-*.json"))
    if private or pending:  # the private part's results and queued texts, under the restored submissions' ids
        from .private_part import PrivateScores

        scores = PrivateScores(store.path)
        for path in private:
            record = json.loads(path.read_text(encoding="utf-8"))
            sid = new_ids.get(int(record["id"]))
            if sid is not None:
                items = [{**it, "id": it["item_id"]} for it in record["items"]]
                scores.record(sid, str(record["identity"]), str(record["status"]), record["report"], items)
        for path in pending:  # still unscored when mirrored: queued again (a result above wins)
            record = json.loads(path.read_text(encoding="utf-8"))
            sid = new_ids.get(int(record["id"]))
            if sid is not None:
                scores.enqueue_missing(sid, str(record["identity"]), str(record["text"]))
    return added


def _system_type(header: Mapping[str, Any], report: Mapping[str, Any]) -> str:
    """The header's column; mirror files written before it was one carry it in the report only (or not at all)."""
    if header.get("system_type"):
        return str(header["system_type"])
    return "human" if report.get("system_type") == "human" else "agent"  # as the database migration decides


def restore_from_hub(store: SubmissionStore, repo_id: str, token: str | None, folder: Path) -> int:
    """Rebuild an empty store from the mirror dataset (``submissions/sub-*.json``); returns the count restored."""
    if store.count():
        return 0
    from huggingface_hub import snapshot_download

    patterns = ["submissions/sub-*.json", "submissions/private-*.json", "submissions/pending-*.json"]
    local = Path(
        snapshot_download(
            repo_id, repo_type="dataset", token=token, local_dir=private_dir(folder), allow_patterns=patterns
        )
    )
    return rebuild_from_folder(store, local / "submissions")


def download_labels(repo_id: str, token: str | None, target_dir: Path) -> Path:
    """Fetch ``test_labels.jsonl`` from a private Hub dataset into ``target_dir`` (outside the Space folder)."""
    from huggingface_hub import hf_hub_download

    path = Path(
        hf_hub_download(
            repo_id, "test_labels.jsonl", repo_type="dataset", token=token, local_dir=private_dir(target_dir)
        )
    )
    os.chmod(path, PRIVATE_MODE)
    return path

"""The hidden test labels of a release: checked against the public test split, then pushed to a *private* repo.

The leaderboard Space reads ``test_labels.jsonl`` from a private Hub dataset (``MADQA_SPACE_LABELS_REPO``). A
labels file that does not cover exactly the public test questions would make every submission's score wrong, and
a labels repo that is public would end the benchmark, so :func:`publish_labels` refuses both before uploading.
Messages name ids, lines and fields, never an answer.

What is uploaded carries each row's part (``"part": "public"`` or ``"private"``, :mod:`.label_parts`): rows of the
file that name their part keep it, the others are drawn (seeded by the labels, stratified), so the partition is
fixed by the upload and does not move when a label is corrected later. The local file is not modified.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .features import HIDDEN_SPLIT, SchemaError, validate_question
from .io import read_jsonl
from .label_parts import DEFAULT_PRIVATE_SHARE, PartsError, with_parts
from .load import load_documents, load_questions

logger = logging.getLogger(__name__)

LABELS_FILE = "test_labels.jsonl"


class LabelsError(ValueError):
    """The labels file or the target repo is not fit for the leaderboard; the message says why."""


@dataclass
class PublishLabelsResult:
    """What :func:`publish_labels` pushed."""

    repo_id: str
    questions: int
    private: int = 0  #: questions in the private part


def _some(ids: set[str]) -> str:
    shown = sorted(ids)[:5]
    return ", ".join(shown) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def check_labels(path: Path, dataset: str | None) -> int:
    """Validate a labels JSONL against ``dataset``'s public test split; returns the number of questions.

    Raises:
        LabelsError: bad JSON or field (file and line named), duplicate ids, ids missing from or foreign to the
            public test split, evidence outside the documents or beyond a document's pages.
    """
    try:
        rows = read_jsonl(path)
    except OSError as exc:
        raise LabelsError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except SchemaError as exc:
        raise LabelsError(str(exc)) from None
    documents = {str(d["document"]): d.get("num_pages") for d in load_documents(dataset)}
    seen: set[str] = set()
    for row in rows:
        where = f"{path}: line {row.pop('_line', '?')}"
        try:
            validate_question(row, where, labelled=True)
        except SchemaError as exc:
            raise LabelsError(str(exc)) from None
        if row["id"] in seen:
            raise LabelsError(f"{where}: duplicate id '{row['id']}'")
        seen.add(row["id"])
        for ev in row["evidence"]:
            if ev["document"] not in documents:
                raise LabelsError(f"{where}: evidence document '{ev['document']}' is not in the documents config")
            pages = documents[ev["document"]]
            if pages is not None and ev["page"] > int(pages):
                raise LabelsError(f"{where}: evidence page {ev['page']} of '{ev['document']}' exceeds its {pages}")
    public = {str(q["id"]) for q in load_questions(HIDDEN_SPLIT, dataset)}
    foreign, unlabelled = seen - public, public - seen
    if foreign:
        raise LabelsError(f"{path}: {len(foreign)} id(s) are not public test questions: {_some(foreign)}")
    if unlabelled:
        raise LabelsError(f"{path}: {len(unlabelled)} public test question(s) have no label: {_some(unlabelled)}")
    return len(seen)


def publish_labels(
    path: Path,
    dataset: str | None,
    repo_id: str,
    *,
    token: str | None = None,
    api: Any = None,
    private_share: float = DEFAULT_PRIVATE_SHARE,
) -> PublishLabelsResult:
    """Check ``path`` (:func:`check_labels`) and upload it, every row with its part, as ``test_labels.jsonl`` to a
    private Hub dataset.

    Raises:
        LabelsError: the file is not fit, or ``repo_id`` exists and is public (nothing is uploaded then).
    """
    n = check_labels(path, dataset)
    rows = [{k: v for k, v in r.items() if k != "_line"} for r in read_jsonl(path)]
    try:
        rows = with_parts(rows, private_share=private_share)
    except PartsError as exc:
        raise LabelsError(f"{path}: {exc}") from None
    private = sum(1 for r in rows if r["part"] == "private")
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True)
    info = api.repo_info(repo_id, repo_type="dataset")
    if not getattr(info, "private", False):
        raise LabelsError(
            f"the Hub dataset {repo_id} is public: the hidden labels go to a private repo only "
            "(make it private on the Hub or choose another name)"
        )
    api.upload_file(
        path_or_fileobj=data,
        path_in_repo=LABELS_FILE,
        repo_id=repo_id,
        repo_type="dataset",
        commit_message=f"hidden test labels ({n} questions, {private} in the private part)",
    )
    logger.info("uploaded the labels of %d test questions (%d private) to the private dataset %s", n, private, repo_id)
    return PublishLabelsResult(repo_id, n, private)

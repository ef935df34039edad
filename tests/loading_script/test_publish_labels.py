"""`madqa publish labels`: hidden labels are checked against the public test split and go to a private repo only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.hub import FakeHfApi

from madqa.cli import main
from madqa.loading_script.labels_repo import LabelsError, check_labels, publish_labels


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_sample_labels_are_pushed_to_a_private_repo(layout, tmp_path: Path) -> None:
    api = FakeHfApi()
    done = publish_labels(layout.test_labels, "sample", "org/labels", api=api)
    assert done.questions == len(_rows(layout.test_labels))
    assert api.calls[0] == (
        "create_repo",
        {"repo_id": "org/labels", "repo_type": "dataset", "private": True, "exist_ok": True},
    )
    assert api.calls[1][1]["path_in_repo"] == "test_labels.jsonl" and api.calls[1][1]["repo_type"] == "dataset"
    uploaded = [json.loads(x) for x in api.calls[1][1]["path_or_fileobj"].decode().splitlines()]
    local = _rows(layout.test_labels)
    assert [{k: v for k, v in r.items() if k != "part"} for r in uploaded] == local  # the labels, unchanged
    assert all("part" not in r for r in local)  # the local file is not modified
    private = sum(r["part"] == "private" for r in uploaded)
    assert private == done.private == round(len(local) / 2)
    # the Space reads the uploaded parts back as they are
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    pushed = _write(tmp_path / "pushed.jsonl", uploaded)
    scorer = Scorer.from_labels(pushed, SubmissionStore(tmp_path / "db.sqlite"), private_share=0.3)
    assert scorer.private_ids == {r["id"] for r in uploaded if r["part"] == "private"}


def test_a_public_repo_gets_nothing(layout) -> None:
    api = FakeHfApi(private=False)
    with pytest.raises(LabelsError, match="is public"):
        publish_labels(layout.test_labels, "sample", "org/labels", api=api)
    assert [c for c, _ in api.calls] == ["create_repo"]


def test_labels_that_do_not_match_the_public_test_split_are_refused(layout, tmp_path: Path) -> None:
    rows = _rows(layout.test_labels)
    with pytest.raises(LabelsError, match=r"1 public test question\(s\) have no label: " + rows[0]["id"]):
        check_labels(_write(tmp_path / "a.jsonl", rows[1:]), "sample")
    with pytest.raises(LabelsError, match="not public test questions: zz-extra"):
        check_labels(_write(tmp_path / "b.jsonl", [*rows, {**rows[0], "id": "zz-extra"}]), "sample")
    with pytest.raises(LabelsError, match="line 2: duplicate id"):
        check_labels(_write(tmp_path / "c.jsonl", [rows[0], rows[0]]), "sample")
    bad_page = [{**rows[0], "evidence": [{"document": rows[0]["evidence"][0]["document"], "page": 9999}]}]
    with pytest.raises(LabelsError, match="line 1: evidence page 9999"):
        check_labels(_write(tmp_path / "d.jsonl", bad_page), "sample")
    with pytest.raises(LabelsError, match="line 1: a labelled question needs"):
        check_labels(_write(tmp_path / "e.jsonl", [{**rows[0], "answer_variants": []}]), "sample")
    (tmp_path / "f.jsonl").write_text("{not json\n")
    with pytest.raises(LabelsError, match="line 1: invalid JSON"):
        check_labels(tmp_path / "f.jsonl", "sample")


def test_cli_names_the_problem_without_a_traceback(layout, tmp_path: Path, caplog) -> None:
    rows = _rows(layout.test_labels)
    path = _write(tmp_path / "short.jsonl", rows[:-1])
    assert main(["publish", "labels", "--file", str(path), "--repo", "org/labels"]) == 2
    assert "have no label" in caplog.text and "Traceback" not in caplog.text
    assert rows[-1]["answer_variants"][0][0] not in caplog.text  # ids only, never an answer

"""The --json reports the conventions added (`madqa extract`, `madqa figures`): one JSON document on stdout that
says what the command wrote, the logs left on stderr."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from madqa.cli import main


def test_extract_json_reports_the_pages_and_files(layout, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    pdfs = sorted((layout.sample_dir / "documents").glob("*.pdf"))[:2]
    for pdf in pdfs:
        shutil.copy(pdf, folder / pdf.name)
    (folder / "broken.pdf").write_bytes(b"not a pdf")
    out = tmp_path / "pages.jsonl"
    argv = ["extract", "--pdfs", str(folder), "-o", str(out), "--no-ocr", "--no-progress", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # stdout holds the one document and nothing else
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert report["output"] == str(out) and report["pages"] == len(rows) > 0
    assert report["files"] == len(pdfs) and [s["file"] for s in report["skipped"]] == ["broken.pdf"]
    assert report["ocr_pages"] == 0 and report["ocr_missing"] is False


@pytest.mark.slow
def test_figures_json_names_what_was_drawn_and_skipped(layout, tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    from madqa.loading_script.load import load_gold

    gold = load_gold("dev")
    for name, questions in (("all", gold), ("half", gold[: len(gold) // 2])):
        lines = [{"id": q["id"], "answer": q["answer_variants"][0], "citations": q["evidence"]} for q in questions]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "figs"
    runs = [str(tmp_path / "all.jsonl"), str(tmp_path / "half.jsonl")]
    assert main(["figures", *runs, "--split", "dev", "--output-dir", str(out), "--embedder", "none", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["output_dir"] == str(out) and report["drawn"]
    assert all((out / f"{figure}.png").is_file() for figure in report["drawn"])
    written = json.loads((out / "figures.json").read_text(encoding="utf-8"))
    statuses = {figure: entry["status"] for figure, entry in written["figures"].items()}
    assert report["drawn"] == [figure for figure, status in statuses.items() if status == "ok"]
    skipped = {s["figure"]: s["reason"] for s in report["skipped"]}
    assert skipped and skipped == {f: e["reason"] for f, e in written["figures"].items() if e["status"] != "ok"}

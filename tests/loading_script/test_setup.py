"""`madqa setup` end to end: the Hub-format folder, hidden labels, offline names, OCR, the Extractive property."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from madqa.loading_script.features import HOP_TYPES, QA_FEATURES, is_yes_no


def _tokens(text: str) -> list[str]:
    return re.findall(r"[0-9a-z]+", text.lower())


def _subprocess_env(layout, hf_home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MADQA_"))}
    env.update(HF_HOME=str(hf_home or layout.root.parent / "hf"), HF_HUB_OFFLINE="1", MADQA_HOME=str(layout.root))
    return env


def _run_python(code: str, cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_public_folder_layout(layout):
    folder = layout.dataset_dir
    assert folder.name == "madqa"
    for rel in (
        "README.md",
        "data/train-00000-of-00001.parquet",
        "data/dev-00000-of-00001.parquet",
        "data/test-00000-of-00001.parquet",
        "data/documents/document_urls-00000-of-00001.parquet",
        "data/pages/pages-00000-of-00001.parquet",
    ):
        assert (folder / rel).is_file(), rel
    card = (folder / "README.md").read_text()
    assert "<!-- madqa:sample-stats -->" not in card and "Measured by `madqa setup`" in card
    assert "dataset_info" in card and "config_name: pages" in card
    pdfs = sorted(p.name for p in (folder / "documents").glob("*.pdf"))
    docs = pq.read_table(folder / "data/documents/document_urls-00000-of-00001.parquet").to_pylist()
    assert pdfs == sorted(d["document"] for d in docs)
    assert all((folder / d["path"]).is_file() for d in docs)


def test_sample_meets_the_design_targets(layout):
    stats = json.loads((layout.root / "setup-stamp.json").read_text())["stats"]
    assert stats["documents"] >= 40 and stats["categories"] >= 8 and stats["domains"] >= 5
    assert stats["pages_per_document"]["min"] == 1 and stats["pages_per_document"]["max"] >= 100
    assert 2 <= stats["pages_per_document"]["median"] <= 6
    assert stats["questions"] >= 150 and stats["yes_no"] > 0 and stats["list_answers"] > 0
    assert stats["ocr_pages"] > 0
    shares = {h: stats["hop_types"][h] / stats["questions"] for h in HOP_TYPES}
    assert 0.04 <= shares["cross_page"] <= 0.13 and 0.05 <= shares["cross_doc"] <= 0.14
    assert set(stats["splits"]) == {"train", "dev", "test"}


def test_test_split_is_published_without_labels(layout):
    public = pq.read_table(layout.dataset_dir / "data/test-00000-of-00001.parquet").to_pylist()
    assert public and all(r["answer_variants"] == [] and r["evidence"] == [] and r["hop_type"] is None for r in public)
    assert list(public[0]) == list(QA_FEATURES)
    labels = [json.loads(line) for line in layout.test_labels.read_text().splitlines()]
    assert [r["id"] for r in labels] == [r["id"] for r in public]
    assert all(r["answer_variants"] and r["evidence"] for r in labels)
    assert layout.dataset_dir not in layout.test_labels.parents
    assert stat.S_IMODE(layout.test_labels.stat().st_mode) == 0o600
    # No label file of any kind inside the public folder.
    assert not [p for p in layout.dataset_dir.rglob("*") if "label" in p.name.lower()]


def test_second_setup_is_a_no_op(layout):
    from madqa.loading_script.pipeline import run_setup

    before = {p: p.stat().st_mtime_ns for p in layout.dataset_dir.rglob("*") if p.is_file()}
    result = run_setup(layout, progress=False)
    assert result.steps_run == []
    assert before == {p: p.stat().st_mtime_ns for p in layout.dataset_dir.rglob("*") if p.is_file()}


def test_literal_load_dataset_madqa_offline_from_another_directory(layout, tmp_path):
    code = (
        "from datasets import load_dataset\n"
        "d = load_dataset('madqa')\n"
        "print({k: len(v) for k, v in d.items()})\n"
        "print(len(load_dataset('madqa', 'documents')['train']), len(load_dataset('madqa', 'pages')['train']))\n"
        "d2 = load_dataset('madqa')\n"  # a second bare call still works after the other configs were read
        "print(sorted(d2))\n"
    )
    out = _run_python(code, tmp_path, _subprocess_env(layout)).splitlines()
    stats = json.loads((layout.root / "setup-stamp.json").read_text())["stats"]
    assert eval(out[0]) == stats["splits"]  # noqa: S307 - our own repr of a dict of ints
    assert out[1].split() == [str(stats["documents"]), str(stats["pages"])]
    assert out[2] == "['dev', 'test', 'train']"


def test_load_dataset_on_the_folder(layout, tmp_path):
    code = (
        "import sys\nfrom datasets import load_dataset\nf = sys.argv[1]\n"
        "print({k: len(v) for k, v in load_dataset(f).items()})\n"
        "print(load_dataset(f, 'documents')['train'].column_names)\n"
        "print(load_dataset(f, 'pages')['train'].column_names)\n"
    ).replace("sys.argv[1]", repr(str(layout.dataset_dir)))
    out = _run_python(code, tmp_path, _subprocess_env(layout, hf_home=tmp_path / "other_hf")).splitlines()
    assert set(eval(out[0])) == {"train", "dev", "test"}  # noqa: S307
    assert "sha256" in out[1] and "text_source" in out[2]


def test_extractive_property_on_extracted_text(layout):
    from madqa.loading_script.load import load_gold, load_pages

    texts = {(p["document"], p["page"]): p["text"] for p in load_pages()}
    gold = [q for split in ("train", "dev", "test") for q in load_gold(split)]
    failures = []
    for q in gold:
        if is_yes_no(q["answer_variants"]):
            continue
        evidence_tokens = set()
        for ev in q["evidence"]:
            evidence_tokens.update(_tokens(texts[(ev["document"], ev["page"])]))
        if not any(all(t in evidence_tokens for s in variant for t in _tokens(s)) for variant in q["answer_variants"]):
            failures.append((q["id"], q["answer_variants"][0]))
    assert not failures, failures[:10]


def test_ocr_pages_contain_their_text(layout):
    from madqa.loading_script.load import load_pages

    manifest = json.loads((layout.sample_dir / "manifest.json").read_text())
    pages = {(p["document"], p["page"]): p for p in load_pages()}
    checked = 0
    for doc, info in manifest["documents"].items():
        for page, probes in info.get("ocr_probes", {}).items():
            row = pages[(doc, int(page))]
            assert row["text_source"] == "ocr", (doc, page)
            text = " ".join(row["text"].lower().split())
            for probe in probes:
                assert " ".join(probe.lower().split()) in text, (doc, page, probe)
                checked += 1
    assert checked > 0
    scanned = {(d, p) for d, info in manifest["documents"].items() for p in info["scanned_pages"]}
    assert {k for k, row in pages.items() if row["text_source"] == "ocr"} == scanned


def test_info_command_summarises_the_sample(layout, capsys):
    from madqa.cli import main

    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    stats = json.loads((layout.root / "setup-stamp.json").read_text())["stats"]
    assert info["questions"] == stats["splits"] and info["documents"] == stats["documents"]
    assert info["text_sources"]["ocr"] == stats["ocr_pages"]


@pytest.mark.parametrize("bad", ["not json", '{"id": "x"}'])
def test_build_rejects_bad_questions_with_file_and_line(layout, tmp_path, bad):
    import shutil

    from madqa.loading_script.build import build_dataset
    from madqa.loading_script.features import SchemaError
    from madqa.loading_script.load import load_pages

    sample = tmp_path / "sample"
    shutil.copytree(layout.sample_dir, sample)
    lines = (sample / "questions.jsonl").read_text().splitlines()
    lines.insert(2, bad)
    (sample / "questions.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SchemaError, match=r"questions.jsonl: line 3"):
        build_dataset(sample, load_pages(), tmp_path / "out" / "madqa", tmp_path / "private" / "labels.jsonl")
    assert not (tmp_path / "out" / "madqa").exists()


@pytest.mark.slow
def test_literal_evaluate_load_madqa_offline_after_setup(layout, tmp_path):
    code = "import evaluate\nm = evaluate.load('madqa')\nprint(type(m).__name__)\n"
    env = _subprocess_env(layout)
    env["HF_EVALUATE_OFFLINE"] = "1"
    assert _run_python(code, tmp_path, env).strip().splitlines()[-1] == "Madqa"


def test_evaluate_command_scores_the_sample_dev_split(layout, tmp_path, capsys):
    from madqa.cli import main
    from madqa.loading_script.load import load_gold

    gold = load_gold("dev")
    results = tmp_path / "results.jsonl"
    lines = []
    for i, q in enumerate(gold):
        right = i % 2 == 0  # every other item answered and cited correctly, the rest wrong and uncited
        lines.append(
            {
                "id": q["id"],
                "question": q["question"],
                "answer": q["answer_variants"][0] if right else ["zzqx wvvk"],
                "citations": q["evidence"] if right else [],
                "search_history": ["q"] * (1 if right else 4),
            }
        )
    results.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["evaluate", str(results), "--split", "dev", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    n_right = (len(gold) + 1) // 2
    assert report["n"] == len(gold) and report["missing"] == 0
    assert report["accuracy_raw"] == pytest.approx(n_right / len(gold))
    assert report["page_f1"] == pytest.approx(n_right / len(gold))
    assert report["wasted_effort_ratio"] == pytest.approx(4.0)

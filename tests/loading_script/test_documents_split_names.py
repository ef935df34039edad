"""A madqa-built dataset folder's documents config answers to ``train`` and to ``links``, the public release's
name, which the public harness's agents load (``load_dataset(folder, "documents", split="links")``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from madqa.loading_script.features import DOCUMENTS_SPLITS
from madqa.loading_script.load import load_documents

#: What the public harness's agents do with the documents config (baselines/*: ``doc_urls = {r["document"]:
#: r["url"] for r in load_dataset(name, "documents", split="links")}``), and the same under the Hub's name.
READ_BOTH = """
import json, sys
from datasets import load_dataset
rows = {s: load_dataset(sys.argv[1], "documents", split=s).to_list() for s in ("links", "train")}
print(json.dumps(rows))
"""


def test_the_documents_split_answers_to_the_public_harness_name(layout, tmp_path: Path) -> None:
    folder = layout.dataset_dir
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MADQA_"))}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-c", READ_BOTH, str(folder)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)
    assert rows["links"] == rows["train"] and len(rows["links"]) >= 40
    ours = load_documents(folder)
    assert [r["document"] for r in ours] == [r["document"] for r in rows["links"]]  # each document once, not twice
    header = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---")[1])
    [documents] = [c for c in header["configs"] if c["config_name"] == "documents"]
    assert [f["split"] for f in documents["data_files"]] == list(DOCUMENTS_SPLITS) == ["train", "links"]
    assert len({f["path"] for f in documents["data_files"]}) == 1  # one file, two names

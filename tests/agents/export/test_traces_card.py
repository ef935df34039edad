"""The dataset card of a traces repo (issue 42): ``madqa publish traces`` writes a ``README.md`` whose YAML header the
Hub can read (license, tags with ``agent-traces`` and ``madqa``, pretty name, task and size categories) and whose
body names the run's agent, model, split and harness version and how the traces were redacted; nothing of a key or
a local path reaches it, and a name cannot break out of the header."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.hub import FakeHfApi
from helpers.trace_models import ENV_SECRET, PLANTED_KEY, TMP_PLANT

from madqa.agents.export.card import LICENSE, REQUIRED_KEYS, read_headers, traces_card
from madqa.agents.export.redact import Redactor
from madqa.agents.export.sts import session_records
from madqa.cli import main
from madqa.cli.errors import UserError
from madqa.cli.publish_traces import publish_traces

HOME = "/home/alice"
#: Hub size categories (huggingface/hub-docs datasets-cards: ``size_categories``).
SIZES = {"n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "n>1M"}


def _line(n: int, model: str = "openai:gpt-4o-mini", correct: bool | None = True) -> dict[str, Any]:
    return {
        "id": f"q{n:04d}",
        "question": f"What is on page {n}? See {HOME}/notes.txt",
        "answer": ["42"],
        "citations": [{"document": "doc1.pdf", "page": 1}],
        "agent": "bm25",
        "model": model,
        "dataset": {"name": "OxRML/MADQA", "revision": "abc123"},
        "config": {"split": "dev", "max_steps": 3, "key_file": f"{TMP_PLANT} {PLANTED_KEY}"},
        "elapsed_s": 1.5,
        "trajectory": [],
    }


def _headers(lines: list[dict[str, Any]], scored: bool = True) -> list[dict[str, Any]]:
    redactor = Redactor({"OPENAI_API_KEY": ENV_SECRET}, home=HOME)
    return [
        session_records(
            line,
            version="1.2.3",
            score={"score": 1.0, "correct": n % 2 == 0, "mode": "anls"} if scored else None,
            redactor=redactor,
        )[0]
        for n, line in enumerate(lines)
    ]


def _split(card: str) -> tuple[dict[str, Any], str]:
    assert card.startswith("---\n")
    head, body = card[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


def test_the_card_header_is_valid_yaml_with_the_keys_the_hub_reads() -> None:
    card = traces_card(_headers([_line(n) for n in range(4)]), "me/madqa-traces")
    meta, body = _split(card)
    assert set(REQUIRED_KEYS) <= set(meta) and "configs" not in meta
    assert meta["license"] == LICENSE == "cc-by-nc-4.0"
    assert {"agent-traces", "madqa"} <= set(meta["tags"]) and all(isinstance(t, str) for t in meta["tags"])
    assert meta["size_categories"] == ["n<1K"] and set(meta["size_categories"]) <= SIZES
    assert meta["task_categories"] == ["question-answering"]
    assert meta["pretty_name"] == "MADQA traces: bm25 with openai:gpt-4o-mini (dev)"
    for fact in (
        "| Agent | bm25 |",
        "| Model | openai:gpt-4o-mini |",
        "| Split | dev |",
        "| Harness | madqa 1.2.3 |",
    ):
        assert fact in body, fact
    assert "| Dataset | OxRML/MADQA |" in body and "| Dataset revision | abc123 |" in body
    assert "4 of 4 sessions scored against the gold (anls mode): 50.0%" in body
    assert "## How the traces were redacted" in body and "[REDACTED:key]" in body and "`$MADQA_HOME`" in body


def test_no_key_or_local_path_reaches_the_card() -> None:
    lines = [_line(0, model=f"{HOME}/models/{PLANTED_KEY}"), _line(1, model=ENV_SECRET)]
    card = traces_card(_headers(lines), "me/t")
    for leak in (HOME, "/tmp", PLANTED_KEY, ENV_SECRET, "alice"):
        assert leak not in card, leak
    headers = _headers([_line(0)])
    headers[0]["madqa"]["model"] = f"m {PLANTED_KEY}"  # a header edited by hand after the export
    with pytest.raises(ValueError, match="looks like a secret or a local path"):
        traces_card(headers, "me/t")


def test_a_name_cannot_break_out_of_the_header_or_format_the_body() -> None:
    evil = 'x"\n---\nlicense: mit\n<script>alert(1)</script> [link](javascript:alert(1))'
    meta, body = _split(traces_card(_headers([_line(0, model=evil)], scored=False), "me/t"))
    assert meta["license"] == LICENSE and "mit" not in meta.get("tags", [])
    assert "<script>" not in body and "](javascript" not in body
    assert "not scored (exported with `--no-score`)" in body


def _folder(tmp_path: Path, n: int = 2) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    for record_set, line in zip(_sessions(n), range(n), strict=True):
        (folder / f"q{line:04d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in record_set), "utf-8")
    return folder


def _sessions(n: int) -> list[list[dict[str, Any]]]:
    redactor = Redactor({}, home=HOME)
    return [session_records(_line(k), version="1.2.3", redactor=redactor) for k in range(n)]


def test_publish_writes_the_card_at_a_datasets_root_only(tmp_path: Path, monkeypatch, caplog) -> None:
    folder = _folder(tmp_path)
    assert [h["id"] for h in read_headers(sorted(folder.glob("*.jsonl")))] == [s[0]["id"] for s in _sessions(2)]
    api = FakeHfApi()
    done = publish_traces(folder, "me/madqa-traces", api=api)
    assert api.methods == ["create_repo", "upload_folder", "upload_file"] and done.card == "README.md"
    upload = api.calls[2][1]
    assert (upload["path_in_repo"], upload["repo_id"], upload["repo_type"]) == (
        "README.md",
        "me/madqa-traces",
        "dataset",
    )
    meta, body = _split(upload["path_or_fileobj"].decode("utf-8"))
    assert meta["license"] == LICENSE and "2 sessions" in body and "me/madqa-traces" in body
    assert not (folder / "README.md").exists()  # the sessions' folder is left as it was
    for kwargs in ({"path_in_repo": "bm25"}, {"card": False}):  # several runs in one repo / the maintainers' card
        api = FakeHfApi()
        assert publish_traces(folder, "me/t", api=api, **kwargs).card is None
        assert api.methods == ["create_repo", "upload_folder"]
    monkeypatch.setattr("madqa.cli.publish_traces.publish_traces", _refuse)
    assert main(["publish", "traces", str(folder), "--repo", "me/t", "--no-card"]) == 2
    assert "card=False" in caplog.text


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise UserError(f"card={kwargs.get('card')}")  # what the CLI passed, read back through its one-line error

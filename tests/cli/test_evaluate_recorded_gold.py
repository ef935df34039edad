"""`madqa evaluate` scores a results file against the gold it was run on, or refuses it (issue 41, item 4).

The lines of `madqa run` record their dataset (``dataset.name``) and split (``config.split``); without
``--dataset``/``--split`` evaluate uses them. A file none of whose lines is a question of the gold, or whose lines
name two datasets, exits 2 with one line naming the file and the gold; it never prints a 0 % report.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.agent_cli import madqa, madqa_env, results_lines
from helpers.dataset_copy import runs_on_two_datasets

from madqa.cli.errors import UserError
from madqa.cli.evaluate_cmd import evaluate

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def runs(layout, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two runs of two questions: one on the sample (the default), one on another dataset folder."""
    return runs_on_two_datasets(layout.dataset_dir, tmp_path_factory.mktemp("recorded_gold"), HERE)


def _evaluate(args: list[str]) -> tuple[int, str, str]:
    done = madqa(["evaluate", *args], madqa_env(HERE))
    return done.returncode, done.stdout, done.stderr


def test_lines_record_the_dataset_and_split_they_were_run_on(runs) -> None:
    lines = results_lines(runs["other"])
    assert {line["dataset"]["name"] for line in lines} == {str(runs["folder"].resolve())}
    assert {line["config"]["split"] for line in lines} == {"dev"}
    assert {line["dataset"]["name"] for line in results_lines(runs["sample"])} == {"sample"}


def test_without_flags_a_file_is_scored_against_the_dataset_it_was_run_on(runs) -> None:
    rc, out, err = _evaluate([str(runs["other"]), "--json"])
    assert rc == 0, err
    report = json.loads(out)
    (other_dev,) = (runs["folder"] / "data").glob("dev-*.parquet")
    gold_ids = set(pq.read_table(other_dev).column("id").to_pylist())
    assert report["n"] == len(gold_ids) and report["n_predicted"] == 2 and report["n_unknown"] == 0
    assert report["provenance"]["gold"]["name"] == str(runs["folder"].resolve())


def test_the_wrong_gold_is_refused_in_one_line_naming_file_dataset_and_split(runs) -> None:
    rc, out, err = _evaluate([str(runs["other"]), "--dataset", "sample"])
    assert rc == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "Traceback" not in err
    assert str(runs["other"]) in errors[0]
    assert "split 'dev' of dataset 'sample'" in errors[0]
    assert f"its lines record split 'dev' of dataset '{runs['folder'].resolve()}'" in errors[0]
    rc, out, err = _evaluate([str(runs["other"]), "--split", "train"])  # the right dataset, another split
    assert rc == 2 and "split 'train' of dataset" in err and out == ""


def test_a_file_mixing_datasets_is_refused(runs, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(runs["sample"].read_text() + runs["other"].read_text())
    rc, out, err = _evaluate([str(mixed)])
    assert rc == 2 and out == ""
    assert "its lines were run on 2 datasets (2 line(s) of sample, 2 line(s) of " in err
    assert str(runs["folder"].resolve()) in err


def test_a_file_without_provenance_is_scored_as_before(runs, tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    keep = ("id", "question", "answer", "citations")
    plain.write_text("".join(json.dumps({k: r[k] for k in keep}) + "\n" for r in results_lines(runs["sample"])))
    rc, out, err = _evaluate([str(plain), "--json"])
    assert rc == 0, err
    assert json.loads(out)["n_predicted"] == 2
    strangers = tmp_path / "strangers.jsonl"  # hand-written, none of whose ids is a question of the default gold
    rows = [json.loads(x) for x in plain.read_text().splitlines()]
    strangers.write_text("".join(json.dumps({**r, "id": "x" + r["id"]}) + "\n" for r in rows))
    rc, out, err = _evaluate([str(strangers)])
    assert rc == 2 and "none of its 2 line(s) is a question of split 'dev' of dataset 'sample'" in err


def test_the_python_api_refuses_the_same_way(runs) -> None:
    with pytest.raises(UserError, match="none of its 2 line"):
        evaluate(runs["other"], dataset="sample")
    assert evaluate(runs["other"])["n_predicted"] == 2


def test_the_run_hint_names_the_dataset_and_is_shell_quoted(runs) -> None:
    hint = [line for line in runs["other_log"].splitlines() if "score it with: " in line]
    assert len(hint) == 1
    words = shlex.split(hint[0].split("score it with: ", 1)[1])
    assert words == [
        "madqa",
        "evaluate",
        str(runs["other"]),
        "--split",
        "dev",
        "--dataset",
        str(runs["folder"].resolve()),
    ]

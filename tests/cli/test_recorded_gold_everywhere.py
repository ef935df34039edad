"""`madqa compare`, `figures` and `view` score runs against the gold their lines record, as `evaluate` does
(issue 41, item 4; one home: ``madqa.cli.recorded_gold``).

A run written on a non-default dataset folder is scored against that folder's split with no ``--dataset``; files
recording different datasets are refused in one line naming them (exit 2); a file none of whose lines is a question
of the gold is refused in evaluate's words; an explicit ``--dataset`` still wins.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.agent_cli import madqa, madqa_env
from helpers.dataset_copy import runs_on_two_datasets

from madqa.cli.evaluate_cmd import evaluate

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def runs(layout, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two-question runs: two on another dataset folder (the second a copy: compare needs two files), one on the
    sample (the default)."""
    root = tmp_path_factory.mktemp("recorded_everywhere")
    out = runs_on_two_datasets(layout.dataset_dir, root, HERE)
    other = out["folder"]
    out["other_b"] = root / "other_b.jsonl"
    shutil.copyfile(out["other"], out["other_b"])
    (dev,) = (other / "data").glob("dev-*.parquet")
    out["other_ids"] = set(pq.read_table(dev).column("id").to_pylist())
    return out


def _madqa(*args: str | Path) -> tuple[int, str, str]:
    done = madqa([str(a) for a in args], madqa_env(HERE))
    return done.returncode, done.stdout, done.stderr


def _one_error(rc: int, out: str, err: str) -> str:
    """The one ERROR line of a refused command (exit 2, nothing on stdout, no traceback)."""
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert rc == 2 and out == "" and "Traceback" not in err and len(errors) == 1, (rc, out, err)
    return errors[0]


def test_compare_scores_against_the_recorded_dataset(runs) -> None:
    rc, out, err = _madqa("compare", runs["other"], runs["other_b"], "--json", "--resamples", "20")
    assert rc == 0, err
    result = json.loads(out)
    assert result["n_gold"] == len(runs["other_ids"]) and result["split"] == "dev"
    assert [(s["n_predicted"], s["n"]) for s in result["systems"]] == [(2, len(runs["other_ids"]))] * 2


@pytest.mark.slow
def test_figures_score_against_the_recorded_dataset(runs, tmp_path: Path) -> None:
    figs = tmp_path / "figs"
    rc, out, err = _madqa(
        "figures", runs["other"], "--output-dir", figs, "--embedder", "none", "--resamples", "20", "--json"
    )
    assert rc == 0, err
    doc = json.loads((figs / "figures.json").read_text(encoding="utf-8"))
    assert doc["split"] == "dev" and doc["n_gold"] == len(runs["other_ids"])
    assert doc["pages"] == "the dataset's pages config"  # the evidence-distance figure reads the chosen dataset
    (row,) = doc["figures"]["table3"]["data"]["rows"]
    report = evaluate(runs["other"], dataset=str(runs["folder"]))  # the same gold, named explicitly
    assert (row["n"], row["accuracy"]) == (report["n"], report["accuracy"])


def test_view_scores_against_the_recorded_dataset(runs) -> None:
    from madqa.cli import build_parser
    from madqa.cli.view_cmd import prepare

    workspace, _ = prepare(build_parser().parse_args(["view", str(runs["other"]), "--no-thumbnails"]))
    assert workspace.dataset == str(runs["folder"].resolve()) and workspace.split == "dev"
    assert {r.id for r in workspace.references} == runs["other_ids"]
    assert len(workspace.runs[0].records) == 2


@pytest.mark.parametrize("command", ["compare", "figures", "view"])
def test_files_of_two_datasets_are_refused_naming_them(runs, command: str, tmp_path: Path) -> None:
    extra = {"compare": [], "figures": ["--output-dir", tmp_path / "f"], "view": ["-o", tmp_path / "r.html"]}
    error = _one_error(*_madqa(command, runs["sample"], runs["other"], *extra[command]))
    assert "the results files were run on different datasets" in error
    assert f"{runs['sample']}: sample" in error and f"{runs['other']}: {runs['folder'].resolve()}" in error
    assert not (tmp_path / "f").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("command", ["compare", "figures", "view"])
def test_the_wrong_gold_is_refused_as_evaluate_refuses_it(runs, command: str, tmp_path: Path) -> None:
    """An explicit --dataset wins over what the lines record (no mixed-datasets refusal), and the file it does not
    fit is refused in evaluate's words."""
    extra = {"compare": [], "figures": ["--output-dir", tmp_path / "f"], "view": ["-o", tmp_path / "r.html"]}
    error = _one_error(*_madqa(command, runs["sample"], runs["other"], "--dataset", "sample", *extra[command]))
    evaluated = _one_error(*_madqa("evaluate", runs["other"], "--dataset", "sample"))
    assert error[error.index(str(runs["other"])) :] == evaluated[evaluated.index(str(runs["other"])) :]
    assert "none of its 2 line(s) is a question of split 'dev' of dataset 'sample'" in error


def test_evaluate_compare_refuses_files_of_two_datasets_too(runs) -> None:
    error = _one_error(*_madqa("evaluate", runs["sample"], "--compare", runs["other"]))
    assert "the results files were run on different datasets" in error and str(runs["other"]) in error


def test_files_of_two_splits_are_refused_unless_split_is_given(runs, tmp_path: Path) -> None:
    train = tmp_path / "train.jsonl"  # the sample run's lines, recorded as run on train
    rows = [json.loads(x) for x in runs["sample"].read_text(encoding="utf-8").splitlines()]
    train.write_text("".join(json.dumps({**r, "config": {**r["config"], "split": "train"}}) + "\n" for r in rows))
    error = _one_error(*_madqa("compare", runs["sample"], train))
    assert "the results files were run on different splits" in error
    assert f"{runs['sample']}: dev" in error and f"{train}: train" in error
    rc, out, err = _madqa("compare", runs["sample"], train, "--split", "dev", "--json", "--resamples", "20")
    assert rc == 0, err  # an explicit --split wins: both are scored on dev
    assert [s["n_predicted"] for s in json.loads(out)["systems"]] == [2, 2]

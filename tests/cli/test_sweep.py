"""``madqa sweep CONFIG.yaml``: two configurations -> two results files and the compare table; a stopped sweep is
completed by running it again; mistakes in the file name the configuration and field; the same sweep with ``--ray``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import helpers.ray_fixtures as ray_fixtures
import pytest
from helpers.ray_fixtures import needs_ray

from madqa.cli import main

FAKE = "py:helpers.fake_runs:fake_model"
cluster = ray_fixtures.cluster  # this module's cluster (only the --ray test starts it)

SWEEP = f"""
split: dev
limit: 3
output_dir: out
configurations:
  - name: k5
    model: "{FAKE}"
    top_k: 5
  - name: k2-oracle
    model: "{FAKE}"
    top_k: 2
    oracle: true
    workers: 2
"""


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_two_configurations_two_files_and_the_table(layout, tmp_path: Path, capsys) -> None:
    config = write(tmp_path, SWEEP)
    assert main(["sweep", str(config), "--no-progress"]) == 0
    table = capsys.readouterr().out
    k5, oracle = lines(tmp_path / "out" / "k5.jsonl"), lines(tmp_path / "out" / "k2-oracle.jsonl")
    assert len(k5) == len(oracle) == 3
    assert {r["config"]["top_k"] for r in k5} == {5} and all(r["steps"] == 1 for r in k5)
    assert {r["config"]["top_k"] for r in oracle} == {2} and all(r["config"]["oracle"] for r in oracle)
    assert all(r["steps"] == 0 for r in oracle)  # the oracle configuration really did not search
    assert "Cohen's kappa" in table and "k5" in table and "k2-oracle" in table  # madqa compare's table
    assert "k5: 3 new line(s), 0 already there" in table


def test_a_stopped_sweep_resumes(layout, tmp_path: Path, capsys) -> None:
    config = write(tmp_path, SWEEP)
    (tmp_path / "out").mkdir()
    main(["run", "--model", FAKE, "--limit", "1", "-o", str(tmp_path / "out" / "k5.jsonl"), "--no-progress"])
    assert main(["sweep", str(config), "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in summary["configurations"]}
    assert (rows["k5"]["skipped"], rows["k5"]["written"]) == (1, 2) and rows["k2-oracle"]["written"] == 3
    assert len({r["id"] for r in lines(tmp_path / "out" / "k5.jsonl")}) == 3
    assert summary["comparison"]["systems"][0]["n_predicted"] == 3
    assert main(["sweep", str(config), "--no-progress", "--json"]) == 0  # all done: nothing new
    again = {r["name"]: r for r in json.loads(capsys.readouterr().out)["configurations"]}
    assert again["k5"]["written"] == again["k2-oracle"]["written"] == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("configurations: []", "non-empty list `configurations`"),
        ("configurations:\n  - {name: a, model: local, topk: 3}", "configurations[0] (a): unknown field 'topk'"),
        ("configurations:\n  - {name: a, model: gpt-4}", "configurations[0] (a): model spec 'gpt-4' has no provider"),
        ("configurations:\n  - {name: a, model: local, agent: nope}", "unknown agent 'nope'"),
        ("configurations:\n  - {name: a, model: local}\n  - {name: a, model: local}", "share the name 'a'"),
        ("configurations:\n  - {name: ../x, model: local}", "name '../x' must be"),
        ("configurations: [\n  {name: a", "line 2: not valid YAML"),
    ],
)
def test_mistakes_name_the_configuration_and_field(tmp_path: Path, caplog, text: str, message: str) -> None:
    assert main(["sweep", str(write(tmp_path, text))]) == 2
    assert message in caplog.text


@pytest.mark.slow
@needs_ray
def test_sweep_on_ray(cluster, tmp_path: Path, capsys) -> None:
    config = write(tmp_path, SWEEP)
    assert main(["sweep", str(config), "--no-progress", "--ray", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["configurations"]}
    assert rows["k5"]["written"] == rows["k2-oracle"]["written"] == 3
    assert all(r["error"] is None for r in lines(tmp_path / "out" / "k5.jsonl"))

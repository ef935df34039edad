"""The Space's start-up decisions (space/startup.py), in-process: which labels, which dataset, which error."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio")

from madqa.space.startup import (  # noqa: E402
    GENERIC_ERROR,
    ConfigError,
    check_labels,
    error_page,
    labels_source,
    preflight,
    prepare,
    read_config,
    resolve_labels,
    serve,
)

TOKEN = "hf_notarealtokenbutlongenough"


def _texts(demo: Any) -> str:
    """Every value and label the page's components carry (what the browser receives)."""
    return json.dumps([c.get("props", {}) for c in demo.config["components"]], default=str)


@pytest.fixture
def labels_file(layout, tmp_path: Path) -> Path:
    path = tmp_path / "secret" / "test_labels.jsonl"
    path.parent.mkdir()
    shutil.copy2(layout.test_labels, path)
    return path


def test_a_malformed_variable_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        read_config({"MADQA_HOME": str(tmp_path), "MADQA_SPACE_MAX_MB": "lots"})
    assert info.value.variables == ("MADQA_SPACE_MAX_MB",) and "'lots'" in str(info.value)
    with pytest.raises(ConfigError) as info:
        read_config({"MADQA_HOME": str(tmp_path), "MADQA_SPACE_TRUSTED_PROXIES": "not-an-ip"})
    assert info.value.variables == ("MADQA_SPACE_TRUSTED_PROXIES",)


def test_pages_repo_is_read_from_the_environment(tmp_path: Path) -> None:
    assert read_config({"MADQA_HOME": str(tmp_path)}).pages_repo is None
    assert read_config({"MADQA_HOME": str(tmp_path), "MADQA_PAGES_REPO": "org/pages"}).pages_repo == "org/pages"


def test_labels_source_decisions(tmp_path: Path, labels_file: Path) -> None:
    home = {"MADQA_HOME": str(tmp_path / "home")}

    def source(**env: str) -> str:
        return labels_source(read_config({**home, **env}), {**home, **env})

    assert source() == "sample"  # nothing configured: the sample's own labels (its set-up writes them)
    assert source(MADQA_SPACE_LABELS=str(labels_file)) == "file"
    assert source(MADQA_SPACE_LABELS_REPO="org/labels") == "repo"
    assert source(MADQA_SPACE_LABELS=str(tmp_path / "gone.jsonl"), MADQA_SPACE_LABELS_REPO="org/labels") == "repo"
    with pytest.raises(ConfigError) as info:
        source(MADQA_SPACE_LABELS=str(tmp_path / "gone.jsonl"))
    assert info.value.variables == ("MADQA_SPACE_LABELS",) and "gone.jsonl" in str(info.value)
    with pytest.raises(ConfigError) as info:
        source(MADQA_SPACE_LABELS=str(tmp_path))
    assert "is a folder" in str(info.value)
    # a release never falls back to labels found in MADQA_HOME (a sample built there earlier)
    stale = tmp_path / "home" / "private" / "test_labels.jsonl"
    stale.parent.mkdir(parents=True)
    shutil.copy2(labels_file, stale)
    with pytest.raises(ConfigError) as info:
        source(MADQA_DATASET="OxRML/MADQA")
    assert info.value.variables == ("MADQA_SPACE_LABELS", "MADQA_SPACE_LABELS_REPO")
    assert source(MADQA_DATASET="OxRML/MADQA", MADQA_SPACE_LABELS=str(labels_file)) == "file"


def test_preflight_reports_every_problem_at_once(tmp_path: Path) -> None:
    env = {"MADQA_HOME": str(tmp_path), "MADQA_DATASET": "/no/such/folder", "MADQA_PAGES_REPO": "not a repo"}
    problems = preflight(read_config(env), env)
    named = [p.variables for p in problems]
    assert named == [("MADQA_DATASET",), ("MADQA_PAGES_REPO",), ("MADQA_SPACE_LABELS", "MADQA_SPACE_LABELS_REPO")]
    ok = {"MADQA_HOME": str(tmp_path), "MADQA_DATASET": "OxRML/MADQA", "MADQA_SPACE_LABELS_REPO": "org/labels"}
    assert preflight(read_config(ok), ok) == []
    bad_repo = {**ok, "MADQA_SPACE_LABELS_REPO": "just-a-name"}
    assert [p.variables for p in preflight(read_config(bad_repo), bad_repo)] == [("MADQA_SPACE_LABELS_REPO",)]
    blocked = tmp_path / "file"
    blocked.write_text("x")
    bad_db = {"MADQA_HOME": str(tmp_path), "MADQA_SPACE_DB": str(blocked / "board.sqlite")}
    assert [p.variables for p in preflight(read_config(bad_db), bad_db)] == [("MADQA_SPACE_DB",)]


def test_labels_that_do_not_parse_are_named_without_their_content(tmp_path: Path, labels_file: Path) -> None:
    assert check_labels(labels_file, "MADQA_SPACE_LABELS") > 0
    rows = [json.loads(x) for x in labels_file.read_text().splitlines() if x.strip()]
    rows[2]["hop_type"] = "SECRET-VALUE-42"
    rows[3]["evidence"] = [{"document": "x.pdf"}]  # no page
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError) as info:
        check_labels(bad, "MADQA_SPACE_LABELS")
    message = str(info.value)
    assert message.startswith("MADQA_SPACE_LABELS:") and "2 invalid record(s)" in message and "record 3" in message
    assert "SECRET-VALUE-42" not in message and rows[0]["answer_variants"][0][0] not in message
    bad.write_text(labels_file.read_text() + "{not json\n")
    with pytest.raises(ConfigError, match=r"MADQA_SPACE_LABELS: .* line \d+: invalid JSON"):
        check_labels(bad, "MADQA_SPACE_LABELS")
    rows = [json.loads(x) for x in labels_file.read_text().splitlines() if x.strip()]
    rows[0]["evidence"] = [{"file": "a.pdf", "page": 1}]  # the metric's alias: valid raw, not for the loader
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match="unexpected shape"):
        check_labels(bad, "MADQA_SPACE_LABELS")
    bad.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ConfigError, match="not UTF-8"):
        check_labels(bad, "MADQA_SPACE_LABELS")


def test_an_unreachable_labels_repo_names_the_repo_variable(tmp_path: Path, monkeypatch) -> None:
    from huggingface_hub.errors import OfflineModeIsEnabled

    import madqa.space.hub as hub

    def offline(*args: Any, **kwargs: Any) -> Path:
        raise OfflineModeIsEnabled(f"cannot reach the Hub with token {TOKEN}")

    monkeypatch.setattr(hub, "download_labels", offline)
    env = {"MADQA_HOME": str(tmp_path), "MADQA_SPACE_LABELS_REPO": "org/labels", "HF_TOKEN": TOKEN}
    with pytest.raises(ConfigError) as info:
        resolve_labels(read_config(env), env)
    assert info.value.variables == ("MADQA_SPACE_LABELS_REPO", "HF_TOKEN")
    assert "'org/labels'" in str(info.value) and "offline" in str(info.value) and TOKEN not in str(info.value)


def test_a_release_folder_with_labels_needs_no_sample(built_home: Path, labels_file: Path, tmp_path: Path) -> None:
    release = tmp_path / "release" / "madqa"
    shutil.copytree(built_home / "hub" / "madqa", release)
    home = tmp_path / "home"
    env = {"MADQA_HOME": str(home), "MADQA_DATASET": str(release), "MADQA_SPACE_LABELS": str(labels_file)}
    config = prepare(env)
    assert Path(config.dataset) == release.resolve() and config.labels_path == labels_file
    assert not (home / "sample").exists()


def test_no_configuration_uses_the_sample_set_up(built_home: Path, layout, monkeypatch) -> None:
    import madqa.loading_script.release as release

    calls: list[tuple] = []
    real = release.ensure_dataset

    def spy(spec: Any, **kwargs: Any) -> Path:
        calls.append((spec, kwargs["layout"].root))
        return real(spec, **kwargs)

    monkeypatch.setattr(release, "ensure_dataset", spy)
    config = prepare({"MADQA_HOME": str(built_home)})
    assert calls == [("sample", built_home.resolve())]  # the idempotent set-up (a no-op here: already built)
    assert Path(config.dataset) == layout.dataset_dir.resolve() and config.labels_path == layout.test_labels


def test_an_unknown_hub_dataset_offline_is_a_config_error(tmp_path: Path, labels_file: Path) -> None:
    env = {"MADQA_HOME": str(tmp_path), "MADQA_DATASET": "nobody/nothing", "MADQA_SPACE_LABELS": str(labels_file)}
    with pytest.raises(ConfigError) as info:
        prepare(env)
    assert info.value.variables == ("MADQA_DATASET",) and "nobody/nothing" in str(info.value)


def test_the_error_page_names_the_variables_and_hides_secrets() -> None:
    from madqa.space.startup import Problem

    error = ConfigError(
        [
            Problem(("MADQA_SPACE_MAX_MB",), "MADQA_SPACE_MAX_MB must be an integer, got 'lots'"),
            Problem(("MADQA_SPACE_LABELS_REPO", "HF_TOKEN"), f"labels: refused for {TOKEN}"),
        ]
    )
    page = _texts(error_page(error, {"HF_TOKEN": TOKEN}))
    assert "MADQA_SPACE_MAX_MB" in page and "MADQA_SPACE_LABELS_REPO" in page and "configuration error" in page
    assert TOKEN not in page and "***" in page
    generic = _texts(error_page(None, {}))
    assert GENERIC_ERROR in generic and "configuration error" not in generic


def _no_app(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a failed start-up must not launch the app")


def _capture_launch(monkeypatch) -> list[Any]:
    import gradio as gr

    launched: list[Any] = []
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kw: launched.append((self, kw)))
    return launched


def test_serve_shows_the_page_instead_of_a_traceback(monkeypatch, caplog, tmp_path: Path) -> None:
    launched = _capture_launch(monkeypatch)
    caplog.set_level(logging.INFO)
    serve(_no_app, {"MADQA_HOME": str(tmp_path), "MADQA_SPACE_MAX_MB": "lots"}, host="127.0.0.1", port=7999)
    ((demo, kwargs),) = launched
    assert kwargs == {"server_name": "127.0.0.1", "server_port": 7999}
    assert "MADQA_SPACE_MAX_MB" in _texts(demo)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None and "MADQA_SPACE_MAX_MB" in errors[0].getMessage()


def test_serve_hides_an_unexpected_failure_behind_a_generic_page(monkeypatch, caplog, tmp_path: Path) -> None:
    import madqa.space.startup as startup

    def broken(env: Any = None, **kwargs: Any) -> Any:
        raise RuntimeError("internal detail /secret/path")

    monkeypatch.setattr(startup, "start", broken)
    launched = _capture_launch(monkeypatch)
    serve(_no_app, {"MADQA_HOME": str(tmp_path)})
    ((demo, kwargs),) = launched
    assert kwargs == {"server_name": None, "server_port": None}  # gradio then reads GRADIO_SERVER_NAME/PORT
    page = _texts(demo)
    assert GENERIC_ERROR in page and "internal detail" not in page
    assert any(r.exc_info for r in caplog.records)  # the traceback goes to the server log


def test_madqa_space_fails_fast_on_a_wrong_dataset(tmp_path: Path, monkeypatch, caplog) -> None:
    from madqa.cli import main

    monkeypatch.setenv("MADQA_HOME", str(tmp_path))
    monkeypatch.setenv("MADQA_DATASET", str(tmp_path / "no-such-folder"))
    monkeypatch.delenv("MADQA_SPACE_LABELS", raising=False)
    monkeypatch.delenv("MADQA_SPACE_LABELS_REPO", raising=False)
    assert main(["space", "--port", "7997"]) == 2
    assert "MADQA_DATASET" in caplog.text and "MADQA_SPACE_LABELS" in caplog.text


@pytest.mark.slow
def test_bench_start_up_figure_measures_the_space_on_the_sample(built_home: Path, tmp_path: Path, monkeypatch) -> None:
    from madqa.bench.space_startup import startup_figures, startup_lines

    board = built_home / "space" / "leaderboard.sqlite"
    before = board.stat().st_mtime_ns if board.exists() else None
    r = startup_figures(False, seed=False)  # one real start of `python -m madqa.space.app` (a subprocess)
    assert r["startup_s"] > 0 and r["startup_server_peak_rss_mib"] > 50  # at least python + gradio
    assert r["startup_tree_peak_rss_mib"] >= r["startup_server_peak_rss_mib"] * 0.5
    assert (board.stat().st_mtime_ns if board.exists() else None) == before  # the user's board is never touched
    assert "port answers" in "\n".join(startup_lines(r))
    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "nothing"))
    skipped = startup_figures(False)
    assert "no built sample" in skipped["startup_skipped"] and "skipped" in startup_lines(skipped)[0]
    assert startup_figures(True) == {"startup_skipped": "--no-startup"}

"""Space parts without a server: store, Hub mirror (fake HfApi), scorer, rate limit, form, board, plots, folder."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import ROOT
from helpers.space_fixtures import gold
from helpers.space_fixtures import results as results_text
from helpers.submission_form import submission_form
from smolagents import ChatMessage, MessageRole, Model

pytest.importorskip("gradio")

SPACE = ROOT / "space"
FORM = submission_form(submitter="", compute="1h")


@pytest.fixture()
def scorer(layout, tmp_path: Path):
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    return Scorer.from_labels(
        layout.test_labels, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=50, other_split_ids={"d1": "dev"}
    )


def results(rows: list[dict[str, Any]], correct: int) -> str:
    """Results lines of 1, 2, 3, 1, … steps by row."""
    return results_text(rows, correct, steps=None)


def test_store_survives_restart_and_uses_wal(scorer, layout, tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import clean_form

    rows = gold(layout)
    acc = scorer.submit_text(results(rows, len(rows)), clean_form(FORM))
    assert acc.rank == 1 and acc.report["accuracy"] == pytest.approx(1.0)
    again = SubmissionStore(tmp_path / "db.sqlite")
    assert again.count() == 1 and len(again.item_scores(acc.id)) == len(rows)
    assert again.submissions()[0].form["submitter"] == "anonymous"
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        columns = [r[1] for r in con.execute("PRAGMA table_info(item_scores)")]
    assert "answer" not in " ".join(columns)  # per-item rows hold scores, never gold answers


def test_failed_item_insert_stores_nothing(scorer, layout) -> None:
    rows = gold(layout)
    done = scorer.evaluate_text(results(rows, 3))
    report, items = done.report, done.items
    items.append(dict(items[0]))  # duplicate primary key → the whole transaction must roll back
    with pytest.raises(sqlite3.IntegrityError):
        scorer.store.add(FORM, report, items, created="now", origin="user", file_sha256="x")
    assert scorer.store.count() == 0 and scorer.store.count_items() == 0


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ('{"id": "q0001", "answer": 5}\n', r"line 1: field 'answer'"),
        ('{"id": "d1", "answer": []}\n', r"line 1: field 'id' 'd1' is a dev question"),
        ('{"id": "nope", "answer": []}\n', r"line 1: field 'id' 'nope' is not a test-split id"),
        ('\n{"id": "q0001", "answer": [], "citations": [{"document": "a.pdf", "page": 0}]}\n', r"line 2: .*page"),
        ('{"id": "q0001", "answer": NaN}\n', r"line 1: invalid JSON"),
        ("", r"empty"),
    ],
)
def test_bad_files_name_line_and_field(scorer, text: str, pattern: str) -> None:
    from madqa.space.submission import SubmissionError

    with pytest.raises(SubmissionError, match=pattern):
        scorer.evaluate_text(text)
    assert scorer.store.count() == 0


def test_a_file_of_another_split_is_refused_in_one_grouped_message(layout, tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer, SubmissionError

    dev_ids = [f"d{i}" for i in range(1, 21)]
    store = SubmissionStore(tmp_path / "db.sqlite")
    scorer = Scorer.from_labels(
        layout.test_labels, store, n_resamples=50, other_split_ids=dict.fromkeys(dev_ids, "dev")
    )
    text = "".join(json.dumps({"id": i, "answer": []}) + "\n" for i in dev_ids)
    with pytest.raises(SubmissionError) as refused:
        scorer.evaluate_text(text)
    message = str(refused.value)
    assert (
        "20 lines hold dev questions' ids, not test questions' (line 1 'd1', line 2 'd2', line 3 'd3', … 17 more)"
        in (message)
    )
    assert message.count("dev question") == 1 and len(message) < 300, message
    assert scorer.store.count() == 0


def test_duplicates_and_size_and_encoding(scorer, layout, tmp_path: Path) -> None:
    from madqa.space.submission import SubmissionError

    first = gold(layout)[0]["id"]
    with pytest.raises(SubmissionError, match="duplicate predictions"):
        scorer.evaluate_text(json.dumps({"id": first, "answer": []}) + "\n" + json.dumps({"id": first, "answer": []}))
    scorer.max_bytes = 10
    big = tmp_path / "big.jsonl"
    big.write_text("x" * 11)
    with pytest.raises(SubmissionError, match="larger than"):
        scorer.submit(big, FORM)
    scorer.max_bytes = 1000
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"id": "q"}\n\xe9')
    with pytest.raises(SubmissionError, match="line 2: the file is not valid UTF-8"):
        scorer.submit(latin, FORM)


def test_form_checks() -> None:
    from madqa.space.submission import SubmissionError, clean_form

    with pytest.raises(SubmissionError, match="'training-data statement' is required"):
        clean_form({**FORM, "training_data": "  "})
    with pytest.raises(SubmissionError, match="control characters"):
        clean_form({**FORM, "system": "a\x00b"})
    with pytest.raises(SubmissionError, match="longer than"):
        clean_form({**FORM, "model": "m" * 1000})


def test_rate_limit_per_key_and_window(scorer, layout) -> None:
    from madqa.space.submission import RateLimiter, SubmissionError, clean_form

    now = [0.0]
    limiter = RateLimiter(2, 60, clock=lambda: now[0])
    rows = gold(layout)
    for n in (1, 2):
        scorer.submit_text(results(rows, n), clean_form(FORM), identity="ip:a", limiter=limiter)
    with pytest.raises(SubmissionError, match="rate limit"):
        scorer.submit_text(results(rows, 3), clean_form(FORM), identity="ip:a", limiter=limiter)
    scorer.submit_text(results(rows, 3), clean_form(FORM), identity="ip:b", limiter=limiter)
    now[0] = 60.0
    scorer.submit_text(results(rows, 4), clean_form(FORM), identity="ip:a", limiter=limiter)
    unlimited = RateLimiter(0, 60)
    for n in (5, 6, 7):  # 0 disables
        scorer.submit_text(results(rows, n), clean_form(FORM), identity="ip:a", limiter=unlimited)


def test_hub_mirror_pushes_with_fake_api_and_board_rebuilds(scorer, layout, tmp_path: Path) -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoUrl

    from madqa.space.hub import HubMirror, rebuild_from_folder
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import clean_form

    class FakeHfApi(HfApi):
        def __init__(self) -> None:
            super().__init__(token="hf_fake")
            self.commits: list[list[str]] = []

        def create_repo(self, repo_id, **kw):  # type: ignore[override]
            return RepoUrl(f"https://huggingface.co/datasets/{repo_id}")

        def create_commit(self, repo_id, operations, **kw):  # type: ignore[override]
            self.commits.append([op.path_in_repo for op in operations])

    api = FakeHfApi()
    mirror = HubMirror("me/subs", "hf_fake", tmp_path / "mirror", every_min=60, api=api)
    assert mirror._scheduler is None  # nothing contacted before the first submission
    scorer.store.mirror = mirror
    rows = gold(layout)
    scorer.submit_text(results(rows, 5), clean_form(FORM))
    mirror._scheduler.trigger().result()
    mirror.stop()
    assert any(p.startswith("submissions/sub-") for c in api.commits for p in c)
    rebuilt = SubmissionStore(tmp_path / "rebuilt.sqlite")
    assert rebuild_from_folder(rebuilt, tmp_path / "mirror") == 1
    assert rebuilt.submissions()[0].report["accuracy"] == scorer.store.submissions()[0].report["accuracy"]
    assert rebuilt.count_items() == len(rows)


def test_board_columns_come_from_metrics_and_best_is_marked(scorer, layout) -> None:
    from madqa.metric.schema import METRICS
    from madqa.space.leaderboard import best_values, board_columns, board_frame, filter_board, styled_board
    from madqa.space.submission import clean_form

    empty = board_frame([])
    assert list(empty.columns) == board_columns() and empty.empty
    hidden = ("accuracy_raw", "kuiper_normalized", "wasted_effort_ratio")  # the last: per-item signal (disclosure)
    labels = {m.label for m in METRICS if m.key not in hidden}
    assert labels <= set(board_columns())
    rows = gold(layout)
    for n, name in ((len(rows), "top"), (0, "floor")):
        scorer.submit_text(results(rows, n), clean_form({**FORM, "system": name}))
    mid = "".join(
        json.dumps(
            {
                "id": r["id"],
                "answer": r["answer_variants"][0] if i < 10 else ["zzzz-wrong"],
                "citations": r["evidence"],
                "steps": 1 if i < 10 else 5,
            }
        )
        + "\n"
        for i, r in enumerate(rows)
    )
    scorer.submit_text(mid, clean_form({**FORM, "system": "mid"}))
    df = board_frame(scorer.store.submissions())
    assert list(df["System"]) == ["top", "mid", "floor"] and list(df["Rank"]) == [1, 2, 3]
    assert best_values(df)["Accuracy"] == 100.0
    kuiper = dict(zip(df["System"], df["Kuiper"], strict=True))
    assert kuiper["floor"] == kuiper["top"] == 0.0 < kuiper["mid"]  # all wrong or all right: a flat curve
    assert best_values(df)["Kuiper"] == kuiper["mid"]  # the trivial 0 of the floor and of the top is not "best"
    assert "background-color" in styled_board(df).to_html()
    assert list(filter_board(df, "MID")["System"]) == ["mid"]


def test_plots_draw_three_panels(scorer, layout) -> None:
    from madqa.space.disclosure import cascade_shares
    from madqa.space.plots import plot_data, plot_systems
    from madqa.space.submission import clean_form

    rows = gold(layout)
    acc = scorer.submit_text(results(rows, 7), clean_form(FORM))
    fig = plot_systems(scorer.store, [acc.id, 12345])
    assert len(fig.axes) == 3 and fig.axes[0].patches and fig.axes[2].patches
    shares = cascade_shares(scorer.store.item_scores(acc.id))
    assert shares["found_doc"] >= shares["found_page"] >= shares["correct"] == pytest.approx(7 / len(rows))
    (drawn,) = plot_data(scorer.store, [acc.id, 12345])
    assert drawn["cascade"] == [pytest.approx(100 * shares[k]) for k in ("found_doc", "found_page", "correct")]
    assert len(plot_systems(scorer.store, []).axes) == 3
    named = scorer.submit_text(results(rows, 3), clean_form({**FORM, "system": "Long system name: BM25 top-3"}))
    ticks = [t.get_text() for t in plot_systems(scorer.store, [named.id]).axes[1].get_xticklabels()]
    assert ticks == [f"Long system\nname: BM25 top-3\n(#{named.id})"]  # wrapped, never cut to 14 characters


def test_plots_default_to_the_top_rows_with_the_legend_outside_and_a_text_alternative(scorer, layout) -> None:
    # issue 44, item 9
    from madqa.space.plots import DEFAULT_SYSTEMS, plot_alt, plot_data, plot_systems, top_ids
    from madqa.space.submission import clean_form

    rows = gold(layout)
    ids = [scorer.submit_text(results(rows, n), clean_form({**FORM, "system": f"s{n}"})).id for n in (2, 9, 5, 7)]
    assert DEFAULT_SYSTEMS == 3 and top_ids(scorer.store) == [ids[1], ids[3], ids[2]]  # best accuracy first
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plot_systems(scorer.store, top_ids(scorer.store))
    canvas = FigureCanvasAgg(fig)  # the figure comes back closed: drawn again on a canvas of its own
    canvas.draw()
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1  # one legend, of the figure
    legend_box, renderer = fig.legends[0].get_window_extent(), canvas.get_renderer()
    for ax in fig.axes:  # under every panel and its tick labels, none of them covered
        assert legend_box.y1 <= ax.get_tightbbox(renderer).y0 + 1, (legend_box, ax.get_tightbbox(renderer))
    alt = plot_alt(plot_data(scorer.store, top_ids(scorer.store)))
    assert alt.startswith("Three bar charts comparing 3 systems") and "s9 (#" in alt and "accuracy " in alt
    assert "undefined" not in alt and "tick systems" in plot_alt([])


class VerdictModel(Model):
    """Judge stand-in (a smolagents Model chosen by a ``py:`` spec): "correct" when the prediction holds JUDGE-OK."""

    prompts: list[str] = []

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        prepared = self._prepare_completion_kwargs(messages, flatten_messages_as_text=True)
        text = "\n".join(str(m["content"]) for m in prepared["messages"])
        VerdictModel.prompts.append(text)
        predicted = re.search(r"Predicted answer \(a list of strings\): (.*)", text).group(1)
        verdict = "correct" if "JUDGE-OK" in predicted else "incorrect"
        return ChatMessage(role=MessageRole.ASSISTANT, content=json.dumps({"reasoning": "r", "verdict": verdict}))


def verdict_model(**_: Any) -> VerdictModel:
    return VerdictModel(model_id="verdict-judge")


def test_judge_mode_scores_with_the_configured_judge_and_is_labelled(layout, tmp_path: Path) -> None:
    from madqa.space.config import SpaceConfig
    from madqa.space.leaderboard import board_frame
    from madqa.space.services import create_services
    from madqa.space.submission import clean_form, format_accepted

    config = SpaceConfig.from_env(
        {
            "MADQA_HOME": str(layout.root),
            "MADQA_SPACE_DB": str(tmp_path / "db.sqlite"),
            "MADQA_SPACE_JUDGE": "py:test_space_storage:verdict_model",
        }
    )
    services = create_services(config, seed=False)
    rows = gold(layout)
    VerdictModel.prompts.clear()
    lines = []
    for i, r in enumerate(rows):  # 3 exact (no judge call), 4 paraphrases the judge accepts, the rest wrong
        answer = r["answer_variants"][0] if i < 3 else ["JUDGE-OK paraphrase"] if i < 7 else ["zzzz-wrong"]
        lines.append(json.dumps({"id": r["id"], "answer": answer, "citations": r["evidence"], "steps": 2}) + "\n")
    acc = services.scorer.submit_text("".join(lines), clean_form(FORM))
    assert acc.report["mode"] == "judge" and acc.report["unscored"] == 0
    assert services.scorer.private.drain(120)  # the private part is judged after the answer, in the background
    assert len(VerdictModel.prompts) == len(rows) - 3  # both parts judged once; exact matches are short-cut
    public = services.scorer.public_ids  # what the answer shows is the public part's
    right = sum(1 for r in rows[:7] if r["id"] in public)
    assert acc.report["n"] == len(public) < len(rows)
    assert acc.report["accuracy_raw"] == pytest.approx(right / len(public))
    (private,) = services.scorer.private.scores.results()
    assert private.status == "scored" and private.report["n"] == len(rows) - len(public)
    assert private.report["accuracy_raw"] == pytest.approx((7 - right) / (len(rows) - len(public)))
    assert "scoring mode `judge`" in format_accepted(acc)
    assert list(board_frame(services.store.submissions())["Mode"]) == ["judge"]
    assert (tmp_path / "judge_cache.jsonl").is_file()  # verdicts are cached next to the board
    again = services.scorer.evaluate_text("".join(lines)).report
    assert again["accuracy_raw"] == acc.report["accuracy_raw"] and len(VerdictModel.prompts) == len(rows) - 3


def test_restore_from_hub_rebuilds_an_empty_store(scorer, layout, tmp_path: Path, monkeypatch) -> None:
    import huggingface_hub

    from madqa.space.hub import HubMirror, restore_from_hub
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import clean_form

    mirror = HubMirror("me/subs", None, tmp_path / "snap" / "submissions")
    mirror._scheduler = type("NoPush", (), {"lock": __import__("threading").Lock()})()  # local files only
    scorer.store.mirror = mirror
    scorer.submit_text(results(gold(layout), 4), clean_form(FORM))

    def fake_snapshot(repo_id, **kw):  # what snapshot_download would fetch: the mirrored files
        assert repo_id == "me/subs"
        assert kw["allow_patterns"] == [
            "submissions/sub-*.json",
            "submissions/private-*.json",
            "submissions/pending-*.json",
        ]
        return str(tmp_path / "snap")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    fresh = SubmissionStore(tmp_path / "fresh.sqlite")
    assert restore_from_hub(fresh, "me/subs", None, tmp_path / "dl") == 1
    assert restore_from_hub(fresh, "me/subs", None, tmp_path / "dl") == 0  # not empty any more
    assert fresh.submissions()[0].report["accuracy"] == scorer.store.submissions()[0].report["accuracy"]


@pytest.mark.parametrize("agent", ["BM25 search agent", "code-REPL agent"])
def test_agent_tab_reports_a_failed_start_by_its_kind_only(layout, agent: str) -> None:
    from madqa.space.agent_runtime import AgentRuntime
    from madqa.space.agent_tab import run_agent
    from madqa.space.config import SpaceConfig

    runtime = AgentRuntime(SpaceConfig.from_env({"MADQA_HOME": str(layout.root)}))
    history = list(run_agent(runtime, {}, None, "Q?", agent, "py:no_such_module:factory"))[-1]
    assert history[-1].content == "Could not start the agent: ValueError"  # the spec and message stay in the log
    assert not runtime.lock.locked()


def test_space_side_files_are_owner_only(tmp_path: Path) -> None:
    """Mirror files (contacts, per-item scores) and judge verdicts (keyed by test labels) stay private even when
    their folder existed with a readable mode or the process umask is permissive."""
    import os
    import stat

    from madqa.metric.judge import VerdictCache
    from madqa.space.hub import HubMirror

    folder = tmp_path / "mirror"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    old = os.umask(0)
    try:
        HubMirror("me/subs", None, folder)
        cache = VerdictCache(tmp_path / "space" / "judge_cache.jsonl")
        cache.put("k", "correct", "judge")
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "space" / "judge_cache.jsonl").stat().st_mode) == 0o600

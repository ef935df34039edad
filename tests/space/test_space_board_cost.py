"""The board's cost and budget columns (issue 43, items 2 and 4), with hand-computed numbers: USD per question from
the submitted lines' token counts and models at the shipped table's prices (and its date), "n/a (…)" never 0, old
rows "n/a (not recorded)" after the migration; accuracy within 1, 3 and 10 steps on the public part; the bound."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from madqa.agents.harness.prices import load_prices, parse_price_text
from madqa.bench.space import synthetic_form, synthetic_references
from madqa.metric.board_cost import submission_cost
from madqa.metric.cost import Price, PriceError, PriceTable
from madqa.space.board_view import DEFAULT_COLUMNS, column_widths, footnote, styled_view, view_frame
from madqa.space.disclosure import public_bits_bound
from madqa.space.leaderboard import board_frame
from madqa.space.storage import SubmissionStore
from madqa.space.submission import Scorer

TABLE = PriceTable({"gpt-4.1": Price(2.0, 8.0, 0.5)}, "test", "2025-09-29")


def _line(model: str = "openai:gpt-4.1", tokens_in: int = 1000, tokens_out: int = 500, **extra: Any) -> dict:
    return {"id": "q", "model": model, "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}, **extra}


def test_the_shipped_table_has_its_date_and_a_bad_date_names_file_and_line() -> None:
    assert load_prices().as_of == "2025-09-29"  # the latest listing date in the file's comments
    assert parse_price_text("as_of: '2024-01-31'\nm: {input: 1, output: 2}\n", "p.yaml").as_of == "2024-01-31"
    assert parse_price_text("m: {input: 1, output: 2}\n", "p.yaml").as_of is None  # not stated: none shown
    with pytest.raises(PriceError, match=r"p.yaml line 2: field 'as_of' must be a date YYYY-MM-DD"):
        parse_price_text("m: {input: 1, output: 2}\nas_of: last week\n", "p.yaml")
    with pytest.raises(PriceError, match=r"p.yaml: not valid YAML \(month must be in 1..12\)"):
        parse_price_text("as_of: 2025-13-01\nm: {input: 1, output: 2}\n", "p.yaml")


def test_usd_per_question_by_hand_and_never_zero_when_not_priced() -> None:
    # 1000 input at $2/M + 500 output at $8/M = $0.006; 3000 input with 1000 cached: 2000*2 + 1000*0.5 = $0.0045
    cached = {"input_tokens": 3000, "output_tokens": 0, "cached_input_tokens": 1000}
    lines = [_line(), {"id": "r", "model": "gpt-4.1", "usage": cached}]
    cost = submission_cost(lines, TABLE)
    assert cost["status"] == "priced" and cost["usd_per_question"] == pytest.approx((0.006 + 0.0045) / 2)
    assert cost["prices_as_of"] == "2025-09-29" and cost["n_priced"] == cost["n_lines"] == 2
    unknown = submission_cost([_line(), _line("anthropic:mystery")], TABLE)
    assert unknown["usd_per_question"] is None and unknown["status"] == "model not priced"
    assert unknown["unknown_models"] == ["anthropic:mystery"]
    assert submission_cost([_line(), {"id": "x", "answer": ["a"]}], TABLE)["status"] == "no token counts"
    assert submission_cost([{"id": "h", "system_type": "human"}], TABLE)["status"] == "human"


def _scorer(tmp_path: Path, n: int = 20) -> tuple[Scorer, list[Any]]:
    refs = synthetic_references(n)
    return Scorer(refs, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=20), refs


def _file(refs: list[Any], right: set[int], steps: list[int | None], **extra: Any) -> str:
    rows = []
    for i, r in enumerate(refs):
        row: dict[str, Any] = {"id": r.id, "answer": [r.answer_variants[0][0] if i in right else "wrong"], **extra}
        if steps[i] is not None:
            row["steps"] = steps[i]
        rows.append(row)
    return "".join(json.dumps(x) + "\n" for x in rows)


def test_an_accepted_file_stores_its_cost_and_budget_accuracies(tmp_path: Path) -> None:
    scorer, refs = _scorer(tmp_path)
    scorer.prices = TABLE
    usage = {"input_tokens": 1000, "output_tokens": 500}
    # 20 items; right: 0 (1 step), 1 (3 steps), 2 (10 steps), 3 (11 steps), 4 (no steps); 5-19 wrong at 2 steps
    steps: list[int | None] = [1, 3, 10, 11, None] + [2] * 15
    text = _file(refs, {0, 1, 2, 3, 4}, steps, model="openai:gpt-4.1", usage=usage)
    sid = scorer.submit_text(text, synthetic_form("priced", "me")).id
    other = _file(refs, set(), [1] * 20, model="litellm:acme/unlisted-9", usage=usage)
    scorer.submit_text(other, synthetic_form("unlisted", "me"))
    human = _file(refs, {0}, [1] * 20, system_type="human")
    scorer.submit_text(human, synthetic_form("person", "me"))
    stored = scorer.store.submission(sid)
    assert stored is not None and stored.cost is not None
    assert stored.cost["usd_per_question"] == pytest.approx(0.006) and stored.cost["prices_as_of"] == "2025-09-29"
    # Acc@1 = 1/20, Acc@3 = 2/20, Acc@10 = 3/20 (the 11-step and the no-steps item are in no budget); accuracy 5/20
    assert stored.report["accuracy_at_budgets"] == {"1": 0.05, "3": 0.1, "10": 0.15}
    board = board_frame(scorer.store.submissions()).set_index("System")
    assert board.loc["priced", ["Acc@1", "Acc@3", "Acc@10", "Accuracy"]].tolist() == [5.0, 10.0, 15.0, 25.0]
    assert board.loc["priced", "USD per question"] == pytest.approx(0.006)
    assert math.isnan(board.loc["unlisted", "USD per question"])  # never 0
    assert board.loc["unlisted", "Cost note"] == "n/a (model not priced)"
    assert board.loc["person", "Cost note"] == "n/a (human run)"
    view = view_frame(board.reset_index(), [*DEFAULT_COLUMNS, "Acc@1"])
    shown = styled_view(view).to_html()
    assert "$0.0060" in shown and "n/a (model not priced)" in shown and "n/a (human run)" in shown
    assert "$0.0000" not in shown
    assert "list prices as of 2025-09-29" in footnote(view)
    from madqa.space.board_detail import detail_markdown

    detail = detail_markdown(stored)
    assert "| Accuracy within 1 step | 5.0% |" in detail and "| Accuracy within 10 steps | 15.0% |" in detail
    assert "| Inference cost per question | $0.0060 (20 of 20 lines priced, list prices as of 2025-09-29) |" in detail
    unlisted = next(s for s in scorer.store.submissions() if s.form["system"] == "unlisted")
    assert "| Inference cost per question | n/a (model not priced): litellm:acme/unlisted-9 |" in detail_markdown(
        unlisted
    )


def test_rows_stored_before_the_cost_column_show_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    store = SubmissionStore(path)
    report = {"mode": "anls", "metric_version": "v1", "accuracy": 0.5, "n": 2, "n_predicted": 2}
    store.add(synthetic_form("old", "me"), report, [], created="2025-01-01 00:00:00", origin="user", file_sha256="f")
    with sqlite3.connect(path) as con:  # the previous version's table: no cost column
        con.execute("ALTER TABLE submissions DROP COLUMN cost")
    reopened = SubmissionStore(path)  # migrated in place: the column comes back, NULL on the old row
    assert [s.cost for s in reopened.submissions()] == [None]
    row = board_frame(reopened.submissions()).iloc[0]
    assert row["Cost note"] == "n/a (not recorded)" and pd.isna(row["USD per question"])
    assert pd.isna(row["Acc@1"])  # no budget accuracies stored then either: "—"


def test_default_columns_fit_and_the_bound_counts_the_budget_columns() -> None:
    assert "Cost ($/q)" in DEFAULT_COLUMNS and "Acc@1" not in DEFAULT_COLUMNS  # budgets: in the column chooser
    assert sum(int(w[:-2]) for w in column_widths([*DEFAULT_COLUMNS, "#"])) <= 1216
    # three more numbers of n + 1 values each: 3 * log2(25) bits for 24 public items
    before = math.log2(25) + 3 * math.log2(1001) + 3 * math.log2(10002) + 5 * math.log2(25)
    assert public_bits_bound(24) == pytest.approx(before + 3 * math.log2(25))


def test_the_frontier_plot_marks_and_names_the_frontier_and_leaves_n_a_rows_out(tmp_path: Path) -> None:
    from madqa.space.frontier_plot import frontier_data, frontier_note, plot_frontiers

    scorer, refs = _scorer(tmp_path)
    scorer.prices = PriceTable({"cheap": Price(1.0, 1.0), "dear": Price(10.0, 10.0)}, "test", "2025-09-29")

    def submit(name: str, right: set[int], steps: int, model: str, tokens: int) -> None:
        usage = {"input_tokens": tokens, "output_tokens": 0}
        scorer.submit_text(_file(refs, right, [steps] * 20, model=model, usage=usage), synthetic_form(name, "me"))

    submit("cheap-weak", {0, 1}, 1, "cheap", 1000)  # 10% at $0.001, 1 step
    submit("dear-strong", set(range(10)), 5, "dear", 1000)  # 50% at $0.01, 5 steps
    submit("dear-weak", {0}, 2, "dear", 2000)  # 5% at $0.02, 2 steps: beaten on both axes by both others
    submit("unpriced", set(range(12)), 9, "mystery", 1000)  # 60%, 9 steps: no cost, but on the steps frontier
    data = frontier_data(board_frame(scorer.store.submissions()))
    assert data["cost"]["frontier"] == ["cheap-weak (#1)", "dear-strong (#2)"]
    assert {p["label"]: p["x"] for p in data["cost"]["points"]}["dear-weak (#3)"] == pytest.approx(0.02)
    assert data["cost"]["left_out"] == {"unpriced (#4)": "n/a (model not priced)"}  # never drawn at $0
    assert data["steps"]["frontier"] == ["cheap-weak (#1)", "dear-strong (#2)", "unpriced (#4)"]
    note = frontier_note(data)
    assert "accuracy vs cost**: cheap-weak (#1), dear-strong (#2)" in note and "unpriced (#4): n/a (model" in note
    fig = plot_frontiers(board_frame(scorer.store.submissions()))
    cost_ax, steps_ax = fig.axes
    named = {t.get_text() for t in cost_ax.texts}
    assert named == {"cheap-weak (#1)", "dear-strong (#2)"}  # the frontier's members, named on the plot
    assert {t.get_text() for t in steps_ax.texts} == {"cheap-weak (#1)", "dear-strong (#2)", "unpriced (#4)"}
    stars = [c for c in cost_ax.collections if c.get_label() == "on the Pareto frontier"]
    assert len(stars) == 1 and len(stars[0].get_offsets()) == 2


def test_a_file_with_repeats_is_still_refused_before_any_gold_is_touched(tmp_path: Path) -> None:
    """Issue 43, item 3: the board keeps refusing repeated ids (space/README.md says why: the bound would grow
    with the number of repeats); nothing is stored."""
    from madqa.space.submission import SubmissionError

    scorer, refs = _scorer(tmp_path)
    rows = [{"id": r.id, "answer": ["a"], "steps": 1, "repeat": k, "seed": k} for k in range(2) for r in refs]
    with pytest.raises(SubmissionError, match=r"duplicate predictions: gold id 'b00000' is predicted more than once"):
        scorer.submit_text("".join(json.dumps(x) + "\n" for x in rows), synthetic_form("repeats", "me"))
    assert scorer.store.count() == 0


def test_a_system_name_written_as_math_is_drawn_as_text(tmp_path: Path) -> None:
    """A hostile name such as ``$\\undefinedcmd$`` was parsed by matplotlib as math and raised, failing the frontier
    plot and the board's plots for every visitor; it is drawn literally."""
    from madqa.space.frontier_plot import plot_frontiers
    from madqa.space.plots import plot_systems

    scorer, refs = _scorer(tmp_path)
    scorer.prices = PriceTable({"cheap": Price(1.0, 1.0)}, "test", "2025-09-29")
    name = r"$\undefinedcmd$ costs $1"
    usage = {"input_tokens": 1000, "output_tokens": 0}
    accepted = scorer.submit_text(
        _file(refs, {0, 1}, [1] * 20, model="cheap", usage=usage), synthetic_form(name, "me")
    )
    assert accepted.id is not None
    fig = plot_frontiers(board_frame(scorer.store.submissions()))
    fig.canvas.draw()
    assert {t.get_text() for t in fig.axes[0].texts} == {r"\$\undefinedcmd\$ costs \$1 (#1)"}
    plot_systems(scorer.store, [accepted.id]).canvas.draw()

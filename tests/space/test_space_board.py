"""The live board's pure parts (issue 24): shown columns, filters, units and one precision, highlights that skip
degenerate rows, withheld values explained, header tooltips, the row detail, the plot picker's names, the upload's
own name in rejections, the real citation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("gradio")

from helpers.paths import ROOT

from madqa.space.board_detail import detail_markdown, md_text, submission_of  # noqa: E402
from madqa.space.board_view import (  # noqa: E402
    COLUMNS,
    COMPACT_COLUMNS,
    DEFAULT_COLUMNS,
    HIGHLIGHT,
    best_mask,
    chosen_columns,
    column_widths,
    footnote,
    header_help,
    initial_columns,
    styled_view,
    unmarked_ties,
    view_frame,
)
from madqa.space.leaderboard import board_columns, board_frame  # noqa: E402
from madqa.space.storage import StoredSubmission  # noqa: E402

FORM = {
    "system": "s",
    "submitter": "alice",
    "agent": "a",
    "model": "m",
    "contact": "secret@example.org",
    "models_used": "gpt-x only",
    "training_data": "none",
    "compute": "2 GPU hours",
}


def report(accuracy: float, kuiper: float, **extra: Any) -> dict[str, Any]:
    return {
        "mode": "anls",
        "metric_version": "1.1.0",
        "n": 40,
        "n_predicted": 40,
        "accuracy": accuracy,
        "accuracy_se": 0.05,
        "accuracy_ci": [max(0.0, accuracy - 0.1), min(1.0, accuracy + 0.1)],
        "anls": accuracy,
        "page_f1": 0.5,
        "doc_f1": 0.6,
        "kuiper": kuiper,
        "kuiper_ci": [kuiper, kuiper + 1.234],
        "mean_steps": 2.345,
        "by_hop": {"single": {"n": 25, "accuracy": accuracy, "accuracy_ci": [0.1, 0.9]}},
        **extra,
    }


def sub(sid: int, system: str, rep: dict[str, Any], kind: str = "agent", origin: str = "user") -> StoredSubmission:
    return StoredSubmission(sid, "2026-12-01 10:00:00", origin, {**FORM, "system": system}, "anls", "1.1.0", rep, kind)


def subs() -> list[StoredSubmission]:
    return [
        sub(1, "floor", report(0.0, 0.0), origin="seed"),  # nothing right: flat curve, Kuiper 0
        sub(2, "mid", report(0.5, 12.5)),
        sub(3, "top", report(1.0, 0.0)),  # everything right: flat curve too
        sub(4, "person", report(0.25, 30.0), kind="human", origin="verified"),
    ]


def test_default_view_is_the_compact_set_in_order_with_the_fixed_columns() -> None:
    view = view_frame(board_frame(subs()))
    assert list(view.columns) == [*DEFAULT_COLUMNS, "#"]
    assert list(view["System"]) == ["top", "mid", "person", "floor"] and list(view["Rank"]) == ["1", "2", "3", "4"]
    assert list(view["Type"]) == [
        "agent · self-reported",
        "agent · self-reported",
        "human · verified",
        "agent · baseline",
    ]
    assert chosen_columns(["Model", "nope"]) == ["Rank", "System", "Model", "#"]  # fixed ones always, unknown dropped
    every = {c.source for c in COLUMNS if c.source}
    assert every <= set(board_columns())  # each shown column is a board column
    # the default set fits 1440 px (the board's container is 1216 px wide there)
    assert sum(int(w[:-2]) for w in column_widths(list(view.columns))) <= 1216


def test_filters_keep_the_whole_board_rank() -> None:
    board = board_frame(subs())
    humans = view_frame(board, None, ["human"], None)
    assert list(humans["System"]) == ["person"] and list(humans["Rank"]) == ["3"]
    baselines = view_frame(board, ["Accuracy"], None, ["maintainer baseline"])
    assert list(baselines["System"]) == ["floor"] and list(baselines.columns) == ["Rank", "System", "Accuracy", "#"]
    assert view_frame(board, None, [], None).empty  # nothing ticked: nothing shown, never an error
    assert list(view_frame(board_frame([])).columns) == [*DEFAULT_COLUMNS, "#"]


def test_units_one_precision_and_withheld_dash() -> None:
    view = view_frame(board_frame(subs()), [c.name for c in COLUMNS])
    html = styled_view(view).to_html()
    shown = styled_view(view)._translate(False, False)  # the display strings gradio sends as display_value
    cells = {(r, c["display_value"]) for r, row in enumerate(shown["body"]) for c in row if "display_value" in c}
    texts = {text for _, text in cells}
    assert "50.0%" in texts and "100.0%" in texts and "12.5" in texts and "2.3" in texts  # one decimal, % units
    assert "100.00" not in html and "4.20" not in html
    assert "±5.0" in texts and "[12.5, 13.7]" in texts  # the SE in points, the Kuiper CI at one decimal
    assert "[40.0%, 60.0%]" in texts and "[40.0, 60.0]" not in texts  # the accuracy CI in %, as in the row detail
    assert view["X-Page"].isna().all() and "—" in texts  # X-Page withheld (no group of 20): a dash, not blank
    assert view["Accuracy"].dtype.kind == "f"  # numbers stay numbers: the table sorts numerically
    note = footnote(view)
    assert "X-Page/X-Doc" in note and "withheld" in note and "under 20" in note
    assert "withheld" not in footnote(view_frame(board_frame(subs())))  # no hop column shown: no hop note


def test_no_highlight_on_degenerate_rows() -> None:
    view = view_frame(board_frame(subs()), [c.name for c in COLUMNS])
    mask = best_mask(view, view["Accuracy"])
    by_system = dict(zip(view["System"], range(len(view)), strict=True))
    # Kuiper: lower is better, but 0.0 of the 0 % and 100 % rows says nothing (flat curves)
    assert not mask.loc[by_system["floor"], "Kuiper ↓"] and not mask.loc[by_system["top"], "Kuiper ↓"]
    assert mask.loc[by_system["mid"], "Kuiper ↓"]
    # a row with nothing right is never best, even where it ties (Page F1 0.5 is the same in every row)
    assert not mask.loc[by_system["floor"]].any()
    assert mask.loc[by_system["top"], "Accuracy"] and mask["Accuracy"].sum() == 1
    styles = styled_view(view)._compute().ctx  # {(row, col): [(prop, value)]}
    kuiper = list(view.columns).index("Kuiper ↓")
    assert not styles.get((by_system["floor"], kuiper)) and not styles.get((by_system["top"], kuiper))
    assert ("font-weight", "bold") in styles[(by_system["mid"], kuiper)] and "bold" in HIGHLIGHT


def test_header_help_names_definition_and_direction() -> None:
    helps = header_help()
    for name in ("Accuracy", "Page F1", "Doc F1", "X-Page", "X-Doc", "ANLS*", "Coverage"):
        assert "↑ higher is better" in helps[name], name
    assert "↓ lower is better" in helps["Kuiper ↓"]
    assert all(len(text) > 20 for text in helps.values())


def test_initial_columns_follow_the_screen() -> None:
    assert initial_columns(390) == list(COMPACT_COLUMNS)
    assert initial_columns(1440) == list(DEFAULT_COLUMNS) == initial_columns(None) == initial_columns("x")
    widths = column_widths([*COMPACT_COLUMNS, "#"], compact=True)
    assert sum(int(w[:-2]) for w in widths) <= 390 - 2 * 16  # a phone's board without sideways scrolling


def test_detail_shows_disclosures_hops_and_submission_info_never_the_contact() -> None:
    rows = subs()
    rows[1].form["system"] = "mid *bold* [link](x)"
    text = detail_markdown(rows[1], 2)
    assert "gpt-x only" in text and "2 GPU hours" in text and "Training data" in text  # the disclosures
    assert "secret@example.org" not in text  # the contact is never shown
    assert "| single page | 25 | 50.0% [10.0%, 90.0%] |" in text  # the hop shown with its size
    assert "| cross-page (X-Page) | under 20 | — (withheld) |" in text
    assert "rank 2" in text and "alice" in text and "2026-12-01 10:00:00" in text
    assert r"mid \*bold\* \[link\]\(x\)" in text  # form text cannot format the panel
    assert md_text("a\nb_c") == r"a b\_c"
    assert submission_of(rows, ["x", 3], ["System", "#"]) is rows[2]
    assert submission_of(rows, ["x"], ["System"]) is None and submission_of(rows, None, ["#"]) is None
    assert "Select a row" in detail_markdown(None)


def _store_of_one(tmp_path: Path, system: str, origin: str, file_sha256: str) -> Any:
    """A store holding one submission of ``system`` (accuracy 0.5, no items)."""
    from madqa.space.storage import SubmissionStore

    store = SubmissionStore(tmp_path / "db.sqlite")
    store.add(
        {**FORM, "system": system},
        report(0.5, 1.0),
        [],
        created="2026-12-01 10:00:00",
        origin=origin,
        file_sha256=file_sha256,
    )
    return store


def test_the_plot_picker_and_the_plots_name_systems(tmp_path: Path) -> None:
    from madqa.space.leaderboard import system_choices

    store = _store_of_one(tmp_path, "Baseline: BM25 top-3 pages, no answer", origin="seed", file_sha256="0" * 64)
    ((label, sid),) = system_choices(store)
    assert label == f"Baseline: BM25 top-3 pages, no answer (#{sid})"  # the name first, whole


def test_rejections_name_the_uploaded_file(scorer_factory: Any, tmp_path: Path) -> None:
    from madqa.space.submission import SubmissionError, named_after_upload, upload_name

    assert upload_name("/tmp/gradio/ab12/my run (v2).jsonl") == "my run (v2).jsonl"
    assert upload_name("/tmp/x/<b>*.jsonl") == "_b__.jsonl" and upload_name(None) == "results.jsonl"
    assert named_after_upload("results.jsonl line 2: bad", "/u/mine.jsonl") == "mine.jsonl line 2: bad"
    bad = tmp_path / "sub" / "my-agent-dev.jsonl"
    bad.parent.mkdir()
    bad.write_text('{"id": "q0001", "answer": ["x"]}\nnot json\n', encoding="utf-8")
    with pytest.raises(SubmissionError) as err:
        scorer_factory().submit(str(bad), FORM)
    assert "my-agent-dev.jsonl line" in str(err.value) and "results.jsonl" not in str(err.value)


@pytest.fixture()
def scorer_factory(layout, tmp_path: Path) -> Any:
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    return lambda: Scorer.from_labels(layout.test_labels, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=20)


def test_about_cites_the_paper_as_the_dataset_card_does() -> None:
    from madqa.space import content

    card = (ROOT / "dataset_card" / "README.md").read_text(encoding="utf-8")
    entry = re.search(r"@misc\{borchmann2026madqa,.*?\n\}\n", card, re.S)
    assert entry is not None and content.CITATION == entry.group(0)
    assert "2603.12180" in content.ABOUT and "Borchmann" in content.ABOUT and "Datta, Anupam" in content.ABOUT
    seed = Path("/work/shared/seeds/001_10b3ba98d4d77c82.txt")
    if seed.is_file():  # the paper's first page lists the same 15 authors
        authors = re.findall(r'^  - "(.+)"$', seed.read_text(encoding="utf-8").split("---")[1], re.M)
        names = content.CITATION.split("author")[1].split("year")[0]
        assert len(authors) == 15 and len(re.findall(r"\sand\s", names)) == 14


def test_board_data_for_api_clients_keeps_every_column(tmp_path: Path) -> None:
    from madqa.space.board_tab import board_data

    store = _store_of_one(tmp_path, "x", origin="user", file_sha256="1" * 64)
    data = board_data(store)
    assert data["headers"] == board_columns() and len(data["data"]) == 1
    row = dict(zip(data["headers"], data["data"][0], strict=True))
    assert row["X-Page"] is None and row["Accuracy"] == 50.0  # JSON-safe: no NaN
    json.dumps(data, allow_nan=False)
    assert board_data(store, "nomatch")["data"] == []
    assert isinstance(pd.DataFrame(data["data"], columns=data["headers"]), pd.DataFrame)


def test_the_note_says_why_an_equal_value_is_not_highlighted() -> None:
    # Page F1 is 50% in every row; the floor row (nothing right) holds it without the highlight (issue 44, item 11)
    view = view_frame(board_frame(subs()), [c.name for c in COLUMNS])
    assert "Page F1" in unmarked_ties(view)
    assert "answers nothing right" in footnote(view) and "Page F1" in footnote(view)
    rest = view_frame(board_frame([s for s in subs() if s.form["system"] != "floor"]), [c.name for c in COLUMNS])
    assert unmarked_ties(rest) == [] and "answers nothing right" not in footnote(rest)

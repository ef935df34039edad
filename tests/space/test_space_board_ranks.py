"""The live board's rank intervals and tie marker (from the shown aggregates), and Kuiper n/a on fixed effort."""

from __future__ import annotations

from typing import Any

import pytest

pd = pytest.importorskip("pandas")

from madqa.space.board_view import COLUMNS, HIGHLIGHT, styled_view, view_frame  # noqa: E402
from madqa.space.disclosure import public_report  # noqa: E402
from madqa.space.leaderboard import board_frame  # noqa: E402
from madqa.space.storage import StoredSubmission  # noqa: E402

FORM = {"system": "s", "submitter": "u", "agent": "a", "model": "m"}


def report(accuracy: float, kuiper: float, **extra: Any) -> dict[str, Any]:
    return {
        "mode": "anls",
        "n": 400,
        "n_predicted": 400,
        "accuracy": accuracy,
        "accuracy_se": 0.02,
        "accuracy_ci": [accuracy - 0.04, accuracy + 0.04],
        "kuiper": kuiper,
        "kuiper_ci": [kuiper, kuiper + 2.0],
        "kuiper_applicable": True,
        "kuiper_n": 400,
        "mean_steps": 3.0,
        **extra,
    }


def subs() -> list[StoredSubmission]:
    def sub(sid: int, system: str, rep: dict[str, Any]) -> StoredSubmission:
        return StoredSubmission(
            sid, "2026-12-01 10:00:00", "user", {**FORM, "system": system}, "anls", "1", rep, "agent"
        )

    # "flat" answers every item in the same number of steps: its stored report says Kuiper is n/a (a report of an
    # older metric would carry 0.0 there; the flag wins).
    flat = report(0.79, 0.0, kuiper_applicable=False, kuiper_ci=[0.0, 0.0])
    return [
        sub(1, "a", report(0.80, 20.0)),
        sub(2, "b", report(0.78, 10.0)),
        sub(3, "c", report(0.50, 15.0)),
        sub(4, "flat", flat),
    ]


def test_rank_intervals_and_tie_marker_by_hand() -> None:
    # Shown accuracy and SE (2.0 points each). a-b: z = 2 / hypot(2, 2) = 0.71, p = 0.48; a-flat, b-flat: z 0.35;
    # every row vs c: z >= 28 / 2.83 = 9.9, p < 1e-20. Holm (m = 6) keeps the three c pairs: a, flat and b could
    # hold ranks 1-3 (tied: one tie group), c is 4th alone.
    board = board_frame(subs())
    assert list(board["System"]) == ["a", "flat", "b", "c"]
    assert list(board["Rank interval"]) == ["1–3", "1–3", "1–3", "4"]
    assert list(board["Tie group"].astype(object).where(board["Tie group"].notna(), None)) == [1, 1, 1, None]
    assert list(board["Rank"]) == [1, 2, 3, 4]  # the point-estimate order is kept for sorting and the detail
    view = view_frame(board)
    assert list(view["Rank"]) == ["1–3 ≈", "1–3 ≈", "1–3 ≈", "4"]


def test_flat_kuiper_is_na_and_never_highlighted() -> None:
    board = board_frame(subs())
    flat = board[board["System"] == "flat"].iloc[0]
    assert bool(flat["Kuiper n/a"]) and pd.isna(flat["Kuiper"]) and flat["Kuiper CI"] == ""
    view = view_frame(board, [c.name for c in COLUMNS])
    styler = styled_view(view)
    shown = styler._translate(False, False)  # the display strings gradio sends as display_value
    system, kuiper = list(view.columns).index("System"), list(view.columns).index("Kuiper ↓")
    cells = {row[1 + system]["display_value"]: row[1 + kuiper]["display_value"] for row in shown["body"]}
    assert cells == {"a": "20.0", "flat": "n/a (fixed effort)", "b": "10.0", "c": "15.0"}
    # the lowest applicable Kuiper (b's 10) is highlighted; flat's (stored 0.0, now n/a) never is
    ctx = styled_view(view)._compute().ctx  # the cell styles (a fresh Styler: rendering clears them)
    highlighted = {view["System"][r] for (r, c), props in ctx.items() if c == kuiper and props}
    assert highlighted == {"b"}
    assert {p for (_, c), props in ctx.items() if c == kuiper for p in props} == {
        tuple(part.strip().split(": ")) for part in HIGHLIGHT.split(";")
    }


def test_the_public_report_keeps_the_flag_and_only_aggregates() -> None:
    rep = report(0.79, 0.0, kuiper_applicable=False, kuiper_curve={"k": [0, 400], "d": [0.0, 0.0]})
    out = public_report(rep)
    assert out["kuiper_applicable"] is False and "kuiper_curve" not in out


def test_the_row_detail_says_na() -> None:
    from madqa.space.board_detail import score_lines

    flat = report(0.79, 0.0, kuiper_applicable=False)
    assert "| Kuiper (↓) | n/a (fixed effort) |" in score_lines(flat)
    assert "| Kuiper (↓) | 20.0 [20.0, 22.0] |" in score_lines(report(0.8, 20.0))


def test_rank_columns_read_only_the_shown_accuracy_and_se() -> None:
    # the disclosure argument: the interval is a function of shown numbers; every other field may change freely
    from madqa.space.leaderboard import rank_columns

    board = board_frame(subs())
    shown_only = board[["Accuracy", "Accuracy ±"]].copy()
    assert rank_columns(shown_only) == rank_columns(board)
    nudged = shown_only.assign(Accuracy=shown_only["Accuracy"] + [0.0, 0.0, 0.0, 26.0])  # c within reach of b
    assert rank_columns(nudged)[0] == ["1–4", "1–4", "1–4", "1–4"]


def test_rank_sorts_by_the_interval_lower_bound_as_a_number() -> None:
    # Twelve rows 8 points apart (SE half a point): every pair differs, ranks 1 to 12; the table's value of a Rank
    # cell is the lower bound (a number, so "10" sorts after "2"), its shown text the interval (issue 44, item 6).
    gr = pytest.importorskip("gradio")

    def sub(sid: int) -> StoredSubmission:
        rep = report(0.95 - 0.08 * sid, 5.0, accuracy_se=0.005)
        return StoredSubmission(
            sid, "2026-12-01 10:00:00", "user", {**FORM, "system": f"s{sid}"}, "anls", "1", rep, "agent"
        )

    board = board_frame([sub(sid) for sid in range(12)])
    sent = gr.Dataframe(interactive=False).postprocess(styled_view(view_frame(board))).model_dump()
    rank_col = sent["headers"].index("Rank")
    values = [row[rank_col] for row in sent["data"]]
    shown = [row[rank_col] for row in sent["metadata"]["display_value"]]
    assert all(isinstance(v, (int, float)) for v in values), values
    assert [text for _, text in sorted(zip(values, shown, strict=True), reverse=True)][:4] == ["12", "11", "10", "9"]
    tied = view_frame(board_frame(subs()))  # a tied interval keeps its mark in the cell, its lower bound as value
    sent = gr.Dataframe(interactive=False).postprocess(styled_view(tied)).model_dump()
    assert [row[0] for row in sent["data"]] == [1, 1, 1, 4]
    assert [row[0] for row in sent["metadata"]["display_value"]] == ["1–3 ≈", "1–3 ≈", "1–3 ≈", "4"]

"""The run explorer's data layer, `madqa view` and the Space's Explore tab, on a scripted-model run of the dev split.

The scripted model searches once ("riverton OR invoice OR menu"), then answers citing the first page shown. The
two derived runs keep that trajectory and set each answer by construction: run A answers question ``i`` (gold
order) with its gold answer when ``i % 3 == 0``, run B when ``i % 2 == 0``; every other answer is a wrong string.
So the agreement counts can be computed by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.explore_runs import QUERY, SPEC, WRONG, derived_runs, scripted_dev_run

# -- fixtures --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(layout, tmp_path_factory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("explore_runs")
    base = scripted_dev_run(folder / "scripted.jsonl")
    return {"base": base, **derived_runs(base, folder)}


@pytest.fixture(scope="module")
def ws(runs) -> Any:
    from madqa.space.explore.runs import load_gold_references, open_workspace

    refs = load_gold_references("dev")
    sources = [(str(p), p.read_text(encoding="utf-8")) for p in runs["paths"].values()]
    return open_workspace(sources, refs, split="dev", resamples=200)


def evaluate_json(path: Path, capsys, *extra: str) -> dict[str, Any]:
    from madqa.cli import main

    capsys.readouterr()
    assert main(["evaluate", str(path), "--split", "dev", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


# -- data layer ------------------------------------------------------------------------------------------------


def test_summary_numbers_are_those_of_evaluate_json(runs, capsys) -> None:
    from madqa.space.explore.runs import load_gold_references, open_workspace

    path = runs["paths"]["agent-a"]
    ws = open_workspace([(str(path), path.read_text(encoding="utf-8"))], load_gold_references("dev"), split="dev")
    expected = evaluate_json(path, capsys)
    got = ws.runs[0].report
    for key in (
        "accuracy",
        "accuracy_ci",
        "page_f1",
        "doc_f1",
        "kuiper",
        "kuiper_ci",
        "mean_steps",
        "errors",
        "budget_curve",
        "kuiper_curve",
        "n",
        "missing",
    ):
        assert got[key] == expected[key], key
    assert got["accuracy"] == pytest.approx(len(runs["a_ok"]) / len(runs["order"]))


def test_filters_agreement_and_kappa_match_hand_computed_values(ws, runs) -> None:
    from madqa.metric.aggregate import cohen_kappa
    from madqa.space.explore.table import Filters, agreement, filter_ids

    assert filter_ids(ws, Filters(run="agent-a", outcome="incorrect", error="retrieval")) == runs["retrieval_a"]
    assert runs["retrieval_a"], "the scripted run must have retrieval failures"
    assert set(filter_ids(ws, Filters(run="agent-b", outcome="correct"))) == runs["b_ok"]
    counts = agreement(ws.run("agent-a"), ws.run("agent-b"))
    assert counts["counts"] == runs["counts"]
    a = [q in runs["a_ok"] for q in runs["order"]]
    b = [q in runs["b_ok"] for q in runs["order"]]
    po = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    pa, pb = sum(a) / len(a), sum(b) / len(b)
    pe = pa * pb + (1 - pa) * (1 - pb)
    assert counts["kappa"] == pytest.approx((po - pe) / (1 - pe)) == pytest.approx(cohen_kappa(a, b))
    only_b = filter_ids(ws, Filters(run="agent-a", other="agent-b", agreement="only_b"))
    assert set(only_b) == runs["b_ok"] - runs["a_ok"]
    first = runs["gold"][runs["order"][0]]
    assert filter_ids(ws, Filters(text=first["question"][5:40].upper())) == [first["id"]]
    assert set(filter_ids(ws, Filters(hop="cross_page"))) == {
        q for q, g in runs["gold"].items() if g["hop_type"] == "cross_page"
    }
    assert filter_ids(ws, Filters(min_steps=1, max_steps=1)) == runs["order"]  # one search each
    assert filter_ids(ws, Filters(min_steps=2)) == []


def test_question_view_pairs_searches_with_steps_and_flags_gold_pages(ws, runs) -> None:
    from madqa.space.explore.detail import question_view, steps_of

    qid = runs["retrieval_a"][0]
    view = question_view(ws, qid, ws.run("agent-a"))
    assert view["outcome"] == "incorrect" and view["error_class"] == "retrieval" and view["answer"] == [WRONG]
    searches = [s for step in view["steps"] for s in step.get("searches", [])]
    assert [s["query"] for s in searches] == [QUERY] and len(searches[0]["results"]) >= 1
    assert view["steps"][0]["input_tokens"] > 0 and view["steps"][-1]["final"]
    assert view["gold_answers"] == runs["gold"][qid]["answer_variants"]
    assert all(p["gold"] for p in view["evidence"])
    ref = ws.refs[qid]
    ev = ref.evidence[0]
    record = {
        "search_history": [
            {
                "query": "q",
                "results": [{"document": ev.document, "page": ev.page}, {"document": ev.document, "page": 999}],
            }
        ],
        "trajectory": [
            {"step": 1, "tool_calls": [{"name": "python_interpreter", "arguments": "print(1)"}], "observation": "1"},
            {"step": 2, "tool_calls": [{"name": "search_documents", "arguments": {"query": "q"}}]},
        ],
    }
    steps = steps_of(ref, record)
    assert steps[0]["code"] == ["print(1)"] and steps[0]["observation"] == "1"
    pages = steps[1]["searches"][0]["results"]
    assert [p["gold"] for p in pages] == [True, False] and pages[1]["gold_doc"]
    assert [s["query"] for s in steps_of(ref, {"search_history": [{"query": "only"}]})] == ["only"]


def test_html_escapes_file_text(ws, runs) -> None:
    from madqa.space.explore.html import question_html

    run = ws.run("agent-a")
    qid = runs["order"][1]
    saved = run.records[qid]
    run.records[qid] = {**saved, "answer": ["<script>alert(1)</script>"]}
    try:
        html = question_html(ws, qid, ["agent-a"], None)
    finally:
        run.records[qid] = saved
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_table_shows_outcomes_right_after_the_id_and_the_question_last(ws, runs) -> None:
    from madqa.space.explore.table import QUESTION_CELL_CHARS, table_rows

    headers, rows = table_rows(ws, runs["order"])
    assert headers == ["id", "agent-a", "agent-b", "hop", "domain", "category", "question"]
    for qid, row in zip(runs["order"], rows, strict=True):
        assert row[0] == qid
        marks = ("✓" if qid in runs["a_ok"] else "✗", "✓" if qid in runs["b_ok"] else "✗")
        assert (row[1][0], row[2][0]) == marks
        assert len(row[-1]) <= QUESTION_CELL_CHARS + 1 and runs["gold"][qid]["question"].startswith(
            row[-1].removesuffix("…")
        )


def _human_line(ref: Any, tmp_path: Path) -> Path:
    """A `madqa human` line (the app's own builder) that opened a gold page, then another page, then answered."""
    from datetime import UTC, datetime, timedelta

    from madqa.space.human.session import QuestionSession, build_human_record

    ticks = iter(datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC) + timedelta(seconds=s) for s in (0, 2, 5, 12.5, 20))
    session = QuestionSession({"id": ref.id, "question": ref.question}, clock=lambda: next(ticks))
    gold = ref.evidence[0]
    session.record_search("q", [(gold.document, gold.page)])
    session.record_view(gold.document, gold.page, "result")
    session.record_view(gold.document, gold.page + 1, "next")
    line = build_human_record(
        session,
        ["x"],
        annotator="ann1",
        batch="A",
        split="dev",
        mode="search",
        dataset={"name": "sample", "revision": None},
        config={"seed": 7, "k": 5},
    )
    path = tmp_path / "human-dev-a-ann1.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def test_detail_shows_the_run_settings_and_a_persons_page_views(ws, runs, tmp_path: Path) -> None:
    from madqa.agents.harness.config import DEFAULT_MAX_STEPS, DEFAULT_TOP_K
    from madqa.space.explore.html import run_column
    from madqa.space.explore.run_info import run_settings
    from madqa.space.explore.runs import open_workspace

    settings = dict(run_settings(ws.run("agent-a")))
    assert settings["agent"] == "bm25" and settings["model"] == SPEC and settings["oracle"] == "off"
    assert settings["top-k"] == str(DEFAULT_TOP_K) and settings["max steps T"] == str(DEFAULT_MAX_STEPS)
    assert settings["dataset"].startswith("sample")
    html = run_column(ws, runs["order"][0], "agent-a", None)
    assert f"max steps T <b data-setting='max steps T'>{DEFAULT_MAX_STEPS}</b>" in html
    assert "page-views" not in html  # an agent's line has no page views
    ref = ws.refs[runs["order"][0]]
    path = _human_line(ref, tmp_path)
    human = open_workspace([(str(path), path.read_text(encoding="utf-8"))], ws.references, split="dev")
    html = run_column(human, ref.id, human.names[0], None)
    gold = ref.evidence[0]
    assert "Page views (2)" in html
    assert f"{gold.document} p. {gold.page} ★<span style='color:#666'> via result +5.0 s" in html
    assert f"{gold.document} p. {gold.page + 1}<span style='color:#666'> via next +12.5 s" in html
    shown = dict(run_settings(human.runs[0]))
    assert shown["annotator"] == "ann1" and shown["mode"] == "search" and shown["seed"] == "7" and shown["k"] == "5"


def test_deep_link_round_trip_and_bad_parts_named(ws, runs) -> None:
    from urllib.parse import parse_qsl

    from madqa.space.explore.ui import deep_link, from_query

    qid = runs["order"][3]
    link = deep_link(qid, ["agent-b", "agent-a"])
    assert link == f"?q={qid}&runs=agent-b,agent-a"
    assert from_query(ws, dict(parse_qsl(link[1:]))) == (qid, ["agent-b", "agent-a"], [])
    got, shown, notes = from_query(ws, {"q": "nope", "runs": "agent-b,ghost"})
    assert got is None and shown == ["agent-b"]
    assert notes == ["the link's question 'nope' is not in this split", "no run named ghost (runs: agent-a, agent-b)"]


class _Pages:
    """A stand-in renderer: every page is a 850 x 1100 image (a portrait letter page)."""

    def image(self, document: str, page: int) -> Any:
        from PIL import Image

        if page > 9:
            raise ValueError("no such page")
        return Image.new("RGB", (850, 1100), "white")

    def encode(self, image: Any) -> bytes:
        return f"{image.size[0]}x{image.size[1]}".encode()


def test_thumbnails_are_whole_pages_and_open_large(ws) -> None:
    import base64

    from madqa.space.explore.thumbs import LARGE_SIDE, THUMB_SIDE, Thumbnails
    from madqa.space.explore.ui import ExplorerUI, Registry

    thumbs = Thumbnails(_Pages())

    def size(uri: str | None) -> tuple[int, int]:
        assert uri is not None
        w, h = base64.b64decode(uri.split(",", 1)[1]).decode().split("x")
        return int(w), int(h)

    small, large = size(thumbs.uri("d", 1)), size(thumbs.large_uri("d", "1"))
    assert small[1] == THUMB_SIDE and small[0] == round(THUMB_SIDE * 850 / 1100)  # the whole page, not a square
    assert large[1] == min(LARGE_SIDE, 1100) and large[0] == 850 and large[1] > 4 * small[1]
    assert thumbs.large_uri("d", 12) is None and thumbs.large_uri("d", "x") is None
    ui = ExplorerUI(Registry(), thumbs, None)  # type: ignore[arg-type]
    assert ui.page_image(["d", "2"]) == thumbs.large_uri("d", 2) and ui.page_image(["d"]) is None


def test_export_header_names_the_recorded_dataset_and_filters_inline(runs, tmp_path: Path) -> None:
    from madqa.cli import main

    out = tmp_path / "report.html"
    assert main(["view", *map(str, runs["paths"].values()), "--split", "dev", "--output", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    header = html[html.index("<header>") : html.index("</header>")]
    assert re.search(r"id='report-dataset'>sample(@[^<]+)?</b>", header), header
    assert "default" not in header and "{" not in header and "'name'" not in header
    assert f"· {len(runs['order'])} questions · 2 run(s) · written 20" in header
    solved = f"{len(runs['a_ok'])} of {len(runs['order'])} correct"
    assert f"<b>agent-a</b> ({runs['paths']['agent-a']}): {solved}" in header
    assert "max steps T 10" in header and "oracle off" in header and "model_options none" in header
    assert "id='q-filter'" in html and html.count("<script") == 1 and "<script>" in html  # inline, no src


# -- madqa view ------------------------------------------------------------------------------------------------


def test_view_bad_file_names_file_line_and_field(tmp_path: Path, layout, caplog) -> None:
    from madqa.cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q0001", "answer": ["x"]}\n{"id": "q0002", "answer": {"x": 1}}\n', encoding="utf-8")
    assert main(["view", str(bad), "--split", "dev", "--output", str(tmp_path / "r.html")]) == 2
    assert f"{bad} line 2: field 'answer'" in caplog.text
    test_ids = tmp_path / "test_ids.jsonl"
    rows = [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    test_ids.write_text("".join(json.dumps({"id": r["id"], "answer": ["x"]}) + "\n" for r in rows), encoding="utf-8")
    caplog.clear()
    assert main(["view", str(test_ids), "--split", "dev", "--output", str(tmp_path / "r.html")]) == 2
    refusal = f"none of its {len(rows)} line(s) is a question of split 'dev' of dataset 'sample'"  # evaluate's words
    assert refusal in caplog.text and not (tmp_path / "r.html").exists()


def test_view_test_split_only_where_labels_are_held(tmp_path: Path, layout, caplog) -> None:
    from madqa.cli import main

    rows = [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    path = tmp_path / "test_run.jsonl"
    path.write_text(
        "".join(json.dumps({"id": r["id"], "answer": r["answer_variants"][0]}) + "\n" for r in rows), encoding="utf-8"
    )
    out = tmp_path / "test.html"
    assert main(["view", str(path), "--split", "test", "--output", str(out)]) == 0  # the sample's labels are local
    assert "100.0%" in out.read_text(encoding="utf-8")
    caplog.clear()
    assert (
        main(
            [
                "view",
                str(path),
                "--split",
                "test",
                "--dataset",
                str(layout.dataset_dir),
                "--output",
                str(tmp_path / "hidden.html"),
            ]
        )
        == 2
    )
    assert "hidden" in caplog.text and not (tmp_path / "hidden.html").exists()


def test_export_is_one_self_contained_file(runs, tmp_path: Path) -> None:
    from madqa.cli import main

    out = tmp_path / "report.html"
    assert main(["view", *map(str, runs["paths"].values()), "--split", "dev", "--output", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "agree-both" in html and QUERY in html
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:|//)""", html, re.I)
    assert "<link" not in html and not re.search(r"<script[^>]*\bsrc", html, re.I)  # inline script only
    assert html.count("src='data:image/png;base64,") >= 4  # Kuiper, budget, cascade, effort


# -- the Space's Explore tab -----------------------------------------------------------------------------------

_OPENED: list[str] = []
_WATCH: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _WATCH and args and isinstance(args[0], (str, bytes, Path)):
        _OPENED.append(str(args[0]))


def test_space_explore_refuses_test_files_and_never_reads_the_labels(layout, runs, tmp_path: Path) -> None:
    """Dev/train only: a test split, a file of test ids, or a non-upload path (the labels file) is refused, and the
    private labels file is never opened while the tab handles them (an audit hook watches every open)."""
    import sys

    from gradio.utils import get_upload_folder

    from madqa.space.config import SpaceConfig
    from madqa.space.explore.tab import load_uploads
    from madqa.space.explore.ui import Registry

    config = SpaceConfig.from_env({"MADQA_HOME": str(layout.root), "MADQA_SPACE_DB": str(tmp_path / "db.sqlite")})
    registry = Registry()
    uploads = Path(get_upload_folder()) / f"explore-test-{tmp_path.name}"

    def upload(name: str, text: str) -> str:
        path = uploads / name.split(".")[0] / name  # gradio's layout: one folder per upload
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return str(path)

    rows = [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    test_file = "".join(
        json.dumps({"id": r["id"], "answer": r["answer_variants"][0], "citations": r["evidence"]}) + "\n" for r in rows
    )
    dev_text = runs["paths"]["agent-a"].read_text(encoding="utf-8")
    if not _WATCH:
        sys.addaudithook(_audit)
    _WATCH.append("on")
    _OPENED.clear()
    try:
        refused = [
            load_uploads(upload("t.jsonl", test_file), "dev", config, registry),
            load_uploads(upload("t2.jsonl", test_file), "test", config, registry),
            load_uploads(upload("d.jsonl", dev_text), "test", config, registry),
            load_uploads(str(layout.test_labels), "dev", config, registry),
        ]
        accepted = load_uploads(upload("a.jsonl", dev_text), "dev", config, registry)
    finally:
        _WATCH.clear()
    private = str(layout.private_dir)
    assert not [p for p in _OPENED if p.startswith(private)], "the Explore tab opened the private labels"
    assert all(key is None and message.startswith("**Refused:**") for message, key in refused)
    assert "none of its" in refused[0][0] and "hidden" in refused[1][0] and "hidden" in refused[2][0]
    assert "only uploaded files" in refused[3][0]
    message, key = accepted
    assert key is not None and "Loaded **a**" in message and registry.get(key).split == "dev"
    golds = {s for r in rows for v in r["answer_variants"] for s in v if len(s) >= 4}
    assert not [g for g in golds if any(g in m for m, _ in refused)]
    assert not list(uploads.glob("*/*.jsonl")), "uploads are deleted after reading"


def test_summary_says_kuiper_na_for_runs_whose_steps_do_not_vary(ws, runs) -> None:
    from madqa.space.explore.html import summary_table

    # both scripted runs search once per question (min_steps = max_steps = 1 above): fixed effort
    assert all(r.report["kuiper_applicable"] is False and r.report["kuiper"] is None for r in ws.runs)
    html = summary_table(ws)
    assert html.count("data-key='kuiper' data-value=''>n/a (fixed effort)</td>") == len(ws.runs)
    assert html.count("data-key='kuiper_ci' data-value=''>n/a (fixed effort)</td>") == len(ws.runs)

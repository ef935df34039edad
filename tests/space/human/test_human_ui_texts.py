"""What the human app says and counts (issue 24): a query without words is told so in plain text and is no step;
result captions tell results apart; a jump past the last page is named, not clamped; the practice board's units
match the main board's (percent with %, one decimal); a visitor's downloaded answers name the dataset as
`madqa evaluate` knows it."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from madqa.agents.corpus.search import PageHit
from madqa.space.human import view
from madqa.space.human.corpus import HumanCorpus


class Index:
    def search(self, query: str, k: int = 5) -> list[PageHit]:
        return [PageHit("harlan_superior_court_order.pdf", p, 1.0) for p in (2, 5)][:k]


class Renderer:
    def image(self, document: str, page: int):  # noqa: ANN201
        from PIL import Image

        return Image.new("RGB", (8, 8))


def fake_corpus() -> HumanCorpus:
    texts = {
        ("harlan_superior_court_order.pdf", 2): "Order of the court. The water rates are set at 4 percent.",
        ("harlan_superior_court_order.pdf", 5): "Appendix: the permit fees for 2019 and 2020.",
    }
    return HumanCorpus(Index(), Renderer(), Renderer(), {"harlan_superior_court_order.pdf": 6}, texts=texts)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["*", "?*", '"-"', "((  ))"])
def test_a_query_without_words_is_told_plainly_and_is_no_step(tmp_path: Path, query: str) -> None:
    from madqa.space.human.batches import make_batches
    from madqa.space.human.service import HumanService, StudyPlan

    plan = StudyPlan(
        split="dev",
        mode="search",
        batches=tuple(make_batches(["q1"], size=25)),
        questions={"q1": {"id": "q1", "question": "Q?"}},
        out_dir=None,
    )
    service = HumanService(plan, fake_corpus())
    run = service.start("ann", plan.batches[0].name)
    outcome = service.search(run, query)
    assert outcome.refused and outcome.pages == () and "has no searchable words" in str(outcome.error)
    shown = view.search_message(query, 0, outcome.error)
    assert "no searchable words" in shown and "too broad" not in shown
    # Markdown shows every asterisk of the query as an asterisk (a bare '*' pair would become italics).
    assert "*" not in shown.replace("\\*", "").replace("**", "") and f'"{view.plain(query)}"' in shown
    assert service.search(run, "water").pages  # a real search, then submit: only it is a step
    record, _ = service.submit(run, "q1", "x")
    assert record is not None and record["steps"] == 1
    assert [s["query"] for s in record["search_history"]] == ["water"]
    assert [s["query"] for s in record["refused_searches"]] == [query]
    assert "1 refused query not counted" in view.history_markdown(record["search_history"], 1)
    from madqa.metric.inputs import parse_results_text

    assert parse_results_text(json.dumps(record), "x")[0].steps == 1  # what `madqa evaluate` counts


def test_captions_name_the_title_and_page_and_tell_repeated_titles_apart() -> None:
    corpus = fake_corpus()
    pages = list(corpus.search("water").pages)
    labels = view.captions(pages, lambda d, p: corpus.snippet(d, p, "water"))
    assert labels[0].startswith("p. 2 · Harlan superior court order") and labels[1].startswith("p. 5 · Harlan")
    assert "water rates" in labels[0] and "permit fees" in labels[1]  # same title: a snippet of each page
    assert len(set(labels)) == 2
    assert view.captions([("a_b.pdf", 1), ("c.pdf", 3)], lambda d, p: "never") == ["p. 1 · A b", "p. 3 · C"]


def test_a_jump_past_the_document_is_named() -> None:
    assert view.jump_problem(99, 2) == "page 99 does not exist; this document has 2 pages"
    assert view.jump_problem(0, 1) == "page 0 does not exist; this document has 1 page"
    assert view.jump_problem(2, 2) is None


def test_the_practice_board_uses_the_main_boards_units() -> None:
    from madqa.space.practice_runs import SharedRun, practice_row

    row = practice_row(
        SharedRun(
            1,
            "2026-12-01T00:00:00",
            "me",
            "Andromeda",
            2,
            {"accuracy": 1.0, "anls": 0.877, "page_f1": 1.0, "doc_f1": 0.6667, "mean_steps": 1.5},
        )
    )
    assert (row["Accuracy"], row["ANLS*"], row["Page F1"], row["Doc F1"]) == (100.0, 87.7, 100.0, 66.7)


def test_the_practice_board_is_shown_in_percent_with_one_decimal() -> None:
    import pandas as pd

    from madqa.space.human.practice import shown_board
    from madqa.space.practice_runs import COLUMNS, SharedRun, practice_row

    runs = [
        SharedRun(
            1,
            "2026-12-01T00:00:00",
            "me",
            "Andromeda",
            2,
            {"accuracy": 1.0, "anls": 0.877, "page_f1": 1.0, "doc_f1": 0.6667, "mean_steps": 1.5},
        ),
        SharedRun(2, "2026-12-01T00:00:00", "you", "Andromeda", 1, {"accuracy": 0.0, "mean_steps": 2.25}),
    ]
    frame = pd.DataFrame([practice_row(r) for r in runs], columns=list(COLUMNS))
    shown = shown_board(frame)
    header, *rows = [line.split("|")[1:] for line in shown.to_string(delimiter="|").splitlines()]
    assert header == list(COLUMNS)
    assert [r[5:] for r in rows] == [["100.0%", "87.7%", "100.0%", "66.7%", "1.5"], ["0.0%", "—", "—", "—", "2.2"]]
    assert shown.data["Accuracy"].tolist() == [100.0, 0.0]  # numbers underneath: the table sorts by value


def test_downloaded_practice_answers_evaluate_without_a_dataset_warning(
    layout, tmp_path: Path, caplog, capsys
) -> None:
    import gradio as gr

    from madqa.cli import main
    from madqa.space.human.practice import build_practice_tab

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    with gr.Blocks():
        service = build_practice_tab(str(layout.dataset_dir))  # the Space passes the folder it built
    assert service is not None
    run = service.start("visitor", service.batch_names()[0])
    service.submit(run, str(run.current_item()["id"]), "an answer")
    path = tmp_path / "mine.jsonl"
    path.write_text(run.jsonl(), encoding="utf-8")
    assert json.loads(path.read_text().splitlines()[0])["dataset"]["name"] == "sample"
    caplog.set_level(logging.WARNING)
    assert main(["evaluate", str(path), "--split", "dev", "--json", "--resamples", "10"]) == 0
    capsys.readouterr()
    assert not [r for r in caplog.records if "another dataset" in r.getMessage()]

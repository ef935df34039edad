"""Inference cost (metric/cost.py, agents/harness/prices.py): prices applied to the token counts of constructed lines
equal
hand-computed dollars; an unknown model is counted and named, never free; `--prices` replaces the shipped table;
a bad price file is one line naming the file, line, model and field (exit 2)."""

from __future__ import annotations

import doctest
import importlib
import json
from pathlib import Path

import pytest

from madqa.agents.harness.prices import load_prices, parse_price_text
from madqa.cli import main
from madqa.metric.cost import Price, PriceError, PriceTable, line_usage, run_cost, unpriced_reason

TABLE = PriceTable({"gpt-4.1": Price(2.0, 8.0, 0.5), "cheap": Price(0.1, 0.2)}, "test")


def agent_line(i: int, model: str, tokens_in: int, tokens_out: int, **extra) -> dict:
    return {
        "id": f"g{i}",
        "question": f"q{i}?",
        "answer": [f"Answer{i}"],
        "citations": [],
        "model": model,
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        **extra,
    }


def test_doctests() -> None:
    result = doctest.testmod(importlib.import_module("madqa.metric.cost"))
    assert result.attempted > 5 and result.failed == 0


def test_run_cost_by_hand() -> None:
    lines = [
        agent_line(1, "openai:gpt-4.1", 1_000_000, 100_000),  # 1.0 M x $2 + 0.1 M x $8 = $2.80
        # 0.1 M fresh x $2 + 0.4 M cached x $0.5 = $0.20 + $0.20 = $0.40
        agent_line(
            2, "gpt-4.1", 0, 0, usage={"input_tokens": 500_000, "output_tokens": 0, "cached_input_tokens": 400_000}
        ),
        agent_line(3, "litellm:acme/mystery-1", 10, 10),  # unknown model: unpriced, counted
        {"id": "g4", "question": "q4?", "answer": [], "model": "gpt-4.1"},  # no token counts
    ]
    cost = run_cost(lines, TABLE)
    assert cost.total_usd == pytest.approx(2.80 + 0.40)
    assert cost.per_question_usd == pytest.approx(3.20 / 2)
    assert (cost.n_lines, cost.n_priced, cost.n_unknown_model, cost.n_no_tokens) == (4, 2, 1, 1)
    assert cost.unknown_models == {"litellm:acme/mystery-1": 1} and not cost.complete
    assert cost.input_tokens == 1_500_010 and cost.output_tokens == 100_010
    reason = unpriced_reason(cost)
    assert reason is not None and "mystery-1" in reason and "1 line(s) without a model id or token counts" in reason


def test_sub_model_tokens_priced_apart() -> None:
    line = agent_line(
        1,
        "openai:gpt-4.1",
        3_000_000,
        1_000_000,
        config={"sub_model": "cheap"},
        effort={"sub_input_tokens": 1_000_000, "sub_output_tokens": 1_000_000},
    )
    parts = line_usage(line)
    assert parts is not None and [(u.model, u.input_tokens, u.output_tokens) for u in parts] == [
        ("openai:gpt-4.1", 2_000_000, 0),
        ("cheap", 1_000_000, 1_000_000),
    ]
    # root: 2 M x $2 = $4; sub: 1 M x $0.1 + 1 M x $0.2 = $0.3
    assert run_cost([line], TABLE).total_usd == pytest.approx(4.3)
    # an unpriced sub-model makes the whole line unpriced, never half free
    other = {**line, "config": {"sub_model": "unlisted"}}
    assert run_cost([other], TABLE).unknown_models == {"unlisted": 1}


def ledger_line(by_role: dict, **extra) -> dict:
    totals = {"input_tokens": 0, "output_tokens": 0}  # the totals are not what a line with a ledger is priced by
    return agent_line(1, "openai:gpt-4.1", 0, 0, usage={**totals, "by_role": by_role}, **extra)


def test_ledger_priced_per_role_by_hand() -> None:
    line = ledger_line(
        {
            # 1 M fresh x $2 + 1 M cached x $0.5 + 0.5 M out x $8 = $2 + $0.5 + $4 = $6.50 (reasoning is part of out)
            "agent": {
                "input_tokens": 2_000_000,
                "cached_input_tokens": 1_000_000,
                "output_tokens": 500_000,
                "reasoning_tokens": 200_000,
                "calls": 4,
            },
            # at config.sub_model's price: 1 M x $0.1 + 2 M x $0.2 = $0.50
            "sub_model": {"input_tokens": 1_000_000, "output_tokens": 2_000_000, "calls": 3},
            "embedder": {"calls": 2, "model": "local-embedder"},  # calls only, at a price of 0: $0
        },
        config={"sub_model": "cheap"},
    )
    table = PriceTable({**TABLE.prices, "local-embedder": Price(0.0, 0.0)}, "test")
    cost = run_cost([line], table)
    assert cost.complete and cost.total_usd == pytest.approx(7.00)
    split = cost.by_role
    assert list(split) == ["agent", "sub_model", "embedder"]
    assert split["agent"]["usd"] == pytest.approx(6.50) and split["sub_model"]["usd"] == pytest.approx(0.50)
    assert split["embedder"]["usd"] == 0.0 and split["embedder"]["lines_without_tokens"] == 1
    assert (split["agent"]["calls"], split["agent"]["cached_input_tokens"], split["agent"]["reasoning_tokens"]) == (
        4,
        1_000_000,
        200_000,
    )
    assert split["sub_model"]["models"] == {"cheap": 1} and "reasoning_tokens" not in split["sub_model"]
    assert json.loads(json.dumps(cost.summary()))["by_role"]["agent"]["usd"] == pytest.approx(6.50)


def test_an_embedder_is_never_free() -> None:
    roles = {"agent": {"input_tokens": 1_000_000, "output_tokens": 0, "calls": 1}}
    unlisted = run_cost([ledger_line({**roles, "embedder": {"calls": 2, "model": "st:big"}})], TABLE)
    assert unlisted.unknown_models == {"st:big": 1} and unlisted.total_usd is None
    assert unlisted.by_role["agent"]["usd"] is None  # an unpriced line adds to no role's USD
    paid = PriceTable({**TABLE.prices, "st:big": Price(0.02, 0.0)}, "test")
    uncounted = run_cost([ledger_line({**roles, "embedder": {"calls": 2, "model": "st:big"}})], paid)
    assert uncounted.total_usd is None and uncounted.n_uncounted_role == 1
    assert "calls but no token counts of embedder (st:big)" in str(unpriced_reason(uncounted))
    counted = ledger_line({**roles, "embedder": {"calls": 2, "model": "st:big", "input_tokens": 1_000_000}})
    assert run_cost([counted], paid).total_usd == pytest.approx(2.0 + 0.02)
    shipped = run_cost([ledger_line({**roles, "embedder": {"calls": 1, "model": "wordllama:256"}})], load_prices())
    assert shipped.complete and shipped.total_usd == pytest.approx(2.0)  # the bundled embedder runs locally: $0
    nameless = run_cost([ledger_line({**roles, "judge": {"calls": 1, "input_tokens": 5, "output_tokens": 1}})], TABLE)
    assert nameless.unknown_models == {"(judge: no model named)": 1}


def test_old_lines_without_a_ledger_are_priced_as_before() -> None:
    old = agent_line(
        1,
        "openai:gpt-4.1",
        3_000_000,
        1_000_000,
        config={"sub_model": "cheap"},
        effort={"sub_input_tokens": 1_000_000, "sub_output_tokens": 1_000_000},
    )
    by_role = {
        "agent": {"input_tokens": 2_000_000, "output_tokens": 0, "calls": 2},
        "sub_model": {"input_tokens": 1_000_000, "output_tokens": 1_000_000, "calls": 1},
    }
    new = {**old, "usage": {**old["usage"], "by_role": by_role}}
    assert run_cost([old], TABLE).total_usd == pytest.approx(4.3) == run_cost([new], TABLE).total_usd
    assert run_cost([old], TABLE).by_role["sub_model"]["usd"] == pytest.approx(0.3)
    # a ledger that cannot be read (a negative count) falls back to the totals, never to a smaller sum
    broken = {**old, "usage": {**old["usage"], "by_role": {"agent": {"input_tokens": -1, "calls": 1}}}}
    assert run_cost([broken], TABLE).total_usd == pytest.approx(4.3)


def test_human_lines_are_not_free() -> None:
    cost = run_cost([{"id": "g1", "system_type": "human", "model": "human:a"}], TABLE)
    assert cost.total_usd is None and cost.n_human == 1 and unpriced_reason(cost) == "human run: no model tokens"


def test_shipped_table_and_bad_tables(tmp_path: Path) -> None:
    shipped = load_prices()
    assert shipped.lookup("local") == Price(0.0, 0.0) and shipped.lookup("openai:gpt-4.1") is not None
    assert shipped.lookup("litellm:anthropic/claude-sonnet-4-5") is not None
    with pytest.raises(PriceError, match=r"p.yaml line 2: model 'b': field 'output': must be a number"):
        parse_price_text("a: {input: 1, output: 2}\nb: {input: 1, output: cheap}\n", "p.yaml")
    with pytest.raises(PriceError, match=r"p.yaml line 1: model 'a': unknown field 'inptu'"):
        parse_price_text("a: {inptu: 1, output: 2}\n", "p.yaml")
    with pytest.raises(PriceError, match=r"p.yaml line 1: model 'a': field 'input': must be a number >= 0"):
        parse_price_text("a: {input: -1, output: 2}\n", "p.yaml")
    with pytest.raises(PriceError, match=r"p.yaml line 2: not valid YAML"):
        parse_price_text("a: {input: 1\nb: [\n", "p.yaml")
    with pytest.raises(PriceError, match="no such price file"):
        load_prices(tmp_path / "none.yaml")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    gold = [
        {
            "id": f"g{i}",
            "question": f"q{i}?",
            "answer_variants": [[f"Answer{i}"]],
            "evidence": [{"document": "x.pdf", "page": i}],
        }
        for i in (1, 2)
    ]
    rows = {
        "gold": gold,
        "a": [agent_line(i, "openai:gpt-4.1", 1000, 100) for i in (1, 2)],
        "h": [
            {
                "id": f"g{i}",
                "question": f"q{i}?",
                "answer": [f"Answer{i}"],
                "citations": [],
                "system_type": "human",
                "model": "human:me",
            }
            for i in (1, 2)
        ],
    }
    out = {}
    for name, lines in rows.items():
        out[name] = tmp_path / f"{name}.jsonl"
        out[name].write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return out


def test_compare_shows_cost_and_prices_override(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    base = ["compare", str(files["a"]), str(files["h"]), "--gold", str(files["gold"]), "--resamples", "20"]
    assert main([*base, "--json"]) == 0
    a, h = json.loads(capsys.readouterr().out)["systems"]
    # shipped gpt-4.1: per question 1000 x $2/M + 100 x $8/M = $0.0028; two questions: $0.0056
    assert a["cost"]["per_question_usd"] == pytest.approx(0.0028) and a["cost"]["total_usd"] == pytest.approx(0.0056)
    assert h["cost"]["reason"] == "human run: no model tokens"
    prices = tmp_path / "p.yaml"
    prices.write_text("gpt-4.1: {input: 10, output: 100}\n", encoding="utf-8")
    assert main([*base, "--json", "--prices", str(prices)]) == 0
    a = json.loads(capsys.readouterr().out)["systems"][0]
    # 1000 x $10/M + 100 x $100/M = $0.02 per question
    assert a["cost"]["per_question_usd"] == pytest.approx(0.02)
    assert main(base) == 0
    assert "$0.0056 ($0.0028/q)" in capsys.readouterr().out
    prices.write_text("gpt-4.1: {input: 10}\n", encoding="utf-8")
    assert main([*base, "--prices", str(prices)]) == 2
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [f"{prices} line 1: model 'gpt-4.1': field 'output' is missing"]


def test_explorer_summary_shows_cost(files: dict[str, Path]) -> None:
    from madqa.metric.inputs import parse_references, read_jsonl_text
    from madqa.space.explore.html import summary_html
    from madqa.space.explore.runs import open_workspace

    gold = files["gold"]
    refs = parse_references([r for _, r in read_jsonl_text(gold.read_text(encoding="utf-8"), str(gold))], "gold")
    ws = open_workspace(
        [(str(files[n]), files[n].read_text(encoding="utf-8")) for n in ("a", "h")], refs, split="dev", resamples=20
    )
    html = summary_html(ws, with_figures=False)
    # two questions at 1000 x $2/M + 100 x $8/M = $0.0028 each (shipped gpt-4.1 price)
    assert "a: $0.0028 per question ($0.0056)" in html and "h: – (human run: no model tokens)" in html


def test_compare_splits_the_cost_by_role(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    by_role = {
        "agent": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 100, "calls": 2},
        "sub_model": {"input_tokens": 500, "output_tokens": 50, "calls": 1, "reasoning_tokens": 20},
    }
    lines = [
        agent_line(
            i, "openai:gpt-4.1", 1500, 150, usage={"input_tokens": 1500, "output_tokens": 150, "by_role": by_role}
        )
        for i in (1, 2)
    ]
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    base = ["compare", str(ledger), str(files["a"]), "--gold", str(files["gold"]), "--resamples", "20"]
    assert main([*base, "--json"]) == 0
    split = json.loads(capsys.readouterr().out)["systems"][0]["cost"]["by_role"]
    # per line: agent 600 fresh x $2/M + 400 cached x $0.5/M + 100 x $8/M = $0.0022; sub-model (the root model,
    # no sub_model named) 500 x $2/M + 50 x $8/M = $0.0014; two lines
    assert split["agent"]["usd"] == pytest.approx(0.0044) and split["sub_model"]["usd"] == pytest.approx(0.0028)
    assert (split["agent"]["calls"], split["sub_model"]["reasoning_tokens"]) == (4, 40)
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "agent (openai:gpt-4.1): 4 calls, 2,000 in (800 cached), 200 out, $0.0044" in text
    assert "sub_model (openai:gpt-4.1): 2 calls, 1,000 in, 100 out (40 reasoning), $0.0028" in text


def test_cli_cost_helpers_doctests() -> None:
    for name in ("madqa.cli.compare_costs", "madqa.cli.judge_usage"):
        result = doctest.testmod(importlib.import_module(name))
        assert result.attempted >= 2 and result.failed == 0, name


def test_an_absurd_token_count_is_no_count() -> None:
    """A line claiming more tokens than any run spends (over 10**10) is not priced at all, so a submitted file
    cannot put a cost of 2e24 USD on the board's cost axis (and squash every other row's point)."""
    from madqa.metric.board_cost import submission_cost

    table = PriceTable({"m": Price(2.0, 8.0)}, "p.yaml", "2025-09-29")
    sane = {"id": "a", "model": "m", "usage": {"input_tokens": 1000, "output_tokens": 500}}
    absurd = {**sane, "usage": {"input_tokens": 10**30, "output_tokens": 500}}
    assert submission_cost([sane], table)["usd_per_question"] == pytest.approx(0.006)
    cell = submission_cost([sane, absurd], table)
    assert cell["usd_per_question"] is None and cell["status"] == "no token counts" and cell["n_priced"] == 1

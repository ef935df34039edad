"""Shared by the tests (moved out of test_explore.py, which other tests imported)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from helpers.fakes import ScriptedModel, search_then_cite

QUERY = "riverton OR invoice OR menu"


def scripted_dev_run(out: Path) -> Path:
    """``madqa run`` on the whole dev split with the scripted model (the sample must be set up)."""
    from madqa.agents.harness.runner import RunConfig, run_benchmark

    summary = run_benchmark(RunConfig(model=SPEC, split="dev"), out, overwrite=True)
    assert summary.errors == 0 and summary.written > 10
    return out


def derived_runs(base: Path, folder: Path) -> dict[str, Any]:
    """Runs A and B (see the module docstring) and the hand-computed expectations."""
    from madqa.loading_script.load import load_gold

    gold = load_gold("dev")
    lines = {r["id"]: r for r in (json.loads(x) for x in base.read_text(encoding="utf-8").splitlines() if x.strip())}
    order = [g["id"] for g in gold]
    a_ok = {qid for i, qid in enumerate(order) if i % 3 == 0}
    b_ok = {qid for i, qid in enumerate(order) if i % 2 == 0}
    paths = {}
    for name, ok in (("agent-a", a_ok), ("agent-b", b_ok)):
        rows = []
        for g in gold:
            row = dict(lines[g["id"]])
            row["answer"] = list(g["answer_variants"][0]) if g["id"] in ok else [WRONG]
            rows.append(row)
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        paths[name] = path
    cited = {g["id"]: {c["document"] for c in lines[g["id"]]["citations"]} for g in gold}
    gold_docs = {g["id"]: {e["document"] for e in g["evidence"]} for g in gold}
    retrieval_a = [q for q in order if q not in a_ok and not cited[q] & gold_docs[q]]
    return {
        "paths": paths,
        "gold": {g["id"]: g for g in gold},
        "order": order,
        "a_ok": a_ok,
        "b_ok": b_ok,
        "retrieval_a": retrieval_a,
        "counts": {
            "both": len(a_ok & b_ok),
            "only_a": len(a_ok - b_ok),
            "only_b": len(b_ok - a_ok),
            "neither": len(set(order) - a_ok - b_ok),
            "unscored": 0,
        },
    }


SPEC = "py:helpers.explore_runs:scripted_model"


WRONG = "zzz-wrong-answer"


def scripted_model(**_: Any) -> ScriptedModel:
    """One fixed search, then an answer citing the first page shown (never a label); tests/helpers/fakes.py's model."""
    return ScriptedModel(
        [search_then_cite("17.85", QUERY)],
        text_only=True,
        usage=lambda text, n: (len(text) // 4, 9),
        model_id="scripted",
    )


@contextmanager
def serving_view_app(paths: list[Path]) -> Iterator[str]:
    """`madqa view`'s app on ``paths`` (dev split), served on a free local port: yields its URL."""
    import argparse

    from helpers.ports import free_port
    from madqa.cli.view_cmd import prepare
    from madqa.space.explore.ui import build_view_app
    from madqa.space.gradio_launch import launch

    args = argparse.Namespace(
        results=list(paths), split="dev", dataset=None, gold=None, no_thumbnails=False, resamples=200
    )
    demo = build_view_app(*prepare(args))
    port = free_port()
    launch(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@pytest.fixture(scope="module", name="runs")
def derived_runs_fixture(layout, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Runs A and B derived from one scripted run of the dev split, written once per test module."""
    folder = tmp_path_factory.mktemp("explore_runs")
    return derived_runs(scripted_dev_run(folder / "scripted.jsonl"), folder)


@pytest.fixture(scope="module", name="url")
def view_app_url_fixture(runs: dict[str, Any]) -> Iterator[str]:
    """`madqa view`'s app on runs A and B, served once per test module: its URL."""
    with serving_view_app(list(runs["paths"].values())) as served:
        yield served

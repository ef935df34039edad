"""``madqa bench view``: open a large run in the explorer and switch questions, against the issue's targets.

The run is synthetic and deterministic (seeded): ``--n`` gold questions (2,250 by default) over the documents of
the local sample when ``madqa setup`` has run (so thumbnails are real renders), else over invented document names
(thumbnails are then placeholders), and one results line per question with a full trajectory as ``madqa run``
writes it: 1-10 model steps, each with a model output, token counts and a search of 5 result pages (or a code
step), observations of up to 2,000 characters. Timed (median of ``--repeat``):

* **open**: parse + match + score + report of the file (:func:`madqa.space.explore.runs.open_workspace`), the
  question table, and the first question's view: what happens before the first page shows. Target < 2 s. The
  summary's figures are timed on their own: the app draws them when the Summary tab is first opened (then cached).
* **switch**: the trajectory panel of another question (:func:`madqa.space.explore.html.question_html` with
  thumbnails), cold (first visit: pages rendered) and warm (revisit). Target < 300 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from .measure import emit, median_cpu, median_wall

TARGET_OPEN_S = 2.0
TARGET_SWITCH_S = 0.3


#: Command lines that ``madqa bench view --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench view --n 500 --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the view benchmark's arguments."""
    parser.add_argument("--n", type=int, default=2250, help="questions in the synthetic run")
    parser.add_argument("--repeat", type=int, default=3, help="timed opens; the median is reported")
    parser.add_argument("--switches", type=int, default=20, help="question switches timed")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def sample_pages() -> list[tuple[str, int]]:
    """``(document, page)`` pairs of the local sample's page corpus, or ``[]`` before ``madqa setup``."""
    try:
        from madqa.loading_script.load import load_pages

        return [(str(r["document"]), int(r["page"])) for r in load_pages("sample")]
    except Exception:  # noqa: BLE001 - the benchmark falls back to invented documents
        return []


def synthetic_run(n: int, seed: int = 0, pages: list[tuple[str, int]] | None = None) -> tuple[list[dict], str]:
    """Gold records and a results JSONL text with full trajectories for ``n`` questions (deterministic)."""
    rng = random.Random(seed)
    pages = pages or [(f"doc_{d:03d}.pdf", p) for d in range(80) for p in range(1, 31)]
    gold, lines = [], []
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 40
    for i in range(n):
        evidence = [dict(zip(("document", "page"), rng.choice(pages), strict=True)) for _ in range(rng.randint(1, 2))]
        value = f"{rng.randint(1, 99999)} units"
        qid = f"view-{i:05d}"
        gold.append(
            {
                "id": qid,
                "question": f"Synthetic question {i} about {evidence[0]['document']}?",
                "answer_variants": [[value]],
                "evidence": evidence,
                "domain": rng.choice(["finance", "legal", "health"]),
                "document_category": rng.choice(["report", "form", "manual"]),
            }
        )
        history, trajectory = [], []
        n_steps = rng.randint(1, 10)
        for s in range(1, n_steps + 1):
            final = s == n_steps
            results = [dict(zip(("document", "page"), rng.choice(pages), strict=True)) for _ in range(5)]
            if rng.random() < 0.4:
                results[rng.randint(0, 4)] = dict(evidence[0])
            calls = []
            if not final:
                query = f"query {s} for question {i}"
                history.append({"query": query, "results": results, "count": 5, "error": None})
                calls = [{"name": "search_documents", "arguments": {"query": query}}]
            else:
                calls = [{"name": "final_answer", "arguments": {"answer": [value]}}]
            trajectory.append(
                {
                    "step": s,
                    "model_output": f"Thought {s}: " + filler[:600],
                    "tool_calls": calls,
                    "observation": filler[: rng.randint(200, 2000)],
                    "images": 0,
                    "error": None,
                    "input_tokens": rng.randint(500, 9000),
                    "output_tokens": rng.randint(20, 400),
                    "duration_s": round(rng.random() * 3, 3),
                    "final": final,
                }
            )
        roll = rng.random()
        answer = [value] if roll < 0.55 else [f"{value}x"] if roll < 0.8 else []
        lines.append(
            json.dumps(
                {
                    "schema_version": 1,
                    "id": qid,
                    "question": gold[-1]["question"],
                    "answer": answer,
                    "citations": [dict(evidence[0])] if rng.random() < 0.6 else [],
                    "search_history": history,
                    "steps": len(history),
                    "agent": "bm25",
                    "model": "synthetic",
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                    "elapsed_s": 1.0,
                    "error": None if answer else "no final answer",
                    "final_state": "answered",
                    "config": {},
                    "trajectory": trajectory,
                }
            )
        )
    return gold, "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Time open and question switch; print them next to the targets."""
    from madqa.metric.inputs import parse_references
    from madqa.space.explore.html import question_html, summary_html
    from madqa.space.explore.runs import open_workspace
    from madqa.space.explore.table import Filters, filter_ids, table_rows
    from madqa.space.explore.thumbs import Thumbnails

    pages = sample_pages()
    gold, text = synthetic_run(args.n, args.seed, pages)
    refs = parse_references(gold, "synthetic gold")
    thumbs = Thumbnails("sample", enabled=bool(pages))

    def open_run() -> Any:
        ws = open_workspace([("bench.jsonl", text)], refs, split="dev")
        table_rows(ws, filter_ids(ws, Filters()))
        question_html(ws, refs[0].id, ws.names, thumbs)
        return ws

    open_s = median_wall(open_run, args.repeat)
    open_cpu_s = median_cpu(open_run, args.repeat)  # this process's CPU: what the machine's other load cannot inflate
    ws = open_run()
    start = time.perf_counter()
    summary_html(ws)
    figures_s = time.perf_counter() - start
    rng = random.Random(args.seed + 1)
    picks = [refs[rng.randrange(len(refs))].id for _ in range(args.switches)]
    cold, warm = [], []
    for qid in picks:
        for bucket in (cold, warm):
            start = time.perf_counter()
            question_html(ws, qid, ws.names, thumbs)
            bucket.append(time.perf_counter() - start)
    size_mb = len(text.encode("utf-8")) / 2**20
    figures = {
        "n": args.n,
        "file_mb": round(size_mb, 1),
        "thumbnails": "rendered" if pages else "placeholders",
        "open_s": open_s,
        "open_cpu_s": open_cpu_s,
        "switch_cold_s": statistics.median(cold),
        "switch_warm_s": statistics.median(warm),
        "switch_cold_max_s": max(cold),
        "summary_s": figures_s,
        "target_open_s": TARGET_OPEN_S,
        "target_switch_s": TARGET_SWITCH_S,
    }
    lines = [
        f"view benchmark: {args.n} lines ({size_mb:.1f} MB, full trajectories), thumbnails {figures['thumbnails']}",
        f"  open (parse+score+report+table+first question), median of {args.repeat}: {open_s:.3f} s"
        f"   target < {TARGET_OPEN_S:.1f} s   (CPU {open_cpu_s:.3f} s)",
        f"  question switch, median of {args.switches}: cold {figures['switch_cold_s'] * 1000:.1f} ms, warm "
        f"{figures['switch_warm_s'] * 1000:.1f} ms (cold max {max(cold) * 1000:.1f} ms)"
        f"   target < {TARGET_SWITCH_S * 1000:.0f} ms",
        f"  summary tab, first open (figures drawn, then cached): {figures_s:.3f} s",
    ]
    return emit(figures, lines, args.json)

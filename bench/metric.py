"""``madqa bench metric``: time scoring 500 predictions in ``anls`` mode, and the Kuiper bootstrap CI.

The data are synthetic and deterministic (seeded): gold questions with 1-3 answer variants of short strings,
1-3 evidence pages, predictions that are right, near-miss or wrong, 0-3 citations and 0-10 search steps.
Targets: scoring < 1 s, bootstrap < 0.5 s (median of ``--repeat`` runs).
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

from .measure import emit, median_cpu, median_wall

TARGET_SCORE_S = 1.0
TARGET_BOOTSTRAP_S = 0.5


#: Command lines that ``madqa bench metric --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench metric --n 500 --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the metric benchmark's arguments."""
    parser.add_argument("--n", type=int, default=500, help="predictions to score")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; the median is reported")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def synthetic_run(n: int, seed: int = 0) -> tuple[list[dict[str, Any]], str]:
    """Deterministic gold records and results JSONL text for ``n`` questions."""
    rng = random.Random(seed)
    gold, lines = [], []
    for i in range(n):
        value = f"{rng.randint(1, 99999):,} {rng.choice(['kg', 'USD', 'units', 'pages'])}"
        variants = [[value], [value.split()[0]]][: rng.randint(1, 2)]
        if i % 7 == 0:
            variants = [[f"item {k} of {i}" for k in range(rng.randint(2, 4))]]
        docs = [f"doc_{rng.randint(0, 79):03d}.pdf" for _ in range(rng.randint(1, 2))]
        evidence = [{"document": d, "page": rng.randint(1, 40)} for d in docs]
        gold.append(
            {
                "id": f"dev/{i}",
                "question": f"Question {i}?",
                "answer_variants": variants,
                "evidence": evidence,
                "domain": rng.choice(["finance", "legal", "health"]),
                "document_category": rng.choice(["report", "form", "manual"]),
            }
        )
        roll = rng.random()
        answer = list(variants[0]) if roll < 0.6 else [variants[0][0] + "x"] if roll < 0.8 else ["unrelated text"]
        citations = [dict(e) for e in evidence[: rng.randint(0, len(evidence))]]
        if rng.random() < 0.3:
            citations.append({"file": f"doc_{rng.randint(0, 79):03d}.pdf", "page": rng.randint(1, 40)})
        history = [f"query {k}" for k in range(rng.randint(0, 10))]
        lines.append(
            json.dumps(
                {
                    "id": f"dev/{i}",
                    "question": f"Question {i}?",
                    "answer": answer,
                    "citations": citations,
                    "search_history": history,
                }
            )
        )
    return gold, "\n".join(lines) + "\n"


def costliest_line_cpu(repeat: int) -> dict[str, float]:
    """CPU seconds of ANLS* for one line at the parser's answer caps vs a one-word answer (24-character gold).

    The caps (``metric/schema.py``) make this the most one legal line can cost; the Space's default CPU budget per
    submission (``space/scoring_pool.py``) is sized from it.
    """
    from madqa.metric import schema
    from madqa.metric.scoring import anls_star

    gold = (("the quarterly revenue 24",),)
    n = schema.MAX_ANSWER_LINE_CHARS // schema.MAX_ANSWER_STRING_CHARS
    long_strings = [("the quarterly revenue 24 " * 400)[: schema.MAX_ANSWER_STRING_CHARS]] * n
    many_strings = [
        f"revenue {k:04d}"[:20].ljust(schema.MAX_ANSWER_LINE_CHARS // schema.MAX_ANSWER_ITEMS, "x")
        for k in range(schema.MAX_ANSWER_ITEMS)
    ]
    return {
        "line_at_caps_long_strings_cpu_s": median_cpu(lambda: anls_star(long_strings, gold), repeat),
        "line_at_caps_many_strings_cpu_s": median_cpu(lambda: anls_star(many_strings, gold), repeat),
        "one_word_cpu_s": median_cpu(lambda: anls_star(["revenue"], gold), repeat),
    }


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and print the timings (a table, or JSON with ``--json``)."""
    import numpy as np

    from madqa.metric import schema
    from madqa.metric.inputs import parse_references, parse_results_text
    from madqa.metric.kuiper import kuiper_bootstrap
    from madqa.metric.report import ReportOptions, evaluate_predictions, score_predictions

    gold, text = synthetic_run(args.n, args.seed)
    references = parse_references(gold, "synthetic gold")

    def score() -> dict[str, Any]:
        predictions = parse_results_text(text, "synthetic.jsonl")
        return evaluate_predictions(predictions, references, ReportOptions(n_resamples=args.resamples))

    report = score()  # warm-up (imports, caches)
    items = score_predictions(parse_results_text(text, "synthetic.jsonl"), references).items
    steps = np.array([it.steps for it in items], dtype=np.int64)
    correct = np.array([bool(it.correct) for it in items], dtype=np.int64)
    score_s = median_wall(score, args.repeat)
    boot_s = median_wall(lambda: kuiper_bootstrap(steps, correct, n_resamples=args.resamples, seed=0), args.repeat)
    result = {
        "n": args.n,
        "resamples": args.resamples,
        "repeat": args.repeat,
        "score_s": score_s,
        "bootstrap_s": boot_s,
        "score_target_s": TARGET_SCORE_S,
        "bootstrap_target_s": TARGET_BOOTSTRAP_S,
        "score_ok": score_s < TARGET_SCORE_S,
        "bootstrap_ok": boot_s < TARGET_BOOTSTRAP_S,
        "accuracy": report["accuracy"],
        **costliest_line_cpu(args.repeat),
    }
    ok = {True: "ok", False: "OVER TARGET"}
    lines = [
        f"metric bench: {args.n} predictions, anls mode, {args.resamples} bootstrap resamples, "
        f"median of {args.repeat}",
        f"  score (parse + match + ANLS*/F1 + report incl. bootstrap)  {score_s:.3f} s  "
        f"(target < {TARGET_SCORE_S} s: {ok[result['score_ok']]})",
        f"  Kuiper bootstrap CI                                        {boot_s:.3f} s  "
        f"(target < {TARGET_BOOTSTRAP_S} s: {ok[result['bootstrap_ok']]})",
        f"  ANLS* CPU of the costliest legal line (24-char gold): "
        f"{schema.MAX_ANSWER_LINE_CHARS // schema.MAX_ANSWER_STRING_CHARS} strings at the caps "
        f"{result['line_at_caps_long_strings_cpu_s'] * 1e3:.0f} ms, {schema.MAX_ANSWER_ITEMS} strings "
        f"{result['line_at_caps_many_strings_cpu_s'] * 1e3:.0f} ms; a one-word answer "
        f"{result['one_word_cpu_s'] * 1e3:.2f} ms (ratio "
        f"{result['line_at_caps_long_strings_cpu_s'] / max(result['one_word_cpu_s'], 1e-9):.0f}x)",
    ]
    return emit(result, lines, args.json, indent=None)

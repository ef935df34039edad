"""``madqa bench provider``: the runner's own cost per question against a real model server, beside the model's time.

The server is llama-cpp-python's OpenAI-compatible one with the bundled GGUF (:mod:`.llama_server`, started here)
or any server given with ``--api-base``. The search agent answers ``--questions`` dev questions through the
``openai:`` route, exactly as ``madqa run`` does (one model per slot, the page index, the results line). Per
question it measures the wall time of the whole question and the wall time spent inside the HTTP calls of the model
client (retries included); the difference is what MADQA adds: prompt building, search, page texts, parsing, the
record. Figures are medians over the questions, printed side by side with their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .measure import emit

#: Command lines that ``madqa bench provider --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench provider --questions 2 --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the provider benchmark's arguments."""
    parser.add_argument("--questions", type=int, default=5, help="dev questions answered")
    parser.add_argument("--max-steps", type=int, default=3, help="model calls per question")
    parser.add_argument("--api-base", help="an OpenAI-compatible server to use (default: start the bundled one)")
    parser.add_argument("--model", default="smollm2", help="model id on that server")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of the started server")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _answer_all(api_base: str, model_id: str, questions: int, max_steps: int) -> list[tuple[float, float, int]]:
    """``(question wall s, model-call wall s, calls)`` per question."""
    from madqa.agents.harness.config import RunConfig
    from madqa.agents.harness.registry import get_agent
    from madqa.loading_script.load import load_questions

    config = RunConfig(
        model=f"openai:{model_id}", split="dev", max_steps=max_steps, options={"top_k": 2, "page_chars": 300}
    )
    # tool_choice "none" (tools in the prompt only): llama-cpp-python's "auto" replies ignore max_tokens and can run
    # to the end of the context, which would time the server's runaway generation, not the runner.
    options = {"api_base": api_base, "api_key": "x", "tool_choice": "none", "temperature": 0.0, "max_tokens": 256}
    prepared = get_agent("bm25").prepare(config, slots=1, model_options=options)
    try:
        model: Any = prepared._slots.queue[0]  # the one slot's model: its client times each HTTP call
        out = []
        for item in load_questions("dev", None)[:questions]:
            before = len(model.client.call_seconds)
            start = time.perf_counter()
            prepared.answer(item)
            total = time.perf_counter() - start
            calls = model.client.call_seconds[before:]
            out.append((total, sum(calls), len(calls)))
        return out
    finally:
        prepared.close()


def run(args: argparse.Namespace) -> int:
    """Answer the questions and print the figures."""
    with ExitStack() as stack:
        api_base = args.api_base
        if api_base is None:
            from .llama_server import ALIAS, llama_server

            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="madqa-bench-")))
            api_base = stack.enter_context(llama_server(log_dir, threads=args.threads)).base_url
            args.model = ALIAS
        rows = _answer_all(api_base, args.model, args.questions, args.max_steps)
    overhead = [total - model for total, model, _ in rows]
    figures = {
        "questions": len(rows),
        "model_calls": sum(n for _, _, n in rows),
        "question_s_median": round(statistics.median(t for t, _, _ in rows), 3),
        "model_s_median": round(statistics.median(m for _, m, _ in rows), 3),
        "runner_overhead_s_median": round(statistics.median(overhead), 4),
        "runner_overhead_s_max": round(max(overhead), 4),
        "overhead_share": round(sum(overhead) / max(1e-9, sum(t for t, _, _ in rows)), 4),
    }
    lines = [
        f"{figures['questions']} questions, {figures['model_calls']} model calls to {api_base}",
        f"per question (median): whole question {figures['question_s_median']:.2f} s, inside model calls "
        f"{figures['model_s_median']:.2f} s, runner overhead {figures['runner_overhead_s_median'] * 1000:.0f} ms "
        f"(max {figures['runner_overhead_s_max'] * 1000:.0f} ms)",
        f"runner overhead share of all question time: {figures['overhead_share']:.1%}",
    ]
    return emit(figures, lines, args.json)

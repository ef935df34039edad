"""``madqa figures``: the paper's Table 3 and figures for a set of runs, as files, ``figures.json`` and one HTML page.

``madqa figures a.jsonl b.jsonl human.jsonl --split dev --output-dir figs [--names A B H] [--prices FILE] [--embedder
SPEC] [--kuiper-order block|file]`` scores every run as ``madqa compare`` does (the same function, so the same numbers;
without ``--dataset``/``--split`` against the gold the runs' lines record), then writes under ``--output-dir``:
``<figure>.png`` (300 dpi), ``.pdf`` and ``.svg`` for every figure that can be drawn, in one style (one colour per
run in every figure; titles and figure numbers on the page only), ``figures.json`` (every number behind every
figure, and for a skipped one the reason) and ``index.html`` (self-contained: figures as ``data:`` URIs, no
network). A run that misses questions is warned about (log and page). The figures, in the
paper's order: Table 3, accuracy vs inference cost (Fig. 7), failure classes per system (Figs. 8, 17) and per domain
(Fig. 19), the failure cascade (Fig. 20), budget curves (Fig. 9), the κ matrix (Fig. 21), the item difficulty spectrum
(Fig. 22), retrieval by search iteration and recovery (Figs. 23, 24), single- vs multi-query accuracy (H.6), drift
(Figs. 25, 26), response time vs accuracy (§5.2) and semantic vs physical evidence distance (H.1). Human runs
(``system_type: "human"``) are marked in every figure.

Table 3's Kuiper column follows ``--kuiper-order`` (as ``madqa evaluate``): ``block`` (default) reads ``D`` only
where the effort changes, so tied efforts count as one block and the line order cannot matter; ``file`` reads ``D``
at every k as the paper's F.3 does (ties in file order), which gives a K at least as large. The order used is
written in ``figures.json`` (``kuiper_order``, top level and in Table 3's data) and on the page.

When one of the runs is an ``--oracle`` run, ``figures.json`` also holds ``oracle_gaps``: the paper's Oracle Gap
(oracle accuracy minus each other run's, with its paired CI), as ``madqa compare`` computes it
(:mod:`madqa.cli.compare_oracle`); it is not drawn.

The drift and distance figures embed texts with ``--embedder`` (default ``wordllama``, offline; ``st:MODEL``; a
``py:MODULE:NAME`` object with ``embed(texts)``; ``none`` skips them); the distance figure reads page texts from
the split's dataset (its ``pages`` config; not with ``--gold``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from madqa.cli import conventions
from madqa.cli.errors import UserError

HELP = "the paper's Table 3 and figures for several runs: PNG, PDF and SVG, figures.json and one self-contained page"
EXAMPLES = (
    "madqa figures run.jsonl repl.jsonl me.jsonl --split dev --output-dir figs --names bm25 repl me",
    "madqa figures a.jsonl b.jsonl --gold gold.jsonl --output-dir figs --embedder none --json",
)

logger = logging.getLogger(__name__)

#: The offline default embedder (its weights ship in its wheel).
DEFAULT_EMBEDDER = "wordllama"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``figures`` arguments."""
    from madqa.cli.compare_cmd import add_prices_argument

    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN.jsonl", help="one or more results files")
    conventions.add_output_dir(parser, "folder to write the figures to", required=True, old=("--out",))
    conventions.add_gold_arguments(parser, recorded_default=True)
    parser.add_argument("--names", nargs="+", metavar="NAME", help="display names, one per run (default: file stems)")
    add_prices_argument(parser)
    parser.add_argument(
        "--embedder",
        default=DEFAULT_EMBEDDER,
        metavar="SPEC",
        help="query/page embedder for drift and evidence distance (none: skip those figures)",
    )
    parser.add_argument("--max-budget", type=int, help="largest step budget of the curves (default: the largest seen)")
    conventions.add_kuiper_arguments(parser)
    conventions.add_json_flag(parser, "what was written (figures drawn, figures skipped and why)")


def embedder(spec: str) -> tuple[Any, str | None]:
    """``(embedder, None)``, or ``(None, why not)``: figures that need it are skipped, not failed.

    ``spec`` is an :mod:`madqa.agents.corpus.embeddings` spec (``wordllama``, ``st:MODEL``), ``none``, or
    ``py:MODULE:NAME``: an object with ``embed(texts)``, or a callable that returns one.
    """
    if spec.lower() == "none":
        return None, "--embedder none"
    try:
        if spec.startswith("py:"):
            from madqa.agents.harness.resolve import load_object

            found = load_object(spec)
            model = found() if isinstance(found, type) or not hasattr(found, "embed") else found
        else:
            from madqa.agents.corpus.embeddings import make_embedder

            model = make_embedder(spec)
    except Exception as exc:  # an unknown spec, a missing extra or model: the figures say why
        return None, f"embedder {spec!r} unavailable: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    return model, None


def page_texts(choice: Any) -> tuple[dict[tuple[str, int], str] | None, str | None]:
    """The page texts of the dataset scored against (a :class:`~madqa.cli.recorded_gold.GoldChoice`) by
    ``(doc_key(document), page)``, or ``(None, why not)``."""
    if choice.gold is not None:
        return None, "--gold gives no dataset to read page texts from (use --split with --dataset)"
    from madqa.metric.scoring import doc_key

    try:
        from madqa.loading_script.load import load_pages

        rows = load_pages(choice.dataset)
    except Exception as exc:  # no pages config, an unreadable dataset: the distance figure says why
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    return {(doc_key(str(r["document"])), int(r["page"])): str(r.get("text") or "") for r in rows}, None


def run(args: argparse.Namespace) -> int:
    """Score the runs, compute and draw every figure, write them under ``--output-dir``."""
    from madqa.agents.harness.deps import require_extra
    from madqa.cli.compare_cmd import price_table, run_names, score_files
    from madqa.cli.evaluate_cmd import scoring_options

    require_extra("space", "madqa figures")  # before the runs are scored
    names = run_names(args)
    prices = price_table(args.prices)
    scored = score_files(args.runs, names, prices, **scoring_options(args))
    from madqa.space.explore.paper_data import PaperRuns, build_static, gold_records
    from madqa.space.explore.paper_dynamics import FiguresError, build_dynamics
    from madqa.space.explore.paper_notes import coverage, warnings
    from madqa.space.explore.paper_page import write_figures

    systems = scored.result["systems"]
    runs = PaperRuns(
        references=scored.references,
        names=names,
        human={s["name"]: s["human"] for s in systems},
        items={n: r.items for n, r in scored.runs.items()},
        records={n: gold_records(scored.lines[n], scored.references) for n in names},
        reports=scored.reports,
        comparison=scored.result,
    )
    model, embed_reason = embedder(args.embedder)
    if model is None and args.embedder.lower() != "none":
        logger.warning("the drift and evidence-distance figures are skipped: %s", embed_reason)
    texts, pages_reason = page_texts(scored.choice)
    embed = None if model is None else model.embed
    try:
        figures = build_static(runs, prices) + build_dynamics(
            runs, embed, texts, embed_reason=embed_reason, pages_reason=pages_reason
        )
    except FiguresError as exc:
        raise UserError(str(exc)) from None
    meta = {
        "split": scored.result["split"],
        "n_gold": scored.result["n_gold"],
        "runs": [{"name": s["name"], "path": s["path"], "human": s["human"]} for s in systems],
        "prices": prices.source,
        "prices_as_of": prices.as_of,
        "kuiper_order": args.kuiper_order,
        "embedder": getattr(model, "name", args.embedder) if model else f"none ({embed_reason})",
        "pages": "the dataset's pages config" if texts is not None else f"none ({pages_reason})",
        "oracle_gaps": scored.result["oracle_gaps"],  # madqa compare's, when a run is an --oracle run
    }
    try:
        write_figures(args.output_dir, figures, runs, meta)
    except OSError as exc:
        raise UserError(f"{args.output_dir}: cannot write the figures ({exc.strerror or exc})") from None
    for warning in warnings(coverage(runs)):
        logger.warning("%s", warning)
    drawn = [f.id for f in figures if f.status == "ok"]
    logger.info("wrote %d figure(s) to %s: %s", len(drawn), args.output_dir, ", ".join(drawn))
    for f in figures:
        if f.status != "ok":
            logger.info("skipped %s: %s", f.id, f.reason)
    if args.json:
        skipped = [{"figure": f.id, "reason": f.reason} for f in figures if f.status != "ok"]
        summary = {"output_dir": str(args.output_dir), "drawn": drawn, "skipped": skipped}
        sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
    return 0

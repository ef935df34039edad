"""``madqa compare``: humans and agents side by side on one labelled split (paper §5.2, H.4, Figure 9).

``madqa compare RUN1.jsonl RUN2.jsonl … --split dev [--names A B …] [-o curves.png] [--json]`` scores every run
against the same gold (as ``madqa evaluate`` does, ANLS* mode; without ``--dataset``/``--split`` the one the runs'
lines record, :mod:`madqa.cli.recorded_gold`) and prints, per run, accuracy with its 95% CI,
Kuiper (in the ``--kuiper-order`` it names: ``block`` by default, ``file`` for the paper's every-k reading) and
Page F1; then the pairwise Cohen's κ matrix on per-item correctness, the "solved only by A / only by B"
counts of every pair, the paired difference of every pair with its CI and p-value and the rank intervals
(:mod:`madqa.cli.compare_paired`), the accuracy-vs-step-budget curve of each run as a table (``-o FILE.png``:
a plot), its accuracy at fixed budgets (``--budgets``, default 1, 3, 10 steps) and, when a run is an ``--oracle`` run,
the Oracle Gap with its paired CI (:mod:`madqa.cli.compare_oracle`).
Each run's inference cost (:mod:`madqa.metric.cost`: USD per question and per run) is shown when the price table
(shipped ``agents/harness/prices.yaml``, or ``--prices FILE``) prices every line's model; otherwise why not. Below
it, per ledger role (agent, sub-model, embedder, judge), the calls, tokens and USD (:mod:`madqa.cli.compare_costs`).

A run whose lines carry ``system_type: "human"`` (written by ``madqa human``) is labelled ``(human)`` everywhere.
The pure parts (:func:`pair_counts`, :func:`budget_table`, :func:`is_human`) take plain data and are tested with
hand-computed values. :func:`compare` is the same comparison from Python (plain arguments, no command line).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from madqa.cli import conventions
from madqa.cli.compare_oracle import budget_rows, gap_rows, oracle_gaps
from madqa.cli.compare_paired import ALPHA_TEXT, format_paired, format_pareto, paired_results, pareto_fronts
from madqa.cli.errors import UserError
from madqa.cli.evaluate_repeats import refuse_repeats

HELP = "compare runs (humans and agents): accuracy, Kuiper, Page F1, Cohen's kappa, only-A/only-B, budget curves"
EXAMPLES = (
    "madqa compare me.jsonl run.jsonl --split dev --names me bm25 -o curves.png",
    "madqa compare a.jsonl b.jsonl --gold gold.jsonl --json",
)

logger = logging.getLogger(__name__)

#: Budgets listed in the curve table when a run took more than :data:`DENSE_ROWS` steps (plus the largest one).
SPARSE_BUDGETS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000)
DENSE_ROWS = 20


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``compare`` arguments."""
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN.jsonl", help="two or more results files")
    conventions.add_gold_arguments(parser, recorded_default=True)
    parser.add_argument("--names", nargs="+", metavar="NAME", help="display names, one per run (default: file stems)")
    parser.add_argument("--max-budget", type=int, help="largest step budget of the curves (default: the largest seen)")
    parser.add_argument(
        "--budgets",
        nargs="+",
        type=int,
        default=[1, 3, 10],
        metavar="N",
        help="fixed step budgets to report accuracy at",
    )
    conventions.add_output_file(parser, "also draw the budget curves to this PNG", metavar="FILE.png", old=("--plot",))
    conventions.add_kuiper_arguments(parser)
    conventions.add_json_flag(parser, "the comparison")
    add_prices_argument(parser)


def add_prices_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--prices FILE`` (``compare`` and ``figures``)."""
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE.yaml",
        help="USD per million input/output tokens per model id (default: the shipped table)",
    )


def price_table(path: Path | None) -> Any:
    """The price table of ``--prices`` (or the shipped one); a bad file is a one-line error naming it."""
    from madqa.agents.harness.prices import load_prices
    from madqa.metric.cost import PriceError

    try:
        return load_prices(path)
    except PriceError as exc:
        raise UserError(str(exc)) from None


def is_human(lines: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a run is a human one: any of its lines says ``system_type: "human"``.

    >>> is_human([{"id": "a", "system_type": "human"}]), is_human([{"id": "a"}])
    (True, False)
    """
    return any(isinstance(line, Mapping) and line.get("system_type") == "human" for line in lines)


def pair_counts(a: Sequence[bool | None], b: Sequence[bool | None]) -> dict[str, int]:
    """Per-item outcomes of two systems on the same gold list: solved by both, only A, only B, neither.

    Items unscored in either system (``None``) are left out and counted as ``skipped``.

    >>> pair_counts([True, True, False, None], [True, False, True, True])
    {'both': 1, 'only_a': 1, 'only_b': 1, 'neither': 0, 'skipped': 1}
    """
    if len(a) != len(b):
        raise ValueError("the two outcome lists differ in length")
    out = {"both": 0, "only_a": 0, "only_b": 0, "neither": 0, "skipped": 0}
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            out["skipped"] += 1
        else:
            out["both" if x and y else "only_a" if x else "only_b" if y else "neither"] += 1
    return out


def table_budgets(top: int) -> list[int]:
    """Budgets shown in the table: every one up to :data:`DENSE_ROWS`, else :data:`SPARSE_BUDGETS` below ``top``
    and ``top`` itself.

    >>> table_budgets(3), table_budgets(45)
    ([1, 2, 3], [1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 45])
    """
    if top <= DENSE_ROWS:
        return list(range(1, top + 1))
    return [b for b in SPARSE_BUDGETS if b < top] + [top]


def budget_table(curves: Mapping[str, Sequence[Mapping[str, float]]], budgets: Sequence[int]) -> list[dict[str, Any]]:
    """Accuracy of each run at each budget, read off its step curve (a budget between listed points takes the
    value of the listed budget before it; before the first point, 0).

    >>> budget_table({"h": [{"budget": 1, "accuracy": 0.5}, {"budget": 3, "accuracy": 1.0}]}, [1, 2, 3])
    [{'budget': 1, 'h': 0.5}, {'budget': 2, 'h': 0.5}, {'budget': 3, 'h': 1.0}]
    """
    rows = []
    for budget in budgets:
        row: dict[str, Any] = {"budget": budget}
        for name, curve in curves.items():
            value = 0.0 if curve else None
            for point in curve:
                if point["budget"] <= budget:
                    value = float(point["accuracy"])
            row[name] = value
        rows.append(row)
    return rows


def _read_lines(path: Path) -> tuple[str, list[dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    lines = []
    for raw in text.splitlines():
        try:
            value = json.loads(raw) if raw.strip() else None
        except ValueError:
            continue  # the parser below names the broken line
        if isinstance(value, dict):
            lines.append(value)
    return text, lines


@dataclass
class Scored:
    """What :func:`score_files` read and scored: the gold, and per run its lines, per-item scores and report.

    Attributes:
        references: the gold items, in order.
        runs: name → the metric's :class:`~madqa.metric.report.ScoredRun` (items in gold order).
        lines: name → the file's raw line objects.
        reports: name → :func:`~madqa.metric.report.build_report`'s report.
        result: the comparison as one JSON-ready dict (what ``--json`` prints).
        choice: the gold scored against (:class:`~madqa.cli.recorded_gold.GoldChoice`).
    """

    references: list[Any]
    runs: dict[str, Any]
    lines: dict[str, list[dict[str, Any]]]
    reports: dict[str, dict[str, Any]]
    result: dict[str, Any]
    choice: Any = None


def score_files(
    runs: Sequence[Path],
    names: Sequence[str],
    prices: Any = None,
    *,
    split: str | None = None,
    dataset: str | None = None,
    gold: Path | None = None,
    max_budget: int | None = None,
    resamples: int = 1000,
    seed: int = 0,
    kuiper_order: str = "block",
    budgets: Sequence[int] = (1, 3, 10),
) -> Scored:
    """Score every run against the gold (``prices``: a :class:`~madqa.metric.cost.PriceTable`, or no cost).

    The gold is ``gold`` (a labelled questions JSONL) or the ``split`` of ``dataset``; ``None`` for either: what the
    runs' lines record (:func:`~madqa.cli.recorded_gold.choose_gold`, as ``madqa evaluate``); ``max_budget`` (default:
    the largest step count seen) ends the budget curves.
    """
    from madqa.cli.evaluate_cmd import check_provenance, gold_dataset, load_references
    from madqa.cli.recorded_gold import choose_gold
    from madqa.metric.aggregate import accuracy_at_budgets, budget_curve, cohen_kappa
    from madqa.metric.cost import run_cost, unpriced_reason
    from madqa.metric.inputs import InputError, parse_results_text
    from madqa.metric.report import ReportOptions, build_report, score_predictions

    choice = choose_gold(runs, split, dataset, gold)
    try:
        references = load_references(choice.split, choice.dataset, choice.gold)
    except UserError as exc:
        raise choice.load_failed(exc) from None
    gold_ref = gold_dataset(choice.dataset, choice.gold)
    gold_ids = {r.id for r in references}
    scored, systems, raw = {}, [], {}
    for name, path in zip(names, runs, strict=True):
        text, lines = _read_lines(path)
        refuse_repeats(path, text, "compare takes ordinary runs (madqa evaluate reports a file of repeats)")
        try:
            predictions = parse_results_text(text, str(path))
            run = score_predictions(predictions, references)
        except InputError as exc:
            raise UserError(exc.problems[0] if exc.problems else str(exc)) from None
        choice.refuse_unmatched(path, len(predictions), len(run.matching.missing_ids), len(references))
        check_provenance(path, predictions, gold_ref)
        scored[name], raw[name] = run, lines
        systems.append({"name": name, "path": str(path), "human": is_human(lines)})
    top = max_budget or max([it.steps or 0 for run in scored.values() for it in run.items] + [1])
    out_systems, reports = [], {}
    order = kuiper_order
    for system in systems:
        run = scored[system["name"]]
        options = ReportOptions(n_resamples=resamples, seed=seed, max_budget=top, kuiper_order=order)
        report = build_report(run, references, options)
        reports[system["name"]] = report
        keys = (
            "n",
            "n_predicted",
            "accuracy",
            "accuracy_ci",
            "accuracy_se",
            "kuiper",
            "kuiper_ci",
            "kuiper_applicable",
            "kuiper_n",
            "page_f1",
            "doc_f1",
            "mean_steps",
        )
        cost: dict[str, Any] | None = None
        if prices is not None:  # the lines of gold items only, as accuracy counts them
            priced = run_cost([ln for ln in raw[system["name"]] if str(ln.get("id")) in gold_ids], prices)
            cost = {**priced.summary(), "reason": unpriced_reason(priced)}
        n_items = int(report["n"] or 0)
        coverage = int(report["n_predicted"] or 0) / n_items if n_items else None
        out_systems.append(
            {
                **system,
                **{k: report[k] for k in keys},
                "coverage": coverage,
                "cost": cost,
                "budget_curve": budget_curve(run.items, top),
                "accuracy_at_budgets": [
                    {"budget": b, "accuracy": v} for b, v in accuracy_at_budgets(run.items, budgets).items()
                ],
            }
        )
    outcomes = {name: [it.correct for it in run.items] for name, run in scored.items()}
    pairs, kappa = [], {}
    for i, a in enumerate(names):
        kappa[a] = {}
        for j, b in enumerate(names):
            both = [(x, y) for x, y in zip(outcomes[a], outcomes[b], strict=True) if x is not None and y is not None]
            kappa[a][b] = cohen_kappa([bool(x) for x, _ in both], [bool(y) for _, y in both])
            if i < j:
                pairs.append({"a": a, "b": b, "kappa": kappa[a][b], **pair_counts(outcomes[a], outcomes[b])})
    accuracy = {s["name"]: s["accuracy"] for s in out_systems}
    paired, ranks = paired_results(scored, accuracy, resamples=resamples, seed=seed)
    for pair in pairs:
        pair.update(paired[(pair["a"], pair["b"])])
    curves = {s["name"]: s["budget_curve"] for s in out_systems}
    result = {
        "split": None if gold else choice.split,
        "n_gold": len(references),
        "systems": out_systems,
        "kappa": kappa,
        "pairs": pairs,
        "ranks": ranks,
        "paired_alpha": ALPHA_TEXT,
        "max_budget": top,
        "kuiper_order": order,
        "prices": None if prices is None else prices.source,
        "prices_as_of": None if prices is None else prices.as_of,
        "budget_table": budget_table(curves, table_budgets(top)),
        "fixed_budgets": list(budgets),
        "oracle_gaps": oracle_gaps(scored, raw, resamples=resamples, seed=seed),
        "pareto": pareto_fronts(out_systems),
    }
    return Scored(list(references), scored, raw, reports, result, choice)


def compare(
    runs: Sequence[str | Path],
    names: Sequence[str] | None = None,
    *,
    split: str | None = None,
    dataset: str | None = None,
    gold: str | Path | None = None,
    prices: str | Path | None = None,
    max_budget: int | None = None,
    resamples: int = 1000,
    seed: int = 0,
    kuiper_order: str = "block",
    budgets: Sequence[int] = (1, 3, 10),
) -> dict[str, Any]:
    """Compare results files on one gold: what ``madqa compare --json`` prints, as a dict.

    ``names`` default to the file stems; ``prices`` is a price table file (``None``: the shipped table, and each
    run's cost where it prices every line); ``budgets``: the fixed step budgets of ``accuracy_at_budgets``. Raises
    :class:`~madqa.cli.errors.UserError` for a mistake in the input (a missing file, a bad line, too few runs), with
    the one-line message the command prints.
    """
    paths = [Path(p) for p in runs]
    if len(paths) < 2:
        raise UserError("compare needs at least two results files")
    checked = run_names(
        argparse.Namespace(runs=paths, names=names, resamples=resamples, max_budget=max_budget)
    )  # one home for the checks the command makes
    if not budgets or any(b < 1 for b in budgets):
        raise UserError("--budgets must be one or more positive step counts")
    options = {"split": split, "dataset": dataset, "gold": None if gold is None else Path(gold)}
    table = price_table(None if prices is None else Path(prices))
    return score_files(
        paths,
        checked,
        table,
        **options,
        max_budget=max_budget,
        resamples=resamples,
        seed=seed,
        kuiper_order=kuiper_order,
        budgets=sorted(set(budgets)),
    ).result


def label(system: Mapping[str, Any]) -> str:
    """A system's display name, with ``(human)`` for human runs."""
    return f"{system['name']} (human)" if system.get("human") else str(system["name"])


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def coverage_text(system: Mapping[str, Any]) -> str:
    """How many gold items a run answered: ``answered/n (percent)``; unanswered items are scored incorrect.

    >>> coverage_text({"n": 8, "n_predicted": 6})
    '6/8 (75%)'
    """
    n, answered = int(system.get("n") or 0), int(system.get("n_predicted") or 0)
    return f"{answered}/{n} ({100 * answered / n:.0f}%)" if n else "—"


def format_comparison(result: Mapping[str, Any]) -> str:
    """The comparison as plain-text tables."""
    from madqa.cli.compare_costs import cost_lines
    from madqa.metric.kuiper import NOT_APPLICABLE, not_applicable

    systems = result["systems"]
    width = max(len(label(s)) for s in systems)
    order = f" · Kuiper in {result['kuiper_order']} order" if result.get("kuiper_order") else ""
    lines = [
        f"{result['n_gold']} gold items" + (f" (split {result['split']})" if result["split"] else "") + order,
        "",
        f"{'system':<{width}}  accuracy  95% CI          Kuiper  Page F1  mean steps  coverage",
    ]
    for s in systems:
        ci = s["accuracy_ci"]
        ci_text = "" if not ci or ci[0] is None else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
        kuiper = "n/a" if not_applicable(s) else "—" if s["kuiper"] is None else f"{s['kuiper']:.2f}"
        steps = "—" if s["mean_steps"] is None else f"{s['mean_steps']:.2f}"
        lines.append(
            f"{label(s):<{width}}  {_pct(s['accuracy']):>8}  {ci_text:<14}  {kuiper:>6}  "
            f"{_pct(s['page_f1']):>7}  {steps:>10}  {coverage_text(s)}"
        )
    if any(not_applicable(s) for s in systems):
        lines.append(
            f"Kuiper n/a: {NOT_APPLICABLE[5:-1]}, the run's steps do not vary (madqa.metric.kuiper.effort_varies)"
        )
    if any(s.get("cost") is not None for s in systems):
        lines += cost_lines(systems, result.get("prices"), width, as_of=result.get("prices_as_of"))
    names = [s["name"] for s in systems]
    lines += ["", "Cohen's kappa (per-item correctness)", " " * (width + 2) + "".join(f"{n[:10]:>11}" for n in names)]
    for s in systems:
        row = "".join(f"{'—' if v is None else f'{v:.2f}':>11}" for v in result["kappa"][s["name"]].values())
        lines.append(f"{label(s):<{width}}  {row}")
    lines += ["", "solved by: both / only A / only B / neither"]
    for p in result["pairs"]:
        lines.append(
            f"  A={p['a']}  B={p['b']}: {p['both']} / {p['only_a']} / {p['only_b']} / {p['neither']}"
            + (f" ({p['skipped']} unscored)" if p["skipped"] else "")
        )
    lines += format_paired(result, names, width) + ["", *format_pareto(result["pareto"])]
    lines += ["", "accuracy (%) within a step budget", "budget" + "".join(f"{n[:10]:>11}" for n in names)]
    for row in result["budget_table"]:
        lines.append(f"{row['budget']:>6}" + "".join(f"{_pct(row[n]):>11}" for n in names))
    lines += budget_rows(systems, result["fixed_budgets"]) + gap_rows(result["oracle_gaps"])
    return "\n".join(lines)


def plot_curves(result: Mapping[str, Any], path: Path) -> None:
    """Draw every run's budget curve (humans dashed) into a PNG."""
    from madqa.agents.harness.deps import require_extra

    require_extra("space", "-o FILE.png (the plot)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from madqa.space.plots import mpl_text

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in result["systems"]:
        curve = s["budget_curve"]
        ax.step(
            [p["budget"] for p in curve],
            [100 * p["accuracy"] for p in curve],
            where="post",
            label=mpl_text(label(s)),
            linestyle="--" if s["human"] else "-",
        )
    ax.set_xlabel("step budget N (searches)")
    ax.set_ylabel("accuracy within budget (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_names(args: argparse.Namespace) -> list[str]:
    """The runs' display names (``--names``, else the file stems, else the paths); checks the shared arguments."""
    if len({str(p.resolve()) for p in args.runs}) != len(args.runs):
        raise UserError("the same results file is given twice")
    names = list(args.names) if args.names else [p.stem for p in args.runs]
    if len(names) != len(args.runs):
        raise UserError(f"--names gives {len(names)} name(s) for {len(args.runs)} run(s)")
    if len(set(names)) != len(names):
        names = [str(p) for p in args.runs] if not args.names else names
        if len(set(names)) != len(names):
            raise UserError("--names must be different from each other")
    if args.resamples < 1:
        raise UserError("--resamples must be positive")
    if args.max_budget is not None and args.max_budget < 1:
        raise UserError("--max-budget must be positive")
    return names


def run(args: argparse.Namespace) -> int:
    """Score the runs and print the comparison."""
    from madqa.agents.harness.deps import require_extra
    from madqa.cli.evaluate_cmd import scoring_options

    if args.output is not None:
        require_extra("space", "-o FILE.png (the plot)")  # before the runs are scored
    result = compare(args.runs, args.names, prices=args.prices, budgets=args.budgets, **scoring_options(args))
    if args.output is not None:
        plot_curves(result, args.output)
        logger.info("wrote the budget curves to %s", args.output)
    if args.json:
        sys.stdout.write(json.dumps(result, allow_nan=False, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(format_comparison(result) + "\n")
    return 0

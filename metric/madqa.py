"""MADQA metric for 🤗 evaluate: accuracy (ANLS* or LLM judge with bias correction), Page/Doc F1 and Kuiper.

``evaluate.load`` copies only the relative modules this script imports directly (``from .name import …`` at the
start of a line, with no trailing comment), so every helper module the metric needs is imported here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets

from .accuracy import summarize_accuracy
from .aggregate import cohen_kappa
from .calibration_inputs import parse_calibration
from .inputs import parse_predictions, parse_reference
from .jsonl import InputError, load_json_line, split_lines
from .judge import Judge
from .kuiper import kuiper_statistic
from .ledger import Tally
from .light_import import import_evaluate
from .matching import match_predictions
from .notes import InputNotes
from .report import ReportOptions, evaluate_predictions
from .schema import PAPER_JUDGE
from .scoring import anls_star

#: Helpers imported only so that evaluate copies their modules (no comments on relative-import lines: evaluate
#: would read them as download URLs).
_COPIED_HELPERS = (
    summarize_accuracy,
    cohen_kappa,
    kuiper_statistic,
    match_predictions,
    anls_star,
    split_lines,
    InputNotes,
    PAPER_JUDGE,
    Tally,
)

if TYPE_CHECKING:
    import evaluate
else:  # not `import evaluate`: that imports transformers (and torch) where installed, for nothing (light_import)
    evaluate = import_evaluate()

logger = logging.getLogger(__name__)

_CITATION = """\
@misc{madqa2026,
  title  = {Strategic Navigation or Stochastic Search? How Agents and Humans Reason Over Document Collections},
  note   = {arXiv:2603.12180},
  year   = {2026}
}
"""

_DESCRIPTION = """\
MADQA scores agentic question answering over PDF collections. Accuracy is ANLS*-thresholded (offline, default) or
graded by an LLM judge whose raw accuracy is bias-corrected (Rogan-Gladen) with Lee et al.'s confidence interval.
Page F1 and Doc F1 measure the cited evidence; the Kuiper statistic measures whether effort (search steps) is
spent where it pays off. Predictions are matched to references by id; every reference counts. See README.md.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: results lines as dicts (the public harness format): `id`, `answer` (list of strings or a
        string), `citations` (list of {document or file, page}), `search_history` (list) or `steps`/`iterations`
        (int); `question` is used to match a line that has no `id`. `None` entries are placeholders for absent
        predictions (evaluate needs as many predictions as references).
    references: labelled gold questions: `id`, `question`, `answer_variants` (list of lists of strings),
        `evidence` (list of {document, page}), optional `hop_type`, `domain`, `document_category`.
    mode: "anls" (default, offline) or "judge".
    judge: for judge mode, a `complete(prompt) -> str` callable or an object with `generate(messages)`.
    judge_name: name of the judge model for the verdict cache (default: derived from `judge`).
    judge_cache: path of a JSONL verdict cache (default: in memory).
    calibration: dict with q0, q1, m0, m1 of the judge (default: the paper's 1.000, 0.980, 48, 152 for the paper's
        judge, gemini-2.5-flash, named by `judge_name` or the judge's `model_id`; no correction for another judge).
    kuiper_order: "block" (default, independent of line order) or "file" (the public harness's tie order; its
        value only where the harness sees the same items and efforts, see README.md).
    n_resamples: bootstrap resamples for the Kuiper CI (default 1000). seed: bootstrap seed (default 0).
    max_budget: largest step budget of the budget curve (default: largest observed effort).
    include_items: add per-item scores under "items".
Returns:
    A dict with accuracy, accuracy_raw, accuracy_ci, accuracy_se, anls, page_f1, doc_f1, kuiper,
    kuiper_normalized, kuiper_ci (None where effort does not vary: kuiper_applicable), wasted_effort_ratio, n,
    n_predicted, missing, unscored, by_hop, by_domain, by_category, errors, budget_curve, mode and more (see
    README.md). Fractions are in [0, 1]. `warnings` lists what was scored leniently (no `answer` key, pages above
    100,000, a misspelt field such as `citatons`), once per kind; each is also logged as a warning.
Examples:
    >>> import evaluate
    >>> madqa = evaluate.load("madqa")  # doctest: +SKIP
    >>> refs = [{"id": "q1", "question": "Total?", "answer_variants": [["$1.2M"]],
    ...          "evidence": [{"document": "report.pdf", "page": 5}]}]
    >>> preds = [{"id": "q1", "answer": ["$1.2M"], "citations": [{"document": "report.pdf", "page": 5}],
    ...           "search_history": ["total revenue"]}]
    >>> out = madqa.compute(predictions=preds, references=refs)
    >>> out["accuracy"], out["page_f1"], out["kuiper"], out["missing"]  # one item: effort cannot vary, no Kuiper
    (1.0, 1.0, None, 0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Madqa(evaluate.Metric):
    """The MADQA metric (thin glue over the pure functions of this folder)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Json(), "references": datasets.Json()}),
            reference_urls=["https://arxiv.org/abs/2603.12180"],
        )

    def _compute(
        self,
        predictions: list[Any],
        references: list[Any],
        mode: str = "anls",
        judge: Any = None,
        judge_name: str | None = None,
        judge_cache: str | None = None,
        calibration: dict[str, Any] | None = None,
        kuiper_order: str = "block",
        n_resamples: int = 1000,
        seed: int = 0,
        max_budget: int | None = None,
        include_items: bool = False,
    ) -> dict[str, Any]:
        # datasets' Json feature hands back the JSON text of a line that ujson cannot decode (an integer over 64
        # bits, such as a page 10**25 a model cited): read it with json, as `madqa evaluate` reads the file.
        preds, notes = parse_predictions(
            [load_json_line(p, f"predictions[{i}]") if isinstance(p, str) else p for i, p in enumerate(predictions)]
        )
        refs = [parse_reference(r, f"references[{i}]") for i, r in enumerate(references)]
        if mode == "judge" and judge is None:
            raise InputError("mode='judge' needs judge=<callable complete(prompt) -> str>")
        cache = None if judge_cache is None else Path(judge_cache)
        batch = None if judge is None else Judge(judge, judge_name, cache)
        cal = None if calibration is None else parse_calibration(calibration, "calibration")
        options = ReportOptions(
            mode=mode,  # type: ignore[arg-type]
            calibration=cal,
            kuiper_order=kuiper_order,  # type: ignore[arg-type]
            n_resamples=n_resamples,
            seed=seed,
            max_budget=max_budget,
            include_items=include_items,
        )
        report = evaluate_predictions(preds, refs, options, judge=batch, notes=notes)
        for warning in report["warnings"]:  # the same messages as `madqa evaluate` and the Space show
            logger.warning("%s", warning)
        return report

"""Accuracy aggregation: Rogan–Gladen bias correction and the confidence intervals of Lee et al. (paper F.1).

Notation: ``p`` is the raw judged accuracy on ``n`` scored items; the judge's specificity ``q0`` and
sensitivity ``q1`` were measured on ``m0`` human-incorrect and ``m1`` human-correct calibration items.

* Corrected accuracy (Rogan–Gladen): ``theta = (p + q0 - 1) / (q0 + q1 - 1)``, clipped to [0, 1].
* Simplified CI: ``q0``/``q1`` treated as exact, only the test sample varies:
  ``theta ± z * sqrt(p (1 - p) / n) / (q0 + q1 - 1)``.
* Full CI (Lee et al.), which adds the calibration uncertainty: add-``z²/2`` / add-one smoothing of ``p``, ``q0``,
  ``q1`` (``n + z²``, ``m0 + 2``, ``m1 + 2``), a centre shift
  ``2 z² (theta q1 (1 - q1) / m1 - (1 - theta) q0 (1 - q0) / m0)`` and the delta-method standard error
  ``sqrt(p (1 - p) / n + (1 - theta)² q0 (1 - q0) / m0 + theta² q1 (1 - q1) / m1) / (q0 + q1 - 1)``.

* Standard error (the paper's "±", one SE, reported as ``accuracy_se``): the delta-method SE above evaluated at
  the unsmoothed estimates, ``sqrt(p (1 - p) / n + (1 - theta)² q0 (1 - q0) / m0 + theta² q1 (1 - q1) / m1) /
  (q0 + q1 - 1)`` with the unclipped ``theta``. It is the full CI's SE before smoothing; with ``q0 = q1 = 1`` it is
  ``sqrt(p (1 - p) / n)``, the SE used in ``anls`` mode.

Calibration belongs to a judge (:func:`calibration_for`): the paper's values are its judge's error rates, so they
correct only that judge (:data:`~.schema.PAPER_JUDGE`); another judge is reported raw unless a calibration of it is
given (``madqa calibrate``). A raw judge accuracy has ``anls`` mode's intervals.

In ``anls`` mode there is no judge: accuracy is not corrected, the main CI is Agresti–Coull (the full form's limit
for an exact, perfect judge) and the simplified CI is Wald. Intervals are clipped to [0, 1].

Judge scores may be 0.5 (partial); ``p`` is then the mean score, and calibration from labels uses the mean judge
score on each human class (``q1 = mean score | human correct``, ``q0 = 1 - mean score | human incorrect``), which
keeps ``E[p] = q1 theta + (1 - q0)(1 - theta)`` true for graded scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from .schema import DEFAULT_CALIBRATION, PAPER_JUDGE, Calibration, Mode


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def _z(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)  # the standard library's, not scipy's (0.8 s to import)


def _check_judge(q0: float, q1: float) -> None:
    if q0 + q1 <= 1.0:
        raise ValueError(f"q0 + q1 must exceed 1 for a bias correction (got q0={q0}, q1={q1})")


def rogan_gladen(p: float, q0: float, q1: float) -> float:
    """Bias-corrected accuracy ``(p + q0 - 1) / (q0 + q1 - 1)``, clipped to [0, 1].

    >>> round(rogan_gladen(0.49, 1.0, 0.98), 6)
    0.5
    """
    _check_judge(q0, q1)
    return _clip((p + q0 - 1.0) / (q0 + q1 - 1.0))


def lee_ci_simplified(p: float, n: int, q0: float, q1: float, alpha: float = 0.05) -> tuple[float, float]:
    """CI with exact ``q0``/``q1``: ``theta ± z sqrt(p(1-p)/n) / (q0 + q1 - 1)`` (unclipped centre)."""
    _check_judge(q0, q1)
    if n < 1:
        raise ValueError("n must be positive")
    z = _z(alpha)
    theta = (p + q0 - 1.0) / (q0 + q1 - 1.0)
    half = z * math.sqrt(p * (1.0 - p) / n) / (q0 + q1 - 1.0)
    return _clip(theta - half), _clip(theta + half)


def lee_ci_full(p: float, n: int, q0: float, q1: float, m0: int, m1: int, alpha: float = 0.05) -> tuple[float, float]:
    """Lee et al.'s CI with test and calibration uncertainty (see the module docstring for the formula)."""
    _check_judge(q0, q1)
    if n < 1 or m0 < 1 or m1 < 1:
        raise ValueError("n, m0 and m1 must be positive")
    z = _z(alpha)
    z2 = z * z
    p_adj = (n * p + z2 / 2.0) / (n + z2)
    q0_adj = (m0 * q0 + 1.0) / (m0 + 2.0)
    q1_adj = (m1 * q1 + 1.0) / (m1 + 2.0)
    n_adj, m0_adj, m1_adj = n + z2, m0 + 2.0, m1 + 2.0
    denom = q0_adj + q1_adj - 1.0
    theta = (p_adj + q0_adj - 1.0) / denom
    v0 = q0_adj * (1.0 - q0_adj) / m0_adj
    v1 = q1_adj * (1.0 - q1_adj) / m1_adj
    shift = 2.0 * z2 * (theta * v1 - (1.0 - theta) * v0)
    se = math.sqrt(p_adj * (1.0 - p_adj) / n_adj + (1.0 - theta) ** 2 * v0 + theta**2 * v1) / denom
    centre = theta + shift
    return _clip(centre - z * se), _clip(centre + z * se)


def rogan_gladen_se(p: float, n: int, q0: float, q1: float, m0: int, m1: int) -> float:
    """Delta-method SE of the Rogan–Gladen estimate, test and calibration sampling together (unsmoothed).

    ``theta = (p + q0 - 1) / J`` with ``J = q0 + q1 - 1`` has partial derivatives ``1/J`` (p), ``(1 - theta)/J``
    (q0) and ``-theta/J`` (q1); the three estimates come from independent samples of sizes ``n``, ``m0``, ``m1``.

    >>> round(rogan_gladen_se(0.5, 100, 1.0, 1.0, 10, 10), 6)  # exact judge: the binomial SE
    0.05
    """
    _check_judge(q0, q1)
    if n < 1 or m0 < 1 or m1 < 1:
        raise ValueError("n, m0 and m1 must be positive")
    denom = q0 + q1 - 1.0
    theta = (p + q0 - 1.0) / denom
    var = p * (1.0 - p) / n + (1.0 - theta) ** 2 * q0 * (1.0 - q0) / m0 + theta**2 * q1 * (1.0 - q1) / m1
    return math.sqrt(var) / denom


def binomial_se(p: float, n: int) -> float:
    """SE of a proportion, ``sqrt(p (1 - p) / n)`` (``anls`` mode).

    >>> binomial_se(0.5, 100)
    0.05
    """
    if n < 1:
        raise ValueError("n must be positive")
    return math.sqrt(p * (1.0 - p) / n)


def agresti_coull(p: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Agresti–Coull interval (add ``z²/2`` successes and failures)."""
    if n < 1:
        raise ValueError("n must be positive")
    z = _z(alpha)
    n_adj = n + z * z
    p_adj = (n * p + z * z / 2.0) / n_adj
    half = z * math.sqrt(p_adj * (1.0 - p_adj) / n_adj)
    return _clip(p_adj - half), _clip(p_adj + half)


def wald(p: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wald interval ``p ± z sqrt(p(1-p)/n)``."""
    if n < 1:
        raise ValueError("n must be positive")
    half = _z(alpha) * math.sqrt(p * (1.0 - p) / n)
    return _clip(p - half), _clip(p + half)


def calibration_from_labels(human_correct: Sequence[bool], judge_scores: Sequence[float], source: str) -> Calibration:
    """Estimate ``q0``, ``q1``, ``m0``, ``m1`` from paired human labels and judge scores.

    Args:
        human_correct: human verdict per item (binary).
        judge_scores: judge score per item (1, 0.5 or 0).
        source: recorded in the result.

    Raises:
        ValueError: when either human class is empty, or the judge is no better than chance.

    >>> c = calibration_from_labels([True, True, False, False], [1, 0.5, 0, 0], "x")
    >>> (c.q0, c.q1, c.m0, c.m1)
    (1.0, 0.75, 2, 2)
    """
    if len(human_correct) != len(judge_scores):
        raise ValueError("human and judge labels differ in length")
    pos = [s for h, s in zip(human_correct, judge_scores, strict=True) if h]
    neg = [s for h, s in zip(human_correct, judge_scores, strict=True) if not h]
    if not pos or not neg:
        raise ValueError("calibration needs items labelled correct and items labelled incorrect by humans")
    q1 = sum(pos) / len(pos)
    q0 = 1.0 - sum(neg) / len(neg)
    _check_judge(q0, q1)
    return Calibration(q0=q0, q1=q1, m0=len(neg), m1=len(pos), source=source)


@dataclass(frozen=True)
class AccuracySummary:
    """Accuracy of a set of scored items.

    Attributes:
        accuracy: corrected accuracy (judge mode) or raw accuracy (anls mode).
        raw: mean item score.
        ci: main CI (Lee full form, or Agresti–Coull in anls mode).
        ci_simplified: simplified CI (Lee simplified, or Wald in anls mode).
        n: scored items.
        se: one standard error of ``accuracy`` (:func:`rogan_gladen_se`, or :func:`binomial_se` in anls mode).
    """

    accuracy: float | None
    raw: float | None
    ci: tuple[float, float] | None
    ci_simplified: tuple[float, float] | None
    n: int
    se: float | None = None


def summarize_accuracy(
    scores: Sequence[float], mode: Mode, calibration: Calibration | None, alpha: float = 0.05
) -> AccuracySummary:
    """Accuracy, raw accuracy and both CIs for the given item scores (unscored items already removed).

    ``calibration`` ``None`` in judge mode: no calibration of the judge, the raw accuracy as in ``anls`` mode.
    """
    n = len(scores)
    if n == 0:
        return AccuracySummary(None, None, None, None, 0)
    p = sum(scores) / n
    if mode == "anls" or calibration is None:
        return AccuracySummary(p, p, agresti_coull(p, n, alpha), wald(p, n, alpha), n, binomial_se(p, n))
    c = calibration
    return AccuracySummary(
        rogan_gladen(p, c.q0, c.q1),
        p,
        lee_ci_full(p, n, c.q0, c.q1, c.m0, c.m1, alpha),
        lee_ci_simplified(p, n, c.q0, c.q1, alpha),
        n,
        rogan_gladen_se(p, n, c.q0, c.q1, c.m0, c.m1),
    )


def is_paper_judge(name: str | None) -> bool:
    """Whether a judge model name is the paper's judge (:data:`~.schema.PAPER_JUDGE`), whatever the route to it.

    The model id is read after a provider prefix or path (``litellm:gemini/gemini-2.5-flash``,
    ``models/gemini-2.5-flash``).

    >>> is_paper_judge("litellm:gemini/gemini-2.5-flash"), is_paper_judge("openai:smollm2")
    (True, False)
    >>> is_paper_judge("gemini-2.5-flash-lite"), is_paper_judge(None)
    (False, False)
    """
    if not name:
        return False
    model = name.strip().rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    return model.lower() == PAPER_JUDGE


def calibration_for(judge: str | None, given: Calibration | None = None) -> Calibration | None:
    """The calibration that corrects ``judge``'s accuracy (``None``: none, the accuracy is reported raw).

    ``given`` (a calibration file of the judge) wins; else the paper's for the paper's judge, else ``None``: another
    judge's error rates are not the paper's judge's.

    >>> calibration_for("gemini:gemini-2.5-flash").source, calibration_for("openai:smollm2")
    ('paper', None)
    """
    if given is not None:
        return given
    return DEFAULT_CALIBRATION if is_paper_judge(judge) else None


def calibration_summary(judge: str | None, calibration: Calibration | None) -> dict[str, object]:
    """The report's ``calibration`` in judge mode, stating where the correction comes from.

    It holds the values and their ``source``, the ``judge``, whether the accuracy is ``corrected``, and a ``note``
    saying so in words (what ``madqa evaluate`` prints next to the accuracy).

    >>> summary = calibration_summary("openai:smollm2", None)
    >>> summary["corrected"], summary["note"][:45]
    (False, 'raw: no calibration for judge openai:smollm2 ')
    """
    who = judge or "(unnamed)"
    if calibration is None:
        return {
            "q0": None,
            "q1": None,
            "m0": None,
            "m1": None,
            "source": None,
            "judge": judge,
            "corrected": False,
            "note": f"raw: no calibration for judge {who} (the paper's applies to {PAPER_JUDGE} only; pass one from "
            "`madqa calibrate` with --calibration)",
        }
    if calibration.source == DEFAULT_CALIBRATION.source:
        note = f"bias-corrected with the paper's calibration for {PAPER_JUDGE}"
    else:
        note = f"bias-corrected with the calibration {calibration.source} for judge {who}"
    return {**vars(calibration), "judge": judge, "corrected": True, "note": note}

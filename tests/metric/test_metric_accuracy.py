"""Accuracy aggregation (F.1): Rogan–Gladen, both Lee et al. CI forms, anls-mode intervals, calibration."""

from __future__ import annotations

import doctest

import pytest

from madqa.metric import accuracy
from madqa.metric.accuracy import (
    agresti_coull,
    calibration_from_labels,
    lee_ci_full,
    lee_ci_simplified,
    rogan_gladen,
    summarize_accuracy,
    wald,
)
from madqa.metric.schema import DEFAULT_CALIBRATION, Calibration

Z = 1.959963984540054  # z_{0.975}


def test_rogan_gladen_hand_values():
    assert rogan_gladen(0.49, 1.0, 0.98) == pytest.approx(0.5)  # 0.49 / 0.98
    assert rogan_gladen(0.8, 0.9, 0.85) == pytest.approx(0.7 / 0.75)
    assert rogan_gladen(0.05, 0.9, 0.85) == 0.0  # (0.05 - 0.1) / 0.75 < 0: clipped
    assert rogan_gladen(1.0, 0.9, 0.85) == 1.0  # 0.9 / 0.75 > 1: clipped
    assert rogan_gladen(0.3, 1.0, 1.0) == pytest.approx(0.3)  # a perfect judge changes nothing
    with pytest.raises(ValueError, match="q0 \\+ q1 must exceed 1"):
        rogan_gladen(0.5, 0.5, 0.5)


def test_lee_simplified_hand_values():
    # theta = 0.49 / 0.98 = 0.5; half width = z * sqrt(0.49 * 0.51 / 100) / 0.98 = 0.0999782
    lo, hi = lee_ci_simplified(0.49, 100, 1.0, 0.98)
    assert (lo, hi) == pytest.approx((0.4000218391563253, 0.5999781608436747))
    assert hi - lo == pytest.approx(2 * Z * (0.49 * 0.51 / 100) ** 0.5 / 0.98)


def test_lee_full_hand_values():
    # p = 0.4, n = 1000, q0 = 0.7, q1 = 0.9, m0 = m1 = 200
    # smoothed: p~ = (400 + z²/2) / (1000 + z²) = 0.4003827; q0~ = 141/202 = 0.6980198; q1~ = 181/202 = 0.8960396
    # theta~ = (p~ + q0~ - 1) / (q0~ + q1~ - 1) = 0.1656442
    # shift = 2 z² (theta~ q1~(1-q1~)/202 - (1-theta~) q0~(1-q0~)/202) = -0.0061023
    # se = sqrt(p~(1-p~)/(1000+z²) + (1-theta~)² q0~(1-q0~)/202 + theta~² q1~(1-q1~)/202) / 0.5940594 = 0.0526495
    lo, hi = lee_ci_full(0.4, 1000, 0.7, 0.9, 200, 200)
    assert lo == pytest.approx(0.1656442 - 0.0061023 - Z * 0.0526495, abs=1e-6)
    assert (lo, hi) == pytest.approx((0.05635072484160894, 0.2627330257859588))


def test_lee_full_with_paper_calibration_is_wider_than_simplified():
    p, n = 0.8, 500
    theta = rogan_gladen(p, 1.0, 0.98)
    assert theta == pytest.approx(0.8 / 0.98)
    full = lee_ci_full(p, n, 1.0, 0.98, 48, 152)
    simple = lee_ci_simplified(p, n, 1.0, 0.98)
    assert full == pytest.approx((0.7725983154480367, 0.8591927893966498))
    assert full[1] - full[0] > simple[1] - simple[0]
    assert full[0] < theta < full[1]


def test_full_form_approaches_simplified_with_huge_calibration():
    full = lee_ci_full(0.6, 400, 0.95, 0.9, 10**9, 10**9)
    simple = lee_ci_simplified(0.6, 400, 0.95, 0.9)
    assert full == pytest.approx(simple, abs=2e-3)  # differences: only the add-z²/2 smoothing of p remains


def test_anls_mode_intervals():
    # Agresti–Coull: p~ = (35 + z²/2) / (50 + z²); Wald: 0.7 ± z sqrt(0.21 / 50)
    assert agresti_coull(0.7, 50) == pytest.approx((0.5617316637701268, 0.8097292965765297))
    assert wald(0.7, 50) == pytest.approx((0.5729798163797764, 0.8270201836202236))
    assert wald(1.0, 10) == (1.0, 1.0)
    assert agresti_coull(1.0, 10)[1] == 1.0 and agresti_coull(1.0, 10)[0] < 1.0


def test_summaries_by_mode():
    anls = summarize_accuracy([1.0] * 35 + [0.0] * 15, "anls", DEFAULT_CALIBRATION)
    assert (anls.accuracy, anls.raw, anls.n) == (0.7, 0.7, 50)
    assert anls.ci == pytest.approx(agresti_coull(0.7, 50)) and anls.ci_simplified == pytest.approx(wald(0.7, 50))
    judged = summarize_accuracy([1.0] * 40 + [0.5] * 2 + [0.0] * 58, "judge", DEFAULT_CALIBRATION)
    assert judged.raw == pytest.approx(0.41)  # partial counts 0.5
    assert judged.accuracy == pytest.approx(0.41 / 0.98)
    assert judged.ci == pytest.approx(lee_ci_full(0.41, 100, 1.0, 0.98, 48, 152))
    assert summarize_accuracy([], "judge", DEFAULT_CALIBRATION).accuracy is None


def test_calibration_from_labels_hand_values():
    human = [True] * 8 + [False] * 4
    judge = [1, 1, 1, 1, 1, 1, 0.5, 0] + [0, 0, 0, 1]
    cal = calibration_from_labels(human, judge, "labels.jsonl")
    # q1 = mean judge score | human correct = 6.5 / 8; q0 = 1 - mean judge score | human incorrect = 1 - 1/4
    assert (cal.q1, cal.q0, cal.m1, cal.m0, cal.source) == (0.8125, 0.75, 8, 4, "labels.jsonl")
    with pytest.raises(ValueError, match="items labelled correct and items labelled incorrect"):
        calibration_from_labels([True, True], [1, 1], "x")
    with pytest.raises(ValueError, match="no better than chance|must exceed 1"):
        calibration_from_labels([True, False], [0, 1], "x")


def test_default_calibration_is_the_papers():
    assert DEFAULT_CALIBRATION == Calibration(1.0, 0.98, 48, 152, "paper")


def test_doctests():
    assert doctest.testmod(accuracy).failed == 0

"""The normal quantile of the accuracy intervals comes from the standard library (``statistics.NormalDist``), not
scipy (0.8 s to import for one ``norm.ppf``, issue 47): the same values, to 1e-12."""

from __future__ import annotations

import pytest

from madqa.metric.accuracy import _z, lee_ci_full, lee_ci_simplified

ALPHAS = [1e-9, 1e-6, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.3173, 0.5, 0.9, 0.999]


@pytest.mark.parametrize("alpha", ALPHAS)
def test_the_quantile_is_scipy_s(alpha: float) -> None:
    from scipy.stats import norm  # only here: the metric itself never imports scipy

    assert _z(alpha) == pytest.approx(float(norm.ppf(1.0 - alpha / 2.0)), rel=0, abs=1e-12)


def test_the_intervals_are_the_ones_scipy_gives() -> None:
    from scipy.stats import norm

    z = float(norm.ppf(0.975))
    theta, half = (0.49 + 0.95 - 1.0) / (0.95 + 0.98 - 1.0), z * (0.49 * 0.51 / 400) ** 0.5 / (0.95 + 0.98 - 1.0)
    low, high = lee_ci_simplified(0.49, 400, 0.95, 0.98)
    assert (low, high) == pytest.approx((theta - half, theta + half), rel=0, abs=1e-12)
    assert lee_ci_full(0.49, 400, 0.95, 0.98, 100, 100)[0] < low  # calibration uncertainty widens it


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_alpha_outside_zero_one_is_refused(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha must be in"):
        _z(alpha)

"""Kuiper (F.3): hand-computed ties in block vs file order, order invariance, seeded bootstrap, curve."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest

from madqa.metric import kuiper as kuiper_module
from madqa.metric.inputs import parse_references, parse_results_text
from madqa.metric.kuiper import (
    _range_scaled,
    _sort_rows,
    cumulative_curve,
    effort_varies,
    kuiper,
    kuiper_bootstrap,
    kuiper_statistic,
)
from madqa.metric.report import ReportOptions, evaluate_predictions


def reference_k(effort, y, order):
    """Loop implementation straight from the definition, for cross-checking."""
    items = sorted(zip(effort, y, strict=True), key=lambda t: t[0])  # stable: file order within ties
    n = len(items)
    ybar = sum(y) / n
    d, points = 0.0, [0.0]
    for k, (s, yk) in enumerate(items, start=1):
        d += yk - ybar
        if order == "file" or k == n or items[k][0] != s:
            points.append(d)
    return max(points) - min(points)


def reference_q(effort, y, order, *, n_resamples, seed, alpha=0.05):
    """The CI's half-width by loops: for each resample (the same seeded draws), the range over the curve's points
    of ``D*(t) - D(t)`` with ``D(t) = sum_{items <= t} (y - ybar)`` (``D*`` with resample weights and mean)."""
    effort, y = np.asarray(effort), np.asarray(y)
    n = len(y)
    rank = np.argsort(effort, kind="stable")
    if order == "block":  # points: the distinct efforts
        points = [[i for i in range(n) if effort[i] == v] for v in sorted(set(effort.tolist()))]
    else:  # points: the items in stable effort order
        points = [[int(i)] for i in rank]
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    ranges = []
    for row in idx:
        w = np.bincount(row, minlength=n)
        ybar_star, ybar = (w * y).sum() / n, y.mean()
        d_star = d = 0.0
        diffs = [0.0]
        for block in points:
            d_star += sum(w[i] * (y[i] - ybar_star) for i in block)
            d += sum(y[i] - ybar for i in block)
            diffs.append(d_star - d)
        ranges.append(max(diffs) - min(diffs))
    return float(np.quantile(ranges, 1 - alpha))


def old_percentile_ci(effort, y, order="block", *, n_resamples=1000, seed=0):
    """The interval this module used before: percentiles of the resampled ``K`` (kept to show its failure)."""
    effort, y = np.asarray(effort), np.asarray(y)
    idx = np.random.default_rng(seed).integers(0, len(y), size=(n_resamples, len(y)))
    if order == "file":
        idx.sort(axis=1)
    stats = _range_scaled(*_sort_rows(effort[idx], y[idx]), order) / len(y)
    return tuple(np.quantile(stats, [0.025, 0.975]))


def blocks(sizes, corrects):
    """Efforts 0, 1, ... with ``sizes[j]`` items of effort ``j``, the first ``corrects[j]`` of them correct."""
    effort = np.repeat(np.arange(len(sizes)), sizes)
    y = np.concatenate([[1] * c + [0] * (m - c) for m, c in zip(sizes, corrects, strict=True)])
    return effort, y


def test_hand_computed_ties():
    # efforts [1, 1, 2], outcomes [1, 0, 1], ybar = 2/3
    # block: D at k=2 (end of the effort-1 block) = 1/3 - 2/3 = -1/3, D_3 = 0 -> K = 1/3
    # file: D_1 = 1/3, D_2 = -1/3, D_3 = 0 -> K = 2/3; with the tie swapped, D_1 = -2/3 -> K = 2/3
    assert kuiper_statistic([1, 1, 2], [1, 0, 1]) == pytest.approx(1 / 3)
    assert kuiper_statistic([1, 1, 2], [1, 0, 1], "file") == pytest.approx(2 / 3)
    assert kuiper_statistic([1, 1, 2], [0, 1, 1], "file") == pytest.approx(2 / 3)
    assert kuiper_statistic([1, 1, 2], [0, 1, 1], "block") == pytest.approx(1 / 3)


def test_hand_computed_file_order_depends_on_ties():
    # efforts all equal: block K = 0 (one block); file K depends on the order of lines
    assert kuiper_statistic([3, 3, 3, 3], [1, 1, 0, 0]) == 0.0
    assert kuiper_statistic([3, 3, 3, 3], [1, 1, 0, 0], "file") == pytest.approx(1.0)  # D = .5, 1, .5, 0
    assert kuiper_statistic([3, 3, 3, 3], [1, 0, 1, 0], "file") == pytest.approx(0.5)


def test_well_and_badly_calibrated_shapes():
    # correct at low effort, wrong at high effort: D rises to N*ybar*(1-ybar) then falls back
    assert kuiper_statistic([1, 2, 3, 4], [1, 1, 0, 0]) == pytest.approx(1.0)
    assert kuiper_statistic([1, 2, 3, 4], [1, 1, 1, 1]) == 0.0
    assert kuiper_statistic([], []) == 0.0
    # 0-step items are ordinary items: they form the first block
    assert kuiper_statistic([0, 0, 5], [1, 1, 0]) == pytest.approx(2 / 3)


def test_position_argument_sets_file_order():
    effort, y = [1, 1, 2], [1, 0, 1]
    assert kuiper_statistic(effort, y, "file", position=[2, 1, 3]) == pytest.approx(2 / 3)
    curve = cumulative_curve(effort, y, "file", position=[2, 1, 3])
    assert curve["d"] == pytest.approx([0.0, -2 / 3, -1 / 3, 0.0])


def test_matches_loop_definition_on_random_data():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 40))
        effort = rng.integers(0, 6, size=n).tolist()
        y = rng.integers(0, 2, size=n).tolist()
        for order in ("block", "file"):
            assert kuiper_statistic(effort, y, order) == pytest.approx(reference_k(effort, y, order))


def test_block_order_is_invariant_under_permutations():
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(2, 60))
        effort = rng.integers(0, 5, size=n)
        y = rng.integers(0, 2, size=n)
        base = kuiper_statistic(effort, y)
        base_ci = kuiper_bootstrap(effort, y, n_resamples=200, seed=3)
        for _ in range(5):
            perm = rng.permutation(n)
            assert kuiper_statistic(effort[perm], y[perm]) == base
            assert kuiper_statistic(effort, y, position=perm) == base
    # file order is not invariant (shown on one case)
    assert kuiper_statistic([1, 1, 1, 1], [1, 1, 0, 0], "file") != kuiper_statistic([1, 1, 1, 1], [0, 1, 0, 1], "file")
    assert base_ci is not None


def test_report_is_invariant_to_line_order():
    rng = np.random.default_rng(0)
    gold = parse_references(
        [
            {
                "id": f"g{i}",
                "question": f"Q{i}",
                "answer_variants": [[f"a{i}"]],
                "evidence": [{"document": "d.pdf", "page": 1 + i % 3}],
            }
            for i in range(40)
        ],
        "gold",
    )
    lines = [
        json.dumps(
            {
                "id": f"g{i}",
                "answer": [f"a{i}" if rng.random() < 0.6 else "zzz"],
                "citations": [{"document": "d.pdf", "page": 1 + i % 2}],
                "steps": int(rng.integers(0, 4)),
            }
        )
        for i in range(40)
    ]
    block, file_order = ReportOptions(n_resamples=300), ReportOptions(kuiper_order="file")
    base = evaluate_predictions(parse_results_text("\n".join(lines), "r"), gold, block)
    base_file = evaluate_predictions(parse_results_text("\n".join(lines), "r"), gold, file_order)
    changed = False
    for _ in range(10):
        shuffled = [lines[i] for i in rng.permutation(len(lines))]
        again = evaluate_predictions(parse_results_text("\n".join(shuffled), "r"), gold, block)
        assert again == base
        other = evaluate_predictions(parse_results_text("\n".join(shuffled), "r"), gold, file_order)
        changed |= other["kuiper"] != base_file["kuiper"]
    assert changed  # the public harness's order does move with shuffling


def test_bootstrap_is_seeded_and_brackets_plausible_values():
    rng = np.random.default_rng(5)
    effort = rng.integers(0, 10, size=300)
    y = (rng.random(300) < np.where(effort < 5, 0.8, 0.3)).astype(int)
    a = kuiper_bootstrap(effort, y, n_resamples=1000, seed=11)
    b = kuiper_bootstrap(effort, y, n_resamples=1000, seed=11)
    c = kuiper_bootstrap(effort, y, n_resamples=1000, seed=12)
    assert a == b and a != c
    k = kuiper_statistic(effort, y)
    assert a[0] < k < a[1]
    assert kuiper_bootstrap([], []) is None
    with pytest.raises(ValueError):
        kuiper_bootstrap(effort, y, n_resamples=0)


def test_bootstrap_resample_statistics_match_the_scalar_function():
    rng = np.random.default_rng(2)
    effort = rng.integers(0, 4, size=30)
    y = rng.integers(0, 2, size=30)
    idx = rng.integers(0, 30, size=(20, 30))
    for order in ("block", "file"):
        sorted_idx = np.sort(idx, axis=1) if order == "file" else idx
        vec = _range_scaled(*_sort_rows(effort[sorted_idx], y[sorted_idx]), order) / 30
        loop = [kuiper_statistic(effort[row], y[row], order) for row in sorted_idx]
        assert vec == pytest.approx(loop)


def test_kuiper_result_normalisation_and_curve():
    res = kuiper([2, 1, 1], [1, 1, 0], n_resamples=100)
    assert res.statistic == pytest.approx(1 / 3)
    assert res.normalized == pytest.approx(1 / 9)
    assert res.ci_normalized == pytest.approx((res.ci[0] / 3, res.ci[1] / 3))
    assert res.curve == {"k": [0, 2, 3], "effort": [None, 1, 2], "d": pytest.approx([0.0, -1 / 3, 0.0])}
    empty = kuiper([], [])
    assert (empty.statistic, empty.normalized, empty.ci, empty.n) == (None, None, None, 0)


def test_report_excludes_items_without_effort():
    gold = parse_references(
        [
            {
                "id": f"g{i}",
                "question": f"Q{i}",
                "answer_variants": [["a"]],
                "evidence": [{"document": "d", "page": 1}],
            }
            for i in range(4)
        ],
        "gold",
    )
    preds = parse_results_text(
        "\n".join(
            [
                json.dumps({"id": "g0", "answer": ["a"], "steps": 0}),
                json.dumps({"id": "g1", "answer": ["b"], "steps": 4}),
                json.dumps({"id": "g2", "answer": ["a"]}),
            ]
        ),
        "r",
    )
    report = evaluate_predictions(preds, gold)
    assert (report["kuiper_n"], report["kuiper_excluded"]) == (2, 2)
    assert report["kuiper"] == pytest.approx(0.5)  # [0: 1], [4: 0], ybar 1/2: D = 0, .5, 0
    assert report["wasted_effort_ratio"] is None  # correct items took 0 steps on average


def test_doctests():
    assert doctest.testmod(kuiper_module).failed == 0


def file_order_case(n: int = 40):
    """``n`` items of equal effort; in the file all correct lines come first, in gold order they alternate."""
    gold = parse_references(
        [
            {
                "id": f"g{i}",
                "question": f"Q{i}",
                "answer_variants": [["a"]],
                "evidence": [{"document": "d", "page": 1}],
            }
            for i in range(n)
        ],
        "gold",
    )
    correct_first = [i for i in range(n) if i % 2 == 0] + [i for i in range(n) if i % 2 == 1]
    text = "\n".join(
        json.dumps({"id": f"g{i}", "answer": ["a" if i % 2 == 0 else "b"], "steps": 3}) for i in correct_first
    )
    return gold, parse_results_text(text, "r.jsonl")


def test_file_order_statistic_and_bootstrap_follow_the_file():
    # File order: 20 correct lines then 20 wrong, one effort value. D rises to 20 - 20 * 20/40 = 10 and falls
    # back, so K = 10 (K/N = 1/4). In gold order (alternating) K would be 0.5; block order gives 0.
    # One effort value is a fixed-effort run: the report gives no Kuiper value in either order (n/a), while the
    # statistic itself, read in file order from the file positions, is still the file's.
    gold, preds = file_order_case()
    report = evaluate_predictions(preds, gold, ReportOptions(kuiper_order="file", n_resamples=500, seed=1))
    assert report["kuiper"] is None and report["kuiper_ci"] is None and report["kuiper_applicable"] is False
    assert report["kuiper_n"] == 40 and max(report["kuiper_curve"]["d"]) == pytest.approx(10.0)
    assert evaluate_predictions(preds, gold, ReportOptions(n_resamples=10))["kuiper"] is None
    y_in_gold_order = np.array([1 - i % 2 for i in range(40)])
    file_position = np.array([i // 2 if i % 2 == 0 else 20 + i // 2 for i in range(40)])
    kz = kuiper(np.full(40, 3), y_in_gold_order, "file", file_position, n_resamples=500, seed=1)
    assert kz.statistic == pytest.approx(10.0) and kz.normalized == pytest.approx(0.25)
    assert kuiper(np.full(40, 3), y_in_gold_order, "block", n_resamples=10).statistic == 0.0
    # The CI is K +- q with q the 95% quantile of the range of (resampled curve - curve). In file order every line
    # is its own point (ties in file order); the same seeded draws, by the loop reference, give the same q.
    assert kz.ci is not None
    low, high = kz.ci
    y_file, effort_file = np.array([1] * 20 + [0] * 20), np.full(40, 3)
    q = reference_q(effort_file, y_file, "file", n_resamples=500, seed=1)
    assert [low, high] == pytest.approx([10.0 - q, 10.0 + q])
    assert 0.5 < low < 10.0 < high
    # in gold order (alternating lines) the curve and its resamples are another: a different interval
    gold_ci = kuiper_bootstrap(
        np.full(40, 3), np.array([1 - i % 2 for i in range(40)]), "file", n_resamples=500, seed=1
    )
    assert gold_ci != (low, high) and gold_ci[0] == 0.0
    # the same through the function, with arrays in gold order and the file positions given
    y_gold = np.array([1 - i % 2 for i in range(40)])
    position = np.array([i // 2 if i % 2 == 0 else 20 + i // 2 for i in range(40)])
    effort = np.full(40, 3)
    assert kuiper_statistic(effort, y_gold, "file", position) == pytest.approx(10.0)
    assert kuiper_statistic(effort, y_gold, "file") == pytest.approx(0.5)  # gold order: a different number
    assert kuiper_bootstrap(effort, y_gold, "file", position, n_resamples=500, seed=1) == (low, high)


def test_ci_half_width_matches_the_loop_reference():
    rng = np.random.default_rng(8)
    for order in ("block", "file"):
        for _ in range(4):
            n = int(rng.integers(3, 40))
            effort, y = rng.integers(0, 5, size=n), rng.integers(0, 2, size=n)
            k = kuiper_statistic(effort, y, order)
            q = reference_q(effort, y, order, n_resamples=60, seed=2)
            low, high = kuiper_bootstrap(effort, y, order, n_resamples=60, seed=2)
            assert (low, high) == pytest.approx((max(k - q, 0.0), k + q))


@pytest.mark.parametrize(
    ("effort_y", "k_expected", "old_expected"),
    [
        # block order near the floor, like the "0.59 with CI [0.71, 3.53]" seen: K = 26/44
        (blocks([9, 9, 7, 10, 9], [6, 6, 5, 6, 6]), 26 / 44, (0.795, 4.091)),
        # 2,100 items in 20 effort blocks of nearly equal accuracy, like "Kuiper 10.28 95% CI [11.89, 37.00]"
        (blocks([105] * 20, [73 + x for x in [5, 5, -5, -5] * 5]), 10.0, (16.19, 38.0)),
    ],
)
def test_ci_contains_the_estimate_where_the_percentile_ci_did_not(effort_y, k_expected, old_expected):
    effort, y = effort_y
    k = kuiper_statistic(effort, y)
    assert k == pytest.approx(k_expected)
    old_low, old_high = old_percentile_ci(effort, y)  # the report's defaults: 1,000 resamples, seed 0
    assert (old_low, old_high) == pytest.approx(old_expected, abs=0.01)
    assert old_low > k  # the old interval lay wholly above its own estimate
    low, high = kuiper_bootstrap(effort, y)
    assert low <= k <= high and low == max(0.0, 2 * k - high)
    assert low == 0.0  # an effort-invariant population (K = 0) is not excluded


def population_k(pi, p, n):
    """``N * kappa`` of efforts ``0..len(pi)-1`` with probabilities ``pi`` and accuracy ``p[s]`` at effort ``s``."""
    pi, p = np.asarray(pi), np.asarray(p)
    g = np.concatenate([[0.0], np.cumsum(pi * (p - (pi * p).sum()))])
    return n * (g.max() - g.min())


EFFORT_PI = [0.05, 0.15, 0.2, 0.2, 0.15, 0.1, 0.05, 0.05, 0.03, 0.02]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "accuracy", "n", "order", "lowest", "highest"),
    [
        # at the floor (P(correct) independent of effort, population K = 0) the interval is near-exact ...
        ("flat", [0.7] * 10, 100, "block", 0.92, 0.98),
        ("flat", [0.7] * 10, 400, "block", 0.92, 0.98),
        ("flat", [0.7] * 10, 400, "file", 0.92, 1.0),
        # ... and conservative away from it (population K of 3.7, 9.4 and 24.3 here)
        ("slight", np.linspace(0.75, 0.65, 10), 400, "block", 0.92, 1.0),
        ("mid", np.linspace(0.8, 0.55, 10), 400, "block", 0.92, 1.0),
        ("strong", np.linspace(0.95, 0.3, 10), 400, "block", 0.92, 1.0),
        ("strong", np.linspace(0.95, 0.3, 10), 400, "file", 0.92, 1.0),
    ],
)
def test_ci_coverage_of_the_population_value(name, accuracy, n, order, lowest, highest):
    # 400 synthetic runs from a known process, 300 resamples each (the report uses 1,000): coverage of the
    # population N * kappa, computed exactly from the process. Binomial SE of a 95% coverage over 400 runs: 1.1%.
    runs, target = 400, population_k(EFFORT_PI, accuracy, n)
    rng = np.random.default_rng([len(name), n, order == "file"])
    covered = old_covered = 0
    for r in range(runs):
        effort = rng.choice(len(EFFORT_PI), size=n, p=EFFORT_PI)
        y = (rng.random(n) < np.asarray(accuracy)[effort]).astype(np.int64)
        low, high = kuiper_bootstrap(effort, y, order, n_resamples=300, seed=r)
        covered += low <= target <= high
        if name == "flat" and r < 100:
            old_low, old_high = old_percentile_ci(effort, y, order, n_resamples=300, seed=r)
            old_covered += old_low <= target <= old_high
    assert lowest <= covered / runs <= highest, covered / runs
    if name == "flat":
        assert old_covered == 0  # the percentile interval never reached the population value at the floor


def test_kuiper_is_na_where_effort_does_not_vary():
    # The rule: at least 1 item in 20 (and at least one) off the most common effort. 40 items: 2 needed.
    assert not effort_varies([5] * 40) and not effort_varies([5] * 39 + [6]) and effort_varies([5] * 38 + [6, 7])
    assert effort_varies([1, 2]) and not effort_varies([])
    # In a report: a flat-steps run (every item 4 steps, half right) has no Kuiper value, not a "best" 0.0.
    gold, _ = file_order_case(20)
    flat = "\n".join(json.dumps({"id": f"g{i}", "answer": "a" if i % 2 else "b", "steps": 4}) for i in range(20))
    report = evaluate_predictions(parse_results_text(flat, "flat.jsonl"), gold, ReportOptions(n_resamples=10))
    assert report["kuiper_applicable"] is False and report["kuiper"] is None and report["kuiper_normalized"] is None
    assert report["kuiper_n"] == 20 and report["accuracy"] == pytest.approx(0.5)
    varied = flat.replace('"steps": 4}', '"steps": 9}', 1)  # one item in 20 off the mode: enough
    report = evaluate_predictions(parse_results_text(varied, "v.jsonl"), gold, ReportOptions(n_resamples=10))
    assert report["kuiper_applicable"] is True and report["kuiper"] is not None

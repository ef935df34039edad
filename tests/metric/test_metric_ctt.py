"""Classical Test Theory (§2.4): item statistics and the split builder on synthetic systems."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy.stats import pearsonr

from madqa.metric import ctt
from madqa.metric.ctt import build_splits, item_statistics, select_items, spearman

P = [0.0, 0.05, 0.1, 0.15, 0.18, 0.55, 0.58, 0.95, 0.3]
R = [math.nan, 0.2, 0.1, 0.5, 0.9, 0.4, 0.6, 0.1, 0.3]


def synthetic(systems=12, items=400, seed=0):
    """Systems of increasing ability answering items of varied difficulty (a logistic model)."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(-2, 2, systems)
    difficulty = rng.normal(0, 1.5, items)
    difficulty[:40] = 8.0  # unsolvable items
    prob = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :]) * 1.7))
    return (rng.random((systems, items)) < prob).astype(int)


def test_item_statistics_match_definitions():
    x = synthetic(items=50)
    p, r = item_statistics(x)
    assert p == pytest.approx(x.mean(axis=0))
    for j in range(40, 50):
        rest = x.sum(axis=1) - x[:, j]
        if x[:, j].std() > 0 and rest.std() > 0:
            assert r[j] == pytest.approx(pearsonr(x[:, j], rest).statistic)
        else:
            assert math.isnan(r[j])
    assert np.isnan(r[:40]).all()  # unsolved items: constant, undefined discrimination
    with pytest.raises(ValueError):
        item_statistics([[1, 0, 1]])


def test_select_items_hand_case():
    # sentinel quota round(5 * 0.2) = 1: the hardest item (p = 0). Then round-robin over difficulty bins from
    # the hardest: bin (0.1, 0.2] gives item 4 (r .9), (0.2, 0.3] item 8, (0.5, 0.6] item 6 (r .6), (0.9, 1] item 7
    sel = select_items(P, R, 5)
    assert sel.sentinel == (0,)
    assert sel.by_bin == (4, 8, 6, 7)
    assert sel.items == (0, 4, 8, 6, 7)
    # size 8: quota 2 (items 0, 1); second round adds item 3 then item 5
    assert select_items(P, R, 8).items == (0, 1, 4, 8, 6, 7, 3, 5)
    # size 9: the bins run out after 6 items, the remaining sentinel candidate (item 2) tops up
    assert sorted(select_items(P, R, 9).items) == list(range(9))
    # restricted pool
    assert select_items(P, R, 2, available=[5, 6, 7]).items == (6, 7)


def test_build_splits_on_synthetic_systems():
    x = synthetic()
    p, r = item_statistics(x)
    splits = build_splits(x, test_size=100, dev_size=40)
    test, dev, train = set(splits.test), set(splits.dev), set(splits.train)
    assert len(test) == 100 and len(dev) == 40 and len(train) == 400 - 140
    assert not test & dev and not test & train and not dev & train
    assert len(splits.test_sentinel) == 20 and all(p[j] <= 0.1 for j in splits.test_sentinel)
    non_sentinel = [j for j in splits.test if j not in splits.test_sentinel]
    assert all(p[j] > 0.1 for j in non_sentinel)
    # greedy by discrimination within bins: the chosen items discriminate better than the unchosen ones
    unchosen = [j for j in range(400) if j not in test and p[j] > 0.1]
    assert np.nanmean(r[non_sentinel]) > np.nanmean(r[unchosen])
    # every non-empty difficulty bin is represented
    bins = {min(8, int(np.ceil((p[j] - 0.1) / 0.1 - 1e-12)) - 1) for j in non_sentinel}
    occupied = {min(8, int(np.ceil((pj - 0.1) / 0.1 - 1e-12)) - 1) for pj in p if pj > 0.1}
    assert bins == occupied
    assert splits.spearman_test_vs_all is not None and splits.spearman_test_vs_all > 0.85


def test_spearman_edge_cases():
    assert spearman([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert spearman([1.0], [1.0]) is None
    assert spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None


def test_doctests():
    assert doctest.testmod(ctt).failed == 0

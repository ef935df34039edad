"""Item difficulty across systems: p-values, the paper's difficulty bands and anomalous items (paper H.4).

Input everywhere: the per-item binary correctness of several systems, as ``{system: {item id: correct}}`` where
``correct`` is ``True``/``False`` or ``None`` (unscored: a judge failure). A missing prediction is an incorrect
item (``False``), as in every other aggregate of the metric; an item absent from a system's mapping, or ``None``
there, is *not observed* for that system and is left out of that item's denominator (so runs over different item
sets can be combined). :func:`outcomes_from_items` builds the mapping from scored runs. Correctness is binary
(``schema.CORRECT_THRESHOLD``: a judge's partial counts as correct), as for κ and CTT. For the paper's spectrum
pass the model systems only ("% of models correct"); a human run is compared with them by
:func:`human_only_failures`.

Definitions:

* **p-value** of item ``j``: the share of the systems that observed ``j`` which answered it correctly,
  ``p_j = correct_j / observed_j`` (the CTT difficulty of ``ctt.py``, which needs a full matrix; here items may be
  unobserved by some systems). An item no system observed has no p-value: it is excluded and counted.
* **Bands** (H.4): *universally easy* ``p > 0.9``, *universally hard* ``p < 0.1`` (both strict, as in the paper's
  ">90 %" and "<10 %"), *discriminating* otherwise (``0.1 <= p <= 0.9``).
* **Anomalous** ("easy for weak models but hard for strong ones"): the paper does not state its rule. Ours: rank
  the systems by accuracy (share correct over their observed items, or the accuracies the caller passes), lowest
  first, ties by name; the *weak* group is the lower half and the *strong* group the upper half (``floor(n/2)``
  systems each; with an odd ``n`` the median system is in neither). An item is anomalous when **more than half of
  the weak systems that observed it are correct and fewer than half of the strong ones are**:
  ``p_weak > 0.5 > p_strong``. An item that no weak or no strong system observed cannot be judged: it is counted
  (``n_unjudged``), never called normal.
* **Human-only failures** (H.4's "items where humans fail [that] have model difficulty >= 70 %"): items a human
  run answered incorrectly whose model p-value is at least 0.7 ("questions that most models solve reliably";
  *difficulty* here is the CTT p-value, the share of models correct).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .schema import ItemScore

#: Outcomes of several systems: system -> item id -> correct (``None``: unscored).
Outcomes = Mapping[str, Mapping[str, bool | None]]

#: The paper's band limits (H.4): easy above, hard below (both strict).
EASY_ABOVE = 0.9
HARD_BELOW = 0.1
#: The anomaly rule's majority threshold: ``p_weak > ANOMALY_THRESHOLD > p_strong``.
ANOMALY_THRESHOLD = 0.5
#: Model p-value at or above which a human failure is "human-specific" (H.4).
HUMAN_ONLY_MIN_P = 0.7


@dataclass(frozen=True)
class ItemP:
    """The p-value of one item.

    Attributes:
        id: item id.
        n_systems: systems that observed the item (scored it ``True`` or ``False``).
        n_correct: those that answered it correctly.
        p: ``n_correct / n_systems``.
    """

    id: str
    n_systems: int
    n_correct: int
    p: float


@dataclass(frozen=True)
class PValues:
    """Per-item p-values, in first-seen item order (systems in mapping order, items in each system's order).

    Attributes:
        items: the items with a p-value.
        unobserved_ids: items that appear in some system's mapping but no system scored (all ``None``).
    """

    items: tuple[ItemP, ...]
    unobserved_ids: tuple[str, ...]

    def by_id(self) -> dict[str, ItemP]:
        """The items keyed by id."""
        return {it.id: it for it in self.items}


@dataclass(frozen=True)
class Spectrum:
    """Items in the paper's three difficulty bands.

    Attributes:
        n: items with a p-value (the denominator of the shares).
        easy: ids with ``p > easy_above``.
        hard: ids with ``p < hard_below``.
        discriminating: the other ids.
        easy_share: ``len(easy) / n`` (``None`` when ``n == 0``); likewise the other two shares.
        hard_share: see ``easy_share``.
        discriminating_share: see ``easy_share``.
        n_unobserved: items no system scored (not in ``n``).
    """

    n: int
    easy: tuple[str, ...]
    hard: tuple[str, ...]
    discriminating: tuple[str, ...]
    easy_share: float | None
    hard_share: float | None
    discriminating_share: float | None
    n_unobserved: int


@dataclass(frozen=True)
class AnomalousItem:
    """An item easy for the weak systems and hard for the strong ones.

    Attributes:
        id: item id.
        p_weak: share of the weak systems (that observed it) correct.
        p_strong: share of the strong systems (that observed it) correct.
    """

    id: str
    p_weak: float
    p_strong: float


@dataclass(frozen=True)
class Anomalies:
    """The anomalous items and the split of systems they were found with.

    Attributes:
        weak: the weak systems, lowest accuracy first.
        strong: the strong systems, lowest accuracy first.
        middle: the median system left out when the number of systems is odd (else ``None``).
        accuracy: each system's accuracy used for the ranking.
        items: the anomalous items, in first-seen item order.
        n_judged: items with at least one weak and one strong observation (the denominator of ``share``).
        n_unjudged: items lacking either.
        share: ``len(items) / n_judged`` (``None`` when ``n_judged == 0``).
    """

    weak: tuple[str, ...]
    strong: tuple[str, ...]
    middle: str | None
    accuracy: dict[str, float | None]
    items: tuple[AnomalousItem, ...]
    n_judged: int
    n_unjudged: int
    share: float | None


@dataclass(frozen=True)
class HumanOnlyFailures:
    """Items a human run failed that most models solve.

    Attributes:
        ids: items the human answered incorrectly with model p-value ``>= min_p``, in the human run's order.
        n_human_failures: items the human answered incorrectly that have a model p-value (the paper's "86").
        n_no_model_p: items the human failed that no model scored (left out of both counts).
        min_p: the threshold used.
    """

    ids: tuple[str, ...]
    n_human_failures: int
    n_no_model_p: int
    min_p: float


def outcomes_from_items(runs: Mapping[str, Sequence[ItemScore]]) -> dict[str, dict[str, bool | None]]:
    """The outcome mapping of scored runs: system -> item id -> ``ItemScore.correct``.

    Args:
        runs: each system's per-item scores (``ScoredRun.items`` of ``report.py``).

    Returns:
        ``{system: {id: correct}}``; missing predictions are ``False`` and judge failures ``None``, as scored.
    """
    return {name: {it.id: it.correct for it in items} for name, items in runs.items()}


def _item_order(outcomes: Outcomes) -> list[str]:
    seen: dict[str, None] = {}
    for row in outcomes.values():
        for item in row:
            seen.setdefault(item, None)
    return list(seen)


def _share(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def item_p_values(outcomes: Outcomes) -> PValues:
    """Each item's p-value: the share of the systems that scored it which answered it correctly.

    Args:
        outcomes: ``{system: {item id: correct or None}}``.

    Returns:
        The p-values; items that every system left unscored are listed in ``unobserved_ids``.

    >>> pv = item_p_values({"A": {"q1": True, "q2": False}, "B": {"q1": True, "q2": None, "q3": None}})
    >>> [(it.id, it.n_systems, it.p) for it in pv.items], pv.unobserved_ids
    ([('q1', 2, 1.0), ('q2', 1, 0.0)], ('q3',))
    """
    items: list[ItemP] = []
    unobserved: list[str] = []
    for item in _item_order(outcomes):
        seen = [v for row in outcomes.values() if (v := row.get(item)) is not None]
        if seen:
            items.append(ItemP(item, len(seen), sum(seen), sum(seen) / len(seen)))
        else:
            unobserved.append(item)
    return PValues(tuple(items), tuple(unobserved))


def difficulty_spectrum(
    p_values: PValues, *, easy_above: float = EASY_ABOVE, hard_below: float = HARD_BELOW
) -> Spectrum:
    """Split the items into universally easy, universally hard and discriminating (paper H.4).

    Args:
        p_values: from :func:`item_p_values`.
        easy_above: an item is easy when ``p > easy_above``.
        hard_below: an item is hard when ``p < hard_below``.

    Returns:
        The three bands (ids in item order) and their shares of the items with a p-value.

    >>> pv = item_p_values({"A": {"a": True, "b": False, "c": True}, "B": {"a": True, "b": False, "c": False}})
    >>> s = difficulty_spectrum(pv)
    >>> s.easy, s.hard, s.discriminating, s.easy_share
    (('a',), ('b',), ('c',), 0.3333333333333333)
    """
    if hard_below > easy_above:
        raise ValueError(f"hard_below ({hard_below}) must not exceed easy_above ({easy_above})")
    easy = tuple(it.id for it in p_values.items if it.p > easy_above)
    hard = tuple(it.id for it in p_values.items if it.p < hard_below)
    middle = tuple(it.id for it in p_values.items if hard_below <= it.p <= easy_above)
    n = len(p_values.items)

    def share(ids: tuple[str, ...]) -> float | None:
        return len(ids) / n if n else None

    return Spectrum(n, easy, hard, middle, share(easy), share(hard), share(middle), len(p_values.unobserved_ids))


def system_accuracy(outcomes: Outcomes) -> dict[str, float | None]:
    """Each system's share of its scored items answered correctly (``None``: it scored none).

    >>> system_accuracy({"A": {"a": True, "b": False}, "B": {"a": None}})
    {'A': 0.5, 'B': None}
    """
    return {name: _share([v for v in row.values() if v is not None]) for name, row in outcomes.items()}


def weak_strong_split(
    accuracy: Mapping[str, float | None],
) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """The weak (lower half) and strong (upper half) systems by accuracy, and the median one left out.

    Systems are sorted by accuracy, lowest first, ties by name; a system with no accuracy (``None``) takes part in
    neither group and is not counted in ``n``. Each group has ``floor(n / 2)`` systems.

    Args:
        accuracy: each system's accuracy.

    Returns:
        ``(weak, strong, middle)``; both groups are listed lowest accuracy first.

    >>> weak_strong_split({"c": 0.9, "a": 0.2, "b": 0.5, "d": None})
    (('a',), ('c',), 'b')
    """
    ranked = sorted((acc, name) for name, acc in accuracy.items() if acc is not None)
    names = [name for _, name in ranked]
    half = len(names) // 2
    middle = names[half] if len(names) % 2 else None
    return tuple(names[:half]), tuple(names[len(names) - half :]), middle


def anomalous_items(
    outcomes: Outcomes,
    *,
    accuracy: Mapping[str, float | None] | None = None,
    threshold: float = ANOMALY_THRESHOLD,
) -> Anomalies | None:
    """Items easy for the weak systems but hard for the strong ones: ``p_weak > threshold > p_strong``.

    See the module docstring for the rule (the paper gives none).

    Args:
        outcomes: ``{system: {item id: correct or None}}``.
        accuracy: the accuracy to rank systems by (e.g. the report's bias-corrected accuracy); by default each
            system's share correct over its scored items (:func:`system_accuracy`).
        threshold: the majority threshold (0.5: more than half of the weak and fewer than half of the strong).

    Returns:
        The anomalous items and the weak/strong split, or ``None`` when fewer than two systems have an accuracy
        (no weak and strong group can be formed).

    >>> out = {"w": {"a": True, "b": False, "c": False}, "s": {"a": False, "b": True, "c": True}}
    >>> res = anomalous_items(out)
    >>> res.weak, res.strong, [(i.id, i.p_weak, i.p_strong) for i in res.items]
    (('w',), ('s',), [('a', 1.0, 0.0)])
    """
    acc = dict(accuracy) if accuracy is not None else system_accuracy(outcomes)
    acc = {name: acc.get(name) for name in outcomes}
    weak, strong, middle = weak_strong_split(acc)
    if not weak:
        return None
    found: list[AnomalousItem] = []
    judged = unjudged = 0
    for item in _item_order(outcomes):
        p_weak = _share([v for s in weak if (v := outcomes[s].get(item)) is not None])
        p_strong = _share([v for s in strong if (v := outcomes[s].get(item)) is not None])
        if p_weak is None or p_strong is None:
            unjudged += 1
            continue
        judged += 1
        if p_weak > threshold > p_strong:
            found.append(AnomalousItem(item, p_weak, p_strong))
    share = len(found) / judged if judged else None
    return Anomalies(weak, strong, middle, acc, tuple(found), judged, unjudged, share)


def human_only_failures(
    model_p_values: PValues, human: Mapping[str, bool | None], *, min_p: float = HUMAN_ONLY_MIN_P
) -> HumanOnlyFailures:
    """Items a human run answered incorrectly although at least ``min_p`` of the models solve them (paper H.4).

    Args:
        model_p_values: p-values over the model systems only (the human run left out).
        human: the human run's outcomes, item id -> correct (``None``: unscored, not a failure).
        min_p: the model p-value from which a human failure is listed (H.4: 70 %).

    Returns:
        The listed ids and the counts they come from.

    >>> pv = item_p_values({"m1": {"a": True, "b": False}, "m2": {"a": True, "b": True}})
    >>> r = human_only_failures(pv, {"a": False, "b": False, "c": False})
    >>> r.ids, r.n_human_failures, r.n_no_model_p
    (('a',), 2, 1)
    """
    p = model_p_values.by_id()
    failed = [item for item, ok in human.items() if ok is False]
    with_p = [item for item in failed if item in p]
    ids = tuple(item for item in with_p if p[item].p >= min_p)
    return HumanOnlyFailures(ids, len(with_p), len(failed) - len(with_p), min_p)

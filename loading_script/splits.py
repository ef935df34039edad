"""Split assignment for the embedded sample.

The public release chose its test/dev items by Classical Test Theory from many systems' responses (paper §2.4;
the metric's CTT tools rebuild such splits from results files). The synthetic sample has no model responses when
it is generated, so it uses a seeded split stratified by hop type: every split gets single, cross-page and
cross-document items in the same proportions, and the assignment depends only on the ids and the seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from .features import hop_type

#: Target shares of the sample's splits (the release has ~69% train, 9% dev, 22% test).
SPLIT_FRACTIONS: Mapping[str, float] = {"test": 0.25, "dev": 0.20, "train": 0.55}


def _rank_key(seed: int, qid: str) -> str:
    return hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest()


def assign_splits(
    questions: Sequence[Mapping[str, Any]], seed: int = 0, fractions: Mapping[str, float] = SPLIT_FRACTIONS
) -> dict[str, str]:
    """Assign each question id to a split, stratified by hop type.

    Args:
        questions: labelled question records (``id`` and ``evidence`` are read).
        seed: the assignment's seed; the same ids and seed always give the same splits.
        fractions: share of each split; must sum to 1.

    Returns:
        ``id → split name``.

    Raises:
        ValueError: on duplicate ids or fractions that do not sum to 1.

    >>> qs = [{"id": f"q{i}", "evidence": [{"document": "a.pdf", "page": 1}]} for i in range(20)]
    >>> sorted(__import__("collections").Counter(assign_splits(qs).values()).items())
    [('dev', 4), ('test', 5), ('train', 11)]
    """
    if abs(sum(fractions.values()) - 1.0) > 1e-9:
        raise ValueError(f"split fractions must sum to 1, got {dict(fractions)}")
    ids = [str(q["id"]) for q in questions]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"duplicate question ids: {', '.join(dupes)}")
    strata: dict[str, list[str]] = {}
    for q in questions:
        strata.setdefault(hop_type(q["evidence"]) or "none", []).append(str(q["id"]))
    assignment: dict[str, str] = {}
    names = list(fractions)
    for stratum in sorted(strata):
        members = sorted(strata[stratum], key=lambda qid: _rank_key(seed, qid))
        n = len(members)
        # Largest-remainder rounding keeps each stratum's counts as close to the fractions as possible.
        raw = {name: fractions[name] * n for name in names}
        counts = {name: int(raw[name]) for name in names}
        for name in sorted(names, key=lambda k: raw[k] - counts[k], reverse=True)[: n - sum(counts.values())]:
            counts[name] += 1
        start = 0
        for name in names:
            for qid in members[start : start + counts[name]]:
                assignment[qid] = name
            start += counts[name]
    return assignment

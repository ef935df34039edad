"""The two parts of the hidden test labels: a *public* part that every shown number is computed from, and a
*private* part whose scores only the official (Ladder) ranking publishes.

Why two parts: a participant who chooses which items to answer and their ``steps`` can decode the correctness of
the chosen items from the board's numbers (issue 23 measured ~10–19 bits per submission). Whatever the board shows
live is therefore computed from the public part alone, and the ranking that counts is computed from the private
part, released only through the bounded mechanism of :mod:`madqa.space.ladder` (Kaggle's public/private split,
with Blum & Hardt's Ladder on top).

The assignment is stratified by (``hop_type``, ``domain``) so that both parts keep the split's mix, and seeded.
A labels row may carry its part explicitly (``"part": "public"`` or ``"private"``: that wins, and is what
``madqa publish labels`` uploads, so the partition never moves when a label is corrected); rows without one get
the derived part. The derived seed is a hash of the labels' ids and answers: deterministic across restarts, and as
secret as the labels themselves. Which items are public is *not* a secret the design relies on (a submission's
coverage count reveals it); only the private items' correctness is.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Literal

Part = Literal["public", "private"]
PARTS: tuple[Part, ...] = ("public", "private")
#: Share of the test items in the private part (Kaggle's competitions use 50–80 %; half keeps both usable).
DEFAULT_PRIVATE_SHARE = 0.5


class PartsError(ValueError):
    """A labels row names an unknown part; the message names the row."""


def partition_seed(rows: Sequence[Mapping[str, Any]]) -> int:
    """A seed derived from the labels' ids and answers (order-independent; as secret as the labels)."""
    digest = hashlib.sha256()
    for key in sorted(json.dumps([r.get("id"), r.get("answer_variants")], sort_keys=True) for r in rows):
        digest.update(key.encode("utf-8", "surrogatepass") + b"\n")
    return int.from_bytes(digest.digest()[:8], "big")


def assign_parts(
    rows: Sequence[Mapping[str, Any]], *, seed: int | None = None, private_share: float = DEFAULT_PRIVATE_SHARE
) -> dict[str, Part]:
    """Each row's part: explicit ``part`` fields kept, the others drawn per (hop type, domain) stratum.

    Within each stratum the rows are shuffled with the seed; the private counts are apportioned by largest
    remainder over the strata, so the private part has ``round(private_share * n)`` rows in all (explicit parts
    included) and every stratum gets its share to within one row.

    >>> rows = [{"id": f"q{i}", "hop_type": "single" if i % 2 else "cross_doc", "domain": "d"} for i in range(10)]
    >>> parts = assign_parts(rows, seed=1)
    >>> sorted(parts.values()).count("private"), sorted(p for i, p in parts.items() if int(i[1:]) % 2).count("public")
    (5, 3)

    Raises:
        PartsError: a row's ``part`` is neither ``public`` nor ``private``; or the share is outside [0, 1].
    """
    if not 0.0 <= private_share <= 1.0:
        raise PartsError(f"the private share must be between 0 and 1, got {private_share}")
    seed = partition_seed(rows) if seed is None else seed
    out: dict[str, Part] = {}
    strata: dict[tuple[str, str], list[str]] = defaultdict(list)
    for number, row in enumerate(rows, start=1):
        rid, part = str(row.get("id")), row.get("part")
        if part is None:
            strata[(str(row.get("hop_type") or ""), str(row.get("domain") or ""))].append(rid)
        elif part in PARTS:
            out[rid] = part
        else:
            raise PartsError(
                f"test labels row {number} ({rid}): field 'part' must be 'public' or 'private', got {str(part)[:40]!r}"
            )
    want_private = round(private_share * len(rows)) - sum(1 for p in out.values() if p == "private")
    free = sum(len(ids) for ids in strata.values())
    want_private = min(max(want_private, 0), free)
    keys = sorted(strata)
    quotas = {k: want_private * len(strata[k]) / free if free else 0.0 for k in keys}
    counts = {k: int(quotas[k]) for k in keys}
    left = want_private - sum(counts.values())
    for k in sorted(keys, key=lambda k: (-(quotas[k] - counts[k]), k))[:left]:
        counts[k] += 1
    for k in keys:
        ids = sorted(strata[k])
        random.Random(f"{seed}:{k[0]}:{k[1]}").shuffle(ids)
        for i, rid in enumerate(ids):
            out[rid] = "private" if i < counts[k] else "public"
    return out


def private_ids(
    rows: Sequence[Mapping[str, Any]], *, seed: int | None = None, private_share: float = DEFAULT_PRIVATE_SHARE
) -> frozenset[str]:
    """The ids of the private part (see :func:`assign_parts`)."""
    parts = assign_parts(rows, seed=seed, private_share=private_share)
    return frozenset(rid for rid, part in parts.items() if part == "private")


def with_parts(rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    """The rows with an explicit ``part`` each (what ``madqa publish labels`` uploads)."""
    parts = assign_parts(rows, **kwargs)
    return [{**row, "part": parts[str(row.get("id"))]} for row in rows]

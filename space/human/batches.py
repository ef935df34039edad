"""A split cut into seeded batches of 25 questions with stable constellation code names (paper Appendix C.2).

The paper divided its 500 test questions into 20 batches of 25, each named after a constellation for anonymised
tracking. Here the split's ids are shuffled with a seed (default :data:`DEFAULT_SEED`) and cut in order; batch ``i``
is named :data:`CODE_NAMES` ``[i]`` (``Name-2``, ``Name-3`` … once the names run out), so the same split and seed
always give the same batches, whoever starts the study and wherever.

>>> [b.name for b in make_batches([f"q{i}" for i in range(60)])]
['Andromeda', 'Aquarius', 'Aries']
>>> len(make_batches([f"q{i}" for i in range(60)])[-1].ids)
10
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

BATCH_SIZE = 25
DEFAULT_SEED = 2025
#: Constellation code names in a fixed order (88 IAU constellations would be overkill; these are easy to say).
CODE_NAMES: tuple[str, ...] = (
    "Andromeda",
    "Aquarius",
    "Aries",
    "Auriga",
    "Bootes",
    "Cancer",
    "Capricorn",
    "Carina",
    "Cassiopeia",
    "Centaurus",
    "Cepheus",
    "Cetus",
    "Columba",
    "Corvus",
    "Crux",
    "Cygnus",
    "Draco",
    "Eridanus",
    "Gemini",
    "Hercules",
    "Hydra",
    "Lacerta",
    "Leo",
    "Libra",
    "Lupus",
    "Lynx",
    "Lyra",
    "Orion",
    "Pavo",
    "Pegasus",
    "Perseus",
    "Phoenix",
    "Pisces",
    "Sagittarius",
    "Scorpius",
    "Taurus",
    "Tucana",
    "Ursa",
    "Vela",
    "Virgo",
)


@dataclass(frozen=True)
class Batch:
    """One batch: its code name and its question ids in the order they are shown."""

    name: str
    ids: tuple[str, ...]


class BatchError(ValueError):
    """A batch name that the split does not have; the message lists the ones it has."""


def code_name(index: int) -> str:
    """The code name of batch ``index`` (0-based): a constellation, suffixed ``-2``, ``-3`` … on later rounds."""
    name = CODE_NAMES[index % len(CODE_NAMES)]
    rounds = index // len(CODE_NAMES)
    return name if rounds == 0 else f"{name}-{rounds + 1}"


def make_batches(ids: Sequence[str], *, seed: int = DEFAULT_SEED, size: int = BATCH_SIZE) -> list[Batch]:
    """Shuffle ``ids`` with ``seed`` and cut them into batches of ``size`` (the last one may be shorter).

    The shuffle sorts the ids first, so the batches do not depend on the order the split is read in.
    """
    if size < 1:
        raise ValueError(f"batch size must be positive, got {size}")
    order = sorted(str(i) for i in ids)
    random.Random(seed).shuffle(order)
    starts = range(0, len(order), size)
    return [Batch(code_name(n), tuple(order[start : start + size])) for n, start in enumerate(starts)]


def find_batch(batches: Sequence[Batch], name: str) -> Batch:
    """The batch called ``name`` (case-insensitive).

    Raises:
        BatchError: no batch has that name; the message lists the names there are.
    """
    for batch in batches:
        if batch.name.lower() == (name or "").strip().lower():
            return batch
    names = ", ".join(b.name for b in batches) or "none"
    raise BatchError(f"no batch named {name!r} in this split (batches: {names})")

"""The form a submission to the Space carries: every field filled (the benchmark's synthetic form), with plain
values a test replaces as it needs."""

from __future__ import annotations

from madqa.bench.space import synthetic_form


def submission_form(**fields: str) -> dict[str, str]:
    """The synthetic form of system ``s`` by ``u`` (:func:`madqa.bench.space.synthetic_form`), ``fields`` replacing
    its values."""
    return {**synthetic_form("s", "u"), **fields}

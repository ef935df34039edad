"""The form a submission to the Space carries: every field filled, with plain values a test replaces as it needs."""

from __future__ import annotations

PLAIN_FORM = {
    "system": "s",
    "submitter": "u",
    "agent": "a",
    "model": "m",
    "contact": "c",
    "models_used": "m",
    "training_data": "none",
    "compute": "none",
}


def submission_form(**fields: str) -> dict[str, str]:
    """:data:`PLAIN_FORM` with ``fields`` replacing its values."""
    return {**PLAIN_FORM, **fields}

"""Attacks on the trace redactor (agents/export/redact.py): each string carries a secret in a form an earlier
version let through; the redacted text must hold none of it, and redacting twice changes nothing (the publish
check relies on that)."""

from __future__ import annotations

import pytest

from madqa.agents.export.redact import Redactor

ENV = {"OPENROUTER_KEY": "or-Zq81mPx0aLw", "DB_PASSWD": "tr0ub4dor&3x", "GCP_CREDENTIALS": "svc-acct-98765xyz"}

ATTACKS = [
    # a provider's error message quoting a base URL with credentials
    ("connection refused: http://bob:s3cretPassw0rd@10.0.0.5:8000/v1/chat", "s3cretPassw0rd"),
    ("https://deploy-user@internal.example/v1", "deploy-user"),
    # HTTP basic credentials echoed from a request dump
    ("Authorization: Basic dXNlcjpodW50ZXIyMg==", "dXNlcjpodW50ZXIyMg"),
    # environment values of secret variables not named *_API_KEY
    ("the key is or-Zq81mPx0aLw, as configured", "or-Zq81mPx0aLw"),
    ("password tr0ub4dor&3x rejected", "tr0ub4dor&3x"),
    ("using svc-acct-98765xyz", "svc-acct-98765xyz"),
]


@pytest.mark.parametrize(("text", "secret"), ATTACKS)
def test_a_secret_in_any_of_these_forms_is_removed(text: str, secret: str) -> None:
    redactor = Redactor(ENV, home="/home/alice")
    out = redactor.text(text)
    assert secret not in out, out
    assert redactor.text(out) == out  # a fixed point: the publish check accepts what the export wrote


def test_hosts_and_ordinary_urls_are_kept() -> None:
    redactor = Redactor(ENV, home="/home/alice")
    text = "see https://huggingface.co/datasets/OxRML/MADQA and http://10.0.0.5:8000/v1 (user@example.org)"
    assert redactor.text(text) == text
    assert redactor.text("http://bob:pw@10.0.0.5:8000/v1") == "http://[REDACTED:credentials]@10.0.0.5:8000/v1"

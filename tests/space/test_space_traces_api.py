"""The launched Space takes a submission's traces URL over its submit API (issue 42): the optional argument after
``key``; a refused URL stores nothing, and an older client that sends no traces argument is still accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gradio")

from helpers.space_fixtures import gold, results  # noqa: E402

from madqa.space.traces_link import TRACES_LABEL  # noqa: E402

pytestmark = pytest.mark.server
BUCKET = "https://hf.co/buckets/me/traces/bm25"
REFUSED = f"form: the field '{TRACES_LABEL}' must be a Hugging Face dataset or bucket URL"


def _write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_launched_space_takes_the_traces_url_over_its_api(layout, tmp_path: Path) -> None:
    from gradio_client import handle_file
    from helpers.guarded_space import FORM as API_FORM
    from helpers.guarded_space import Clock, Space

    rows = gold(layout)
    space = Space(layout, tmp_path / "db.sqlite", Clock(1000.0))
    try:
        client = space.client()
        bad = _write(tmp_path, results(rows, 2), "bad.jsonl")
        answer = client.predict(handle_file(str(bad)), *API_FORM, "k1", "data:text/html,x", api_name="/submit")[0]
        assert answer.startswith(f"**Rejected:** {REFUSED}"), answer
        assert space.services.store.count() == 0
        good = _write(tmp_path, results(rows, 3), "good.jsonl")
        answer = client.predict(handle_file(str(good)), *API_FORM, "k2", BUCKET, api_name="/submit")[0]
        assert answer.startswith("**Accepted**"), answer
        plain = _write(tmp_path, results(rows, 4), "plain.jsonl")  # an older client: no traces argument
        assert client.predict(handle_file(str(plain)), *API_FORM, api_name="/submit")[0].startswith("**Accepted**")
        board = client.predict(api_name="/refresh")
        column, ids = board["headers"].index("Traces"), board["headers"].index("#")
        assert sorted((row[ids], row[column]) for row in board["data"]) == [(1, BUCKET), (2, "")]
    finally:
        space.close()

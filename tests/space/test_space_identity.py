"""Identity, provenance and limits of the Space without a server: names, reserved names, the persisted rate limit,
duplicate files, idempotent retries (also after a kill between commit and response), the upload gate. The database
files' modes and migration are in test_space_database.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("gradio")

import helpers.space_fixtures as space_fixtures
from helpers.paths import ROOT
from helpers.space_fixtures import FORM, Clock, gold, results

#: The shared ``scorer`` fixture, made visible to pytest in this module.
scorer_fixture = space_fixtures.scorer_fixture


# --- names ------------------------------------------------------------------------------------------------------


def test_names_are_nfkc_normalised_and_whitespace_collapsed() -> None:
    from madqa.space.identity import clean_form

    out = clean_form({**FORM, "system": "  Ｍｙ   ｓｙｓｔｅｍ\t２ ", "compute": " 2 GPU-hours\n(A100) "})
    assert out["system"] == "My system 2" and out["compute"] == "2 GPU-hours\n(A100)"


INVISIBLE = [
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u200e",
    "\u200f",
    "\u202a",
    "\u202e",
    "\u2066",
    "\u2069",
    "\u061c",
    "\u2028",
    "\u2029",
    "\ue000",
    "\u3164",
]


@pytest.mark.parametrize("char", INVISIBLE)
def test_invisible_and_bidi_characters_are_refused_in_every_field(char: str) -> None:
    from madqa.space.identity import SubmissionError, clean_form

    for field in ("system", "submitter", "contact", "training_data"):
        with pytest.raises(SubmissionError, match=r"character U\+[0-9A-F]{4}"):
            clean_form({**FORM, field: f"my{char}name"})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("system", "Baseline: no answer (floor)"),
        ("system", "baseline: no answer (floor)"),
        ("system", "BASELINE:   NO ANSWER (FLOOR)"),
        ("system", "Ｂａｓｅｌｉｎｅ: no answer (floor)"),  # full-width (NFKC)
        ("system", "\u0412aseline: BM25 top-1 page, no answer"),  # Cyrillic capital Ve
        ("system", "baseline: my own thing"),  # the prefix is reserved
        ("system", "Baselines"),
        ("submitter", "madqa baselines"),
        ("submitter", "MADQA  Baselines"),
        ("submitter", "ｍａｄｑａ baselines"),
        ("submitter", "Maintainers"),
        # issue 23: confusable skeletons (UTS #39) after case and punctuation folding
        ("system", "BaseIine: no answer (floor)"),  # capital I for l
        ("system", "Base1ine: no answer (floor)"),  # digit one for l
        ("system", "Baseline: no answer (fl00r)"),  # digit zero for o
        ("system", "Baseline:no answer(floor)"),
        ("system", "B a s e l i n e"),
        ("system", "base line"),
        ("system", "Baseline_no_answer_floor"),
        ("system", "B\u0430seline: no answer (floor)"),  # Cyrillic small a
        ("system", "\u0392aseline: no answer (floor)"),  # Greek capital Beta
        ("system", "Bas\u0435l\u0456n\u0435"),  # Cyrillic e, i
        ("system", "Baseli\u03b7e"),  # Greek eta
        ("system", "\u0412\u0410\u0405\u0415L\u0406N\u0415"),  # Cyrillic capitals
        ("system", "Baseline: no answer (fl\u03bf\u03bfr)"),  # Greek omicron
        ("system", "\U0001d401aseline"),  # mathematical bold B (NFKC)
        ("system", "B\u00e1seline"),  # a mark: dropped
        ("system", "Base|ine"),  # vertical line for l
        ("submitter", "madqa_baselines"),
        ("submitter", "MADQA-baselines"),
        ("submitter", "m a d q a"),
        ("submitter", "madqa"),
        ("submitter", "rnadqa"),  # r n for m
        ("submitter", "\u217fadqa"),  # small roman numeral one thousand
        ("submitter", "m\u0430dq\u0430 fans"),  # Cyrillic a
        ("submitter", "Ｍａｉｎｔａｉｎｅｒ"),
        ("submitter", "maintainer-bot"),
        ("submitter", "BaseIines"),
        # issue 39: the four names that were accepted, and the look-alikes beside them
        ("system", "Base\u04cfine: no answer (floor)"),  # Cyrillic small palochka (confusables.txt 13: i)
        ("system", "Base\u0269ine: BM25 top-1 page, no answer"),  # Latin small iota
        ("system", "\u0299aseline: BM25 top-3 pages, no answer"),  # small capital B
        ("submitter", "\u1d0d\u1d00\u1d05\u01eb\u1d00 baselines"),  # small capitals, o with ogonek for q
        ("submitter", "\u1d0d\u1d00\u1d05\ua7af\u1d00"),  # small capital Q
        ("submitter", "mad\u01eda"),  # o with ogonek and macron
        ("system", "Base\u0131ine"),  # dotless i for l
        ("submitter", "ma\u0131ntainer"),  # ... and for i
        ("system", "Basel\u0269ne"),  # iota for i
        ("system", "\u0243aseline"),  # B with stroke (not decomposed)
        ("system", "Base\u026bine"),  # l with middle tilde
        ("system", "Base\u04c0ine"),  # Cyrillic capital palochka
        ("system", "\u0299\u1d00\ua731\u1d07\u029f\u026a\u0274\u1d07"),  # all small capitals
        ("system", "\u0432aseline"),  # Cyrillic ve (confusables.txt: small capital B)
        ("submitter", "\u043cadqa"),  # Cyrillic em (confusables.txt: turned w; its capital is M)
    ],
)
def test_reserved_names_are_refused_for_users_with_lookalikes(field: str, value: str) -> None:
    from madqa.space.identity import SubmissionError, clean_form

    with pytest.raises(SubmissionError, match="reserved for the maintainers"):
        clean_form({**FORM, field: value})
    assert clean_form({**FORM, field: value}, maintainer=True)[field]  # the seed itself may use them


@pytest.mark.parametrize(
    "value", ["Base\u200bline: no answer (floor)", "\u202eBaseline: no answer (floor)", "Baseline\u2066: x\u2069"]
)
def test_lookalikes_with_invisible_characters_are_refused(value: str) -> None:
    from madqa.space.identity import SubmissionError, clean_form

    with pytest.raises(SubmissionError):
        clean_form({**FORM, "system": value})


def test_ordinary_names_pass_and_seed_names_are_the_reserved_ones() -> None:
    from madqa.space.identity import BASELINE_SYSTEMS, clean_form, is_reserved
    from madqa.space.seed import SEED_FORM, baseline_runs

    for name in (
        "My baseline-free agent",
        "BM25 + GPT",
        "basalt line",
        "alice",
        "Madison",
        "GPT-4o 1-shot",
        "Iliad",
        "Il\u0131ca",
        "\u01ebrn team",
        "Base camp",
        "lineage",
    ):
        assert clean_form({**FORM, "system": name, "submitter": name})["system"] == name
    assert list(baseline_runs([], None, []).keys()) == list(BASELINE_SYSTEMS)
    assert all(is_reserved("system", s) for s in BASELINE_SYSTEMS) and is_reserved("submitter", SEED_FORM["submitter"])


def test_the_confusables_table_is_unicodes() -> None:
    """The skeleton comes from Unicode's confusables.txt (not a hand-written fold), each mapping in its direction."""
    from madqa.space.confusables import TABLE, confusable, prototypes, skeleton

    table = prototypes()
    header = dict(
        line[2:].split(": ", 1)
        for line in TABLE.read_text(encoding="utf-8").splitlines()[:8]
        if line.startswith("# ") and ": " in line
    )
    assert header["Version"] == "13.0.0" and len(header["SHA-256 of the file"]) == 64
    assert len(table) == 6311  # every source of confusables.txt 13.0.0
    assert table["I"] == "l" and table["1"] == "l" and table["0"] == "O" and table["m"] == "rn"
    assert table["\u0430"] == "a" and table["\u043e"] == "o" and table["\u03bf"] == "o"  # Cyrillic a, o; Greek o
    # direction: Cyrillic ve -> small capital B (a symmetric table cannot tell which is the prototype)
    assert table["\u0432"] == "\u0299" and "\u0299" not in table
    assert not set("".join(table.values())) & set(table), "a prototype that is also a source"
    for char in table:  # the skeleton is idempotent (taken to a fixed point: the file's prototypes are not NFD)
        assert skeleton(skeleton(char)) == skeleton(char), char
    for a, b in [
        ("I", "l"),
        ("1", "l"),
        ("0", "o"),
        ("O", "0"),
        ("rn", "m"),
        ("\uff41", "a"),
        ("\u0406", "I"),
        ("\u0131", "i"),
        ("\u0131", "l"),
        ("\u04cf", "l"),
        ("\u01eb", "q"),
        ("\u01eb", "o"),
        ("\u0299", "b"),
        ("\u1d0d", "M"),
        ("\u212e", "e"),
        ("\u2113", "l"),
    ]:
        assert confusable(a, b), (a, b)
    for a, b in [("a", "b"), ("i", "l"), ("e", "c"), ("madqa", "madqb"), ("o", "q"), ("\u0131", "o")]:
        assert not confusable(a, b), (a, b)  # (L and I meet: l folded, I a lookalike)


def test_the_table_script_writes_what_the_skeleton_reads(tmp_path: Path) -> None:
    """``scripts/confusables_table.py`` turns a confusables.txt into the table, which the skeleton reads back."""
    import importlib.util

    from madqa.space import confusables

    spec = importlib.util.spec_from_file_location("confusables_table", ROOT / "scripts" / "confusables_table.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = [
        line.split("\t")
        for line in confusables.TABLE.read_text(encoding="utf-8").splitlines()
        if not line.startswith("#")
    ]
    source = "\ufeff# confusables.txt\n# Date: 2020-02-13\n# Version: 13.0.0\n#\n" + "".join(
        f"{s} ;\t{t} ;\tMA\t# ( x \u2192 y ) A \u2192 B\t#\n\n" for s, t in reversed(rows)
    )
    text = script.table_text(source.encode("utf-8"), "a test")
    assert [line for line in text.splitlines() if not line.startswith("#")] == ["\t".join(r) for r in rows]
    assert "# Version: 13.0.0" in text and "# From: a test" in text
    with pytest.raises(SystemExit, match="listed once"):
        script.table_text((source + f"{rows[0][0]} ;\t0041 ;\tMA\n").encode("utf-8"), "a test")
    with pytest.raises(SystemExit, match="not Unicode's confusables.txt"):
        script.table_text(b"# Version: 1\n0041 ;\t0042 ;\tMA\n", "a test")


def test_identity_key_prefers_the_hub_user_and_requires_login_on_a_space() -> None:
    from types import SimpleNamespace

    from madqa.space.identity import SubmissionError, identity_key

    request = SimpleNamespace(client=SimpleNamespace(host="10.1.2.3"), headers={"x-forwarded-for": "6.6.6.6"})
    assert identity_key(request, None) == "ip:10.1.2.3"  # never the header
    assert identity_key(request, SimpleNamespace(username="alice"), login_required=True) == "hf:alice"
    with pytest.raises(SubmissionError, match="log in with your Hugging Face account"):
        identity_key(request, None, login_required=True)


# --- rate limit, duplicates, idempotency ------------------------------------------------------------------------


@pytest.mark.slow
def test_rate_limit_counts_accepted_only_persists_and_expires_at_the_window(scorer, layout, tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import RateLimiter, Scorer, SubmissionError, clean_form

    rows, clock = gold(layout), Clock(1000.0)
    limiter = RateLimiter(2, 100, clock=clock)
    form = clean_form(FORM)
    for n in range(5):  # rejected files never use the quota
        with pytest.raises(SubmissionError, match="line 1"):
            scorer.submit_text(f'{{"id": "nope-{n}", "answer": []}}\n', form, identity="ip:a", limiter=limiter)
    scorer.submit_text(results(rows, 1), form, identity="ip:a", limiter=limiter)
    clock.now = 1010.0
    scorer.submit_text(results(rows, 2), form, identity="ip:a", limiter=limiter)
    limited = r"rate limit: at most 2 accepted submissions per 100 s; try again in 90 s"
    with pytest.raises(SubmissionError, match=limited):
        scorer.submit_text(results(rows, 3), form, identity="ip:a", limiter=limiter)
    scorer.submit_text(results(rows, 4), form, identity="ip:b", limiter=limiter)  # per identity
    # a restart: a new store and scorer over the same file still know the window
    again = Scorer.from_labels(layout.test_labels, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=20)
    clock.now = 1099.0
    with pytest.raises(SubmissionError, match="rate limit"):
        again.submit_text(results(rows, 3), form, identity="ip:a", limiter=limiter)
    clock.now = 1100.0  # the first event leaves the window at exactly t + window
    assert again.submit_text(results(rows, 3), form, identity="ip:a", limiter=limiter).id == 4
    with pytest.raises(SubmissionError, match="rate limit"):
        again.submit_text(results(rows, 5), form, identity="ip:a", limiter=limiter)
    assert again.store.count() == 4


def test_concurrent_submissions_cannot_exceed_the_limit(scorer, layout) -> None:
    from madqa.space.submission import RateLimiter, SubmissionError, clean_form

    rows, limiter = gold(layout), RateLimiter(3, 3600, clock=Clock())
    barrier, outcomes = threading.Barrier(8), []

    def send(n: int) -> None:
        barrier.wait()
        try:
            scorer.submit_text(results(rows, n), clean_form(FORM), identity="hf:eve", limiter=limiter)
            outcomes.append("ok")
        except SubmissionError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=send, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("ok") == 3 and scorer.store.count() == 3, outcomes
    assert all(o.startswith("rate limit") for o in outcomes if o != "ok")


def test_duplicate_files_are_refused_with_the_earlier_number(scorer, layout) -> None:
    from madqa.space.submission import SubmissionError, clean_form

    rows = gold(layout)
    text = results(rows, 5)
    first = scorer.submit_text(text, clean_form(FORM)).id
    with pytest.raises(SubmissionError, match=rf"already submitted as #{first}\b"):
        scorer.submit_text(text, clean_form({**FORM, "system": "other name"}))
    lines = [json.loads(x) for x in text.splitlines()]
    reshaped = "\n\n".join(
        json.dumps(dict(reversed(list(d.items()))), indent=None, separators=(" ,", " : ")) for d in reversed(lines)
    )  # same content: other key order, line order, spacing
    with pytest.raises(SubmissionError, match=rf"already submitted as #{first}\b"):
        scorer.submit_text(reshaped, clean_form(FORM))
    assert scorer.submit_text(results(rows, 5, steps=2), clean_form(FORM)).id == first + 1  # different content
    assert scorer.store.count() == 2


def test_retry_after_an_exception_between_commit_and_response(scorer, layout, monkeypatch) -> None:
    from madqa.space.submission import RateLimiter, Scorer, SubmissionError, clean_form

    rows, limiter = gold(layout), RateLimiter(1, 3600, clock=Clock())
    real = Scorer.accepted
    calls = []

    def crash_once(self, sid, **kw):
        calls.append(sid)
        if len(calls) == 1:
            raise RuntimeError("connection lost after the commit")
        return real(self, sid, **kw)

    monkeypatch.setattr(Scorer, "accepted", crash_once)
    text = results(rows, 6)
    with pytest.raises(RuntimeError):
        scorer.submit_text(text, clean_form(FORM), identity="ip:a", key="k-1", limiter=limiter)
    assert scorer.store.count() == 1  # stored, but the submitter saw an error
    retry = scorer.submit_text(text, clean_form(FORM), identity="ip:a", key="k-1", limiter=limiter)
    assert retry.replayed and retry.id == calls[0] and scorer.store.count() == 1  # not a duplicate, not rate limited
    with pytest.raises(SubmissionError, match="key was already used for submission"):
        scorer.submit_text(results(rows, 7), clean_form(FORM), identity="ip:a", key="k-1", limiter=limiter)
    with pytest.raises(SubmissionError, match="already submitted as"):  # another identity's key does not match
        scorer.submit_text(text, clean_form(FORM), identity="ip:b", key="k-1", limiter=limiter)


def test_retry_after_a_kill_between_commit_and_response(layout, tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import RateLimiter, Scorer, clean_form, format_accepted

    text = results(gold(layout), 4)
    (tmp_path / "results.jsonl").write_text(text, encoding="utf-8")
    script = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from madqa.space.storage import SubmissionStore
        from madqa.space.submission import RateLimiter, Scorer, clean_form
        Scorer.accepted = lambda self, sid, **kw: os._exit(137)  # killed right after the commit
        store = SubmissionStore({str(tmp_path / "db.sqlite")!r})
        scorer = Scorer.from_labels(Path({str(layout.test_labels)!r}), store, n_resamples=5)
        scorer.submit(Path({str(tmp_path / "results.jsonl")!r}), {FORM!r}, identity="ip:a", key="key-7",
                      limiter=RateLimiter(1, 3600))
        raise SystemExit("not killed")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 137, proc.stderr[-2000:]
    store = SubmissionStore(tmp_path / "db.sqlite")
    assert store.count() == 1
    scorer = Scorer.from_labels(layout.test_labels, store, n_resamples=5)
    retry = scorer.submit_text(text, clean_form(FORM), identity="ip:a", key="key-7", limiter=RateLimiter(1, 3600))
    assert retry.replayed and store.count() == 1
    assert format_accepted(retry).startswith(f"**Accepted** as submission #{retry.id}")


def test_upload_gate_reads_a_bounded_number_of_uploads_at_once() -> None:
    """The gate holds a body in memory until its part names are checked: at most ``max_active`` at a time."""
    import asyncio

    from madqa.space.uploads import UploadGate

    body = b'--b\r\nContent-Disposition: form-data; name="files"; filename="r.jsonl"\r\n\r\n{}\r\n--b--\r\n'
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/gradio_api/upload",
        "headers": [
            (b"content-length", str(len(body)).encode()),
            (b"content-type", b"multipart/form-data; boundary=b"),
        ],
    }

    async def run() -> list[int]:
        release, passed, statuses = asyncio.Event(), [], []

        async def app(scope, receive, send) -> None:  # noqa: ANN001 - ASGI
            passed.append((await receive())["body"])

        async def slow_receive() -> dict:
            await release.wait()
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        gate = UploadGate(app, max_bytes=1024, max_active=2)
        waiting = [asyncio.create_task(gate(scope, slow_receive, send)) for _ in range(2)]
        await asyncio.sleep(0)
        try:  # a third while two are being read: answered at once (if it waited for a body, this would hang)
            await asyncio.wait_for(gate(scope, slow_receive, send), 30)
        finally:
            release.set()
        await asyncio.gather(*waiting)
        await gate(scope, slow_receive, send)  # and again once they are done
        assert passed == [body, body, body] and gate.active == 0
        return statuses

    assert asyncio.run(run()) == [503]

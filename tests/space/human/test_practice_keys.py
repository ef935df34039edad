"""Attacks on the Space's "Solve it yourself" runs through the app's API (gradio_client against a launched app):
a visitor's run is reachable only with the secret the server gave that visitor's browser, and one client's flood of
Starts neither evicts another visitor's run nor grows past its limit of new runs (issue 23, defect 5).

Clients are told apart by address: uvicorn believes ``X-Forwarded-For`` from 127.0.0.1 (``FORWARDED_ALLOW_IPS``,
as a trusted proxy on a Space), so each ``Client`` here sends the address it plays."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.clients import gradio_client
from helpers.practice_tab import embedded_practice

pytestmark = pytest.mark.server

pytest.importorskip("gradio")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

VICTIM, ATTACKER = "10.0.0.1", "10.0.0.66"
BATCH = "Andromeda"


@pytest.fixture(name="practice")
def practice_fixture(layout, monkeypatch) -> Iterator[tuple[Any, str]]:
    """A launched embedded practice interface (as the Space's tab) and its URL."""

    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import HumanService, build_plan

    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")  # the test plays the trusted proxy
    service = HumanService(build_plan("dev", out_dir=None), HumanCorpus.open(None))
    try:
        with embedded_practice(service, default_concurrency_limit=8) as url:
            yield service, url
    finally:
        service.close()


def client(url: str, address: str) -> Any:

    return gradio_client(url, headers={"X-Forwarded-For": address})


def text(outputs: Any) -> str:
    return "\n".join(v for v in outputs if isinstance(v, str))


def shown_id(outputs: Any) -> str:
    """The annotator id the page shows (sidebar progress)."""
    match = re.search(r"annotator `(visitor-[0-9a-f]+)`", text(outputs))
    assert match, text(outputs)
    return match.group(1)


def start(c: Any, known: Any = None) -> Any:
    return c.predict(BATCH, known, api_name="/h_start")


def http_start(h: Any, url: str) -> str:
    """One Start as a script sends it: gradio's plain HTTP API, a new session each time (10x faster than a
    ``Client``); the text of the outputs."""
    import json

    posted = h.post(f"{url}gradio_api/call/h_start", json={"data": [BATCH, None]})
    reply = h.get(f"{url}gradio_api/call/h_start/{posted.json()['event_id']}").text
    [data] = [line.removeprefix("data: ") for line in reply.splitlines() if line.startswith("data: ")][-1:]
    return text(json.loads(data))


def test_a_visible_id_or_a_guess_does_not_reach_another_visitors_run(practice) -> None:
    """Attack: a second session sends, as the browser's stored value, the victim's visible id (and forms of it, an
    old-style id, a well-formed random key), then searches and answers. It gets a run of its own each time; the
    victim's run is untouched. The victim's own key (what its browser keeps) resumes the run in a new session."""
    import secrets

    service, url = practice
    victim = client(url, VICTIM)
    first = start(victim)
    key, visible = first[-1], shown_id(first)
    assert isinstance(key, str) and len(key) >= 22 and key not in text(first[:-1])  # >= 128 bits, in no shown value
    victim.predict("riverton water", api_name="/h_search")
    [run] = service.registry._runs.values()
    assert run.annotator == visible and key not in run.jsonl() and visible.removeprefix("visitor-") not in key

    guesses = [
        visible,
        visible.removeprefix("visitor-"),
        f"visitor-{visible[-12:]}",
        run.annotator.upper(),
        "",
        secrets.token_urlsafe(24),
        {"key": visible},
        key[:-1],
    ]
    for guess in guesses:
        attacker = client(url, ATTACKER)
        got = start(attacker, guess)
        assert got[-1] != key and shown_id(got) != visible, guess
        assert "riverton water" not in text(got) and "Searches:** none yet" in text(got)
        attacker.predict("attacker query", api_name="/h_search")
        attacker.predict("an attacker answer", api_name="/h_submit")
    assert run.lines == [] and [s["query"] for s in run.session().searches] == ["riverton water"]
    stranger = client(url, ATTACKER)  # no Start at all: actions name no run
    assert "riverton water" not in text(stranger.predict("x", api_name="/h_search"))
    assert run.lines == [] and len(run.session().searches) == 1

    reloaded = client(url, VICTIM)  # the victim's browser after a reload: a new session, the stored key
    back = start(reloaded, key)
    assert back[-1] == key and shown_id(back) == visible and "riverton water" in text(back)


def test_a_flood_of_starts_from_one_address_is_refused_and_evicts_only_its_own_runs(practice) -> None:
    """Attack: 520 Starts from one address (a new session each, as a script sends them), on a registry of 8 runs. The
    first 20 are new runs that, once the registry is full, drop the flooder's own oldest; every later one is
    refused with the limit's message; the victim's run survives and still works. Then 60 Starts from 30 other
    addresses: they drop the flooder's runs first, then are refused ("full") rather than drop a fresh run."""
    import httpx

    from madqa.space.human.registry import NEW_RUNS_PER_CLIENT

    service, url = practice
    service.registry.max_memory_runs = 8
    victim = client(url, VICTIM)
    start(victim)
    victim.predict("riverton water", api_name="/h_search")
    [victim_run] = service.registry._runs.values()

    answers = []
    with httpx.Client(headers={"X-Forwarded-For": ATTACKER}, timeout=60) as flooder:
        for _ in range(520):
            answers.append(http_start(flooder, url))
            assert service.registry.memory_runs() <= 8
    started = [a for a in answers if "Question 1 of" in a]
    refused = [a for a in answers if "Cannot start:" in a and "too many new practice runs" in a]
    assert len(started) == NEW_RUNS_PER_CLIENT and len(refused) == 520 - NEW_RUNS_PER_CLIENT
    assert "at most 20 per 3600 s" in refused[0]
    assert victim_run in service.registry._runs.values()

    full = 0
    for n in range(60):
        with httpx.Client(headers={"X-Forwarded-For": f"10.1.0.{n % 30 + 1}"}, timeout=60) as other:
            full += "the practice tab is full" in http_start(other, url)
    assert full > 0 and service.registry.memory_runs() == 8
    assert victim_run in service.registry._runs.values()
    owners = list(service.registry._owner.values())
    assert owners.count(f"ip:{ATTACKER}") <= 1  # the flooder held the most runs: its runs went first
    after = text(victim.predict("water rates", api_name="/h_search"))
    assert "riverton water" in after and "water rates" in after  # the victim's run, both searches

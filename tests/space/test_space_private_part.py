"""The private part of the test labels (issue 23): nothing shown depends on it, it is released only by the Ladder.

The leakage test runs the board-probing attack (chosen items, distinct ``steps``, brute-force decoding of the
board row with the metric's own code) against a launched Space through gradio_client: it must recover the public
items it chose (the attack is real) within the stated bound, and learn nothing of the private part: twin files that
differ only in the private items' answers look the same in every answer of the Space. With the guard removed
(``break_private``) the twins differ, so the check can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio")

from helpers.private_part import FORM, _scorer, _text

from madqa.loading_script.label_parts import PartsError, assign_parts  # noqa: E402
from madqa.space.ladder import Snapshots, ladder, round_to  # noqa: E402
from madqa.space.private_part import PrivateResult  # noqa: E402
from madqa.space.storage import SubmissionStore  # noqa: E402
from madqa.space.submission import Scorer, SubmissionError  # noqa: E402

pytestmark = pytest.mark.server


def _rows(n: int) -> list[dict[str, Any]]:
    hops, domains = ("single", "cross_page", "cross_doc"), ("Financial", "Legal", "Technical", "Government")
    return [{"id": f"q{i:03d}", "hop_type": hops[i % 3], "domain": domains[(i // 3) % 4]} for i in range(n)]


def test_parts_are_stratified_seeded_and_explicit_parts_win() -> None:
    rows = _rows(120)
    parts = assign_parts(rows, seed=7)
    assert Counter(parts.values()) == {"private": 60, "public": 60}
    strata = Counter((r["hop_type"], r["domain"]) for r in rows)
    for key, size in strata.items():  # every stratum keeps its share, to within one row
        private = sum(1 for r in rows if (r["hop_type"], r["domain"]) == key and parts[r["id"]] == "private")
        assert abs(private - size / 2) <= 1, key
    assert assign_parts(rows, seed=7) == parts and assign_parts(rows, seed=8) != parts
    assert assign_parts(list(reversed(rows)), seed=7) == parts  # the order of the file does not matter
    derived = assign_parts(rows)  # no seed: derived from the labels themselves, stable across calls
    assert derived == assign_parts(rows)
    pinned = [{**r, "part": "public"} if i < 100 else r for i, r in enumerate(rows)]
    again = assign_parts(pinned, seed=7)
    assert all(again[r["id"]] == "public" for r in rows[:100])
    assert Counter(again.values())["private"] == 20  # what is left is drawn up to the share
    with pytest.raises(PartsError, match=r"row 3 \(q002\): field 'part'"):
        assign_parts([*rows[:2], {**rows[2], "part": "secret"}])


def test_the_attack_learns_the_public_part_within_its_bound_and_nothing_of_the_private_part() -> None:
    from madqa.bench.leakage import attack

    result = attack(items=60, probes=2, chosen=6, n_resamples=50, seed=3)
    probes = result["probes"]
    assert all(p["truth_found"] for p in probes), probes  # the decoder is right about the public items
    assert max(p["bits"] for p in probes) >= 1.0  # ... and learns something: the attack is real
    assert result["max_bits"] <= result["bound_bits"]  # the bound space/README.md states
    assert result["private_identical"], probes  # nothing shown moved with the private answers
    broken = attack(items=60, probes=1, chosen=6, n_resamples=50, seed=3, break_private=True)
    assert not broken["private_identical"]  # the same check sees a Space that shows the private part


def test_a_shown_number_never_changes_when_only_private_items_change(tmp_path: Path) -> None:
    scorer, refs = _scorer(tmp_path)
    public = [r.id for r in refs if r.id not in scorer.private_ids]
    base = set(public[::2])
    a = scorer.evaluate_text(_text(refs, base))
    b = scorer.evaluate_text(_text(refs, base | set(scorer.private_ids)))  # every private item right as well
    assert a.report == b.report and a.items == b.items
    assert a.report["n"] == len(public) and {it["id"] for it in a.items} == set(public)
    pa = scorer.evaluate_private(_text(refs, base))
    pb = scorer.evaluate_private(_text(refs, base | scorer.private_ids))
    assert pa.report["accuracy"] == 0.0 and pb.report["accuracy"] == 1.0  # the private part is really scored


def test_the_answer_does_not_wait_for_the_private_part_and_a_restart_resumes_it(tmp_path: Path) -> None:
    scorer, refs = _scorer(tmp_path)
    release, started = threading.Event(), threading.Event()
    evaluate = scorer.private._evaluate

    def blocked(text: str) -> Any:
        started.set()
        release.wait(30)
        return evaluate(text)

    scorer.private._evaluate = blocked
    acc = scorer.submit_text(_text(refs, {r.id for r in refs}), FORM)
    assert started.wait(10) and not release.is_set()  # answered while the private part is still being scored
    assert acc.report["accuracy"] == 1.0 and scorer.private.scores.results() == []
    release.set()
    assert scorer.private.drain(30)
    (result,) = scorer.private.scores.results()
    assert (result.submission_id, result.status, result.accuracy) == (acc.id, "scored", 1.0)
    assert result.identity == "submitter:u"
    assert scorer.private.scores.pending() == []  # the queued text is gone once scored
    # a crash between acceptance and private scoring: the text waits in the database, the next start scores it
    scorer.private.scores.enqueue(acc.id, "hf:someone", _text(refs, set()))
    again = Scorer(
        scorer.references, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=20, private_ids=scorer.private_ids
    )
    assert again.resume_private() == 1 and again.private.drain(30)
    (result,) = again.private.scores.results()
    assert (result.identity, result.accuracy) == ("hf:someone", 0.0)


def test_files_sent_at_once_are_refused_before_any_gold_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import madqa.metric.report as report_module

    scorer, refs = _scorer(tmp_path)
    scorer.private = None  # only the answers' own scoring is counted here (the private part runs later, apart)
    gate, calls = threading.Event(), Counter()
    anls = report_module.anls_star

    def counted(*args: Any) -> Any:
        calls["anls"] += 1
        gate.wait(10)  # hold the first file in scoring while the others arrive
        return anls(*args)

    monkeypatch.setattr(report_module, "anls_star", counted)
    for label, texts, key in (
        ("one key", [_text(refs, set(), tag=str(i)) for i in range(5)], "k1"),
        ("one file", [_text(refs, set(), tag="same")] * 5, None),
    ):
        calls.clear()
        gate.clear()
        out: list[str] = []

        def send(text: str, key: str | None = key, out: list[str] = out) -> None:
            try:
                out.append(f"accepted #{scorer.submit_text(text, FORM, key=key).id}")
            except SubmissionError as exc:
                out.append(str(exc))

        threads = [threading.Thread(target=send, args=(t,)) for t in texts]
        threads[0].start()
        while not calls["anls"]:
            threading.Event().wait(0.01)
        for t in threads[1:]:
            t.start()
        for t in threads[1:]:
            t.join(10)
        refused_early = list(out)
        gate.set()
        threads[0].join(30)
        assert len(refused_early) == 4 and all("being scored right now" in m for m in refused_early), (label, out)
        assert sum(m.startswith("accepted") for m in out) == 1, (label, out)
        assert calls["anls"] == len(refs) - len(scorer.private_ids), label  # one file's public part, nothing more
    calls.clear()
    reordered = "".join(reversed(_text(refs, set(), tag="same").splitlines(True)))
    with pytest.raises(SubmissionError, match="already submitted"):
        scorer.submit_text(reordered, FORM)  # same content in another order: refused before scoring
    assert calls["anls"] == 0


def test_ladder_moves_only_beyond_its_margin_and_only_in_snapshots(tmp_path: Path) -> None:
    r = lambda sid, acc, who="a": PrivateResult(sid, who, "scored", acc, {})  # noqa: E731
    entries = ladder(
        [r(1, 0.30), r(2, 0.305), r(3, 0.32), r(4, 0.50, "b"), PrivateResult(5, "b", "failed", None, {})], 0.01
    )
    assert [(e.identity, e.submission_id, e.value, e.scored, e.unscored) for e in entries] == [
        ("b", 4, 0.5, 1, 1),
        ("a", 3, 0.32, 3, 0),
    ]
    assert round_to(0.3049, 0.01) == 0.30
    scorer, refs = _scorer(tmp_path)
    snaps = Snapshots(scorer.store.path)
    private = [r.id for r in refs if r.id in scorer.private_ids]
    scorer.submit_text(_text(refs, set(private[:10])), FORM)
    scorer.private.drain(30)
    day = 86400.0
    assert snaps.latest() is None and not snaps.take_if_due(0.01, 7, now=time.time() + 6 * day)  # a period after
    assert not snaps.take_if_due(0.01, 0, now=time.time() + 100 * day)  # 0: only the maintainers take snapshots
    assert snaps.take_if_due(0.01, 7, now=time.time() + 8 * day)  # ... the first private result
    first = snaps.latest()
    assert first is not None and [e.value for e in first[3]] == [round_to(10 / len(private), 0.01)]
    scorer.submit_text(_text(refs, set(private[:10]), tag="x"), FORM)  # no better: the value stays
    scorer.submit_text(_text(refs, set(private[:15])), FORM)  # better by more than the margin
    scorer.private.drain(30)
    assert snaps.latest() == first  # nothing is published between snapshots
    assert not snaps.take_if_due(0.01, 7, now=time.time() + 9 * day)
    snaps.take(0.01)
    (entry,) = snaps.latest()[3]  # type: ignore[index]
    assert (entry.value, entry.scored) == (round_to(15 / len(private), 0.01), 3)


def test_the_official_table_shows_the_snapshot_not_the_live_private_scores(tmp_path: Path) -> None:
    from madqa.space.leaderboard import official_caption, official_frame

    scorer, refs = _scorer(tmp_path)
    snaps = Snapshots(scorer.store.path)
    scorer.submit_text(_text(refs, {r.id for r in refs}), FORM)
    scorer.private.drain(30)
    assert official_frame(scorer.store, snaps.latest()).empty
    snaps.take(0.01)
    df = official_frame(scorer.store, snaps.latest())
    assert list(df["Private accuracy"]) == [100.0] and list(df["Submitter"]) == ["u"]
    failed = scorer.submit_text(_text(refs, set()), FORM)
    scorer.private.drain(30)
    scorer.private.scores.record(failed.id, "submitter:u", "failed", {"reason": "budget"}, [])  # as a budget would
    snaps.take(0.01)
    assert "Scored files" not in official_frame(scorer.store, snaps.latest()).columns  # a failure is not told apart
    assert list(official_frame(scorer.store, snaps.latest())["Files"]) == [2]  # the failed file counts the same
    caption = official_caption(snaps.latest(), 20, 20, 7)
    assert "private part" in caption and "(20 items)" in caption and "1 points" in caption


def test_labels_with_explicit_parts_and_a_bad_part_are_named(tmp_path: Path, layout) -> None:
    rows = [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(json.dumps({**r, "part": "private" if i < 5 else "public"}) + "\n" for i, r in enumerate(rows)),
        encoding="utf-8",
    )
    scorer = Scorer.from_labels(path, SubmissionStore(tmp_path / "db.sqlite"), private_share=0.5)
    assert scorer.private_ids == {r["id"] for r in rows[:5]}
    path.write_text(json.dumps({**rows[0], "part": 3}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"labels.jsonl: test labels row 1 .*field 'part'"):
        Scorer.from_labels(path, SubmissionStore(tmp_path / "db2.sqlite"), private_share=0.5)


def test_snapshot_command(tmp_path: Path) -> None:
    scorer, refs = _scorer(tmp_path)
    scorer.submit_text(_text(refs, set()), FORM)
    scorer.private.drain(30)
    cmd = [sys.executable, "-m", "madqa.space.ladder", "snapshot", "--db", str(scorer.store.path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "snapshot #1: 1 identities ranked", done.stderr
    missing = subprocess.run([*cmd[:-1], str(tmp_path / "none.sqlite")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no board database" in missing.stderr and "Traceback" not in missing.stderr


def test_private_results_are_mirrored_and_restored_with_the_board(tmp_path: Path) -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoUrl

    from madqa.space.hub import HubMirror, rebuild_from_folder
    from madqa.space.private_part import PrivateScores

    class FakeHfApi(HfApi):
        def __init__(self) -> None:
            super().__init__(token="hf_fake")
            self.commits: list[list[str]] = []

        def create_repo(self, repo_id, **kw):  # type: ignore[no-untyped-def, override]
            return RepoUrl(f"https://huggingface.co/datasets/{repo_id}")

        def create_commit(self, repo_id, operations, **kw):  # type: ignore[no-untyped-def, override]
            self.commits.append([op.path_in_repo for op in operations])

    scorer, refs = _scorer(tmp_path)
    api = FakeHfApi()
    mirror = HubMirror("me/subs", "hf_fake", tmp_path / "mirror", every_min=60, api=api)
    scorer.store.mirror = mirror
    scorer.submit_text(_text(refs, set()), FORM)  # a first one, so that ids move in the rebuilt store
    scorer.submit_text(_text(refs, set(scorer.private_ids)), {**FORM, "submitter": "v"})
    assert scorer.private.drain(30)
    scorer.private._put = lambda job: None  # a third one still waits for its private part when the Space goes
    waiting = _text(refs, set(list(scorer.private_ids)[:3]))
    scorer.submit_text(waiting, {**FORM, "submitter": "w"})
    mirror._scheduler.trigger().result()
    mirror.stop()
    pushed = {p for c in api.commits for p in c}
    assert {
        "submissions/private-000001.json",
        "submissions/private-000002.json",
        "submissions/pending-000003.json",
    } <= pushed
    rebuilt = SubmissionStore(tmp_path / "rebuilt.sqlite")
    assert rebuild_from_folder(rebuilt, tmp_path / "mirror") == 3
    before = [(r.submission_id, r.identity, r.accuracy) for r in scorer.private.scores.results()]
    after = [(r.submission_id, r.identity, r.accuracy) for r in PrivateScores(rebuilt.path).results()]
    assert after == before == [(1, "submitter:u", 0.0), (2, "submitter:v", 1.0)]
    assert PrivateScores(rebuilt.path).item_scores(2) == scorer.private.scores.item_scores(2)
    # the one that waited is queued again in the restored board (a Space without a persistent disk loses nothing)
    assert PrivateScores(rebuilt.path).pending() == [(3, "submitter:w", waiting)]
    assert PrivateScores(rebuilt.path).orphans() == []

"""`madqa bench leakage`: the board-probing attack of issue 23, run against a launched Space, and what it learns.

The attacker (a participant with the default quota) chooses ``--chosen`` items of the public part, answers about
half of them right (a secret the attack must recover), gives every chosen item a distinct ``steps`` value, and
also answers as many private items. It submits through the Space's own API (gradio_client), reads its row of the
live board back, and decodes it by brute force with the metric's own code: every correctness pattern of the chosen
public items is scored as the Space would (``score_predictions``, ``build_report``, the board's ``row_of``), and the
patterns whose board row equals the one shown stay. ``bits`` = chosen − log2(patterns left): what the submission
taught the attacker about the public part. It never exceeds :func:`~madqa.space.disclosure.public_bits_bound`.

The private part: for each probe a twin file differs only in the private items' answers (right ↔ wrong). Both are
accepted; the Space's answer (message, board row, plot data, official table) must be the same for the two, so no
decoder can learn anything about the private part from them (``private_identical``). Self-contained: a synthetic
gold set of ``--items`` questions (half private, the Space's stratified draw) in a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .measure import emit, free_port

FORM = {"system": "probe", "submitter": "attacker", "agent": "a", "model": "m", "contact": "c", "models_used": "m",
        "training_data": "none", "compute": "none"}  # fmt: skip
#: Board columns the decoder compares (the numbers that move with the chosen items' correctness and order).
DECODED_COLUMNS = ("Accuracy", "Accuracy ±", "Accuracy CI", "Kuiper", "Kuiper CI", "Page F1", "Doc F1")


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa bench leakage`."""
    parser.add_argument("--items", type=int, default=500, help="test items of the synthetic Space (default: 500)")
    parser.add_argument("--probes", type=int, default=3, help="attack submissions (default: 3)")
    parser.add_argument("--chosen", type=int, default=8, help="public items per probe, decoded by brute force")
    parser.add_argument("--resamples", type=int, default=200, help="Kuiper bootstrap resamples of the Space")
    parser.add_argument("--seed", type=int, default=0, help="the attacker's choices")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")


@dataclass(frozen=True)
class Probe:
    """One attack submission: the chosen public items with their secret outcome and steps, the private items."""

    public: tuple[Any, ...]
    truth: tuple[bool, ...]
    steps: tuple[int, ...]
    private: tuple[Any, ...]


def probe_text(probe: Probe, *, private_right: bool) -> str:
    """The probe's results file (private items all right or all wrong; distinct steps everywhere)."""
    lines = []
    for ref, right, steps in zip(probe.public, probe.truth, probe.steps, strict=True):
        lines.append({"id": ref.id, "answer": [ref.answer_variants[0][0] if right else "no idea"], "steps": steps})
    for k, ref in enumerate(probe.private):
        answer = ref.answer_variants[0][0] if private_right else "no idea"
        lines.append({"id": ref.id, "answer": [answer], "steps": 1000 + k})
    return "".join(json.dumps(line) + "\n" for line in lines)


def simulated_row(
    public_refs: Sequence[Any], probe: Probe, pattern: Sequence[bool], n_resamples: int
) -> dict[str, Any]:
    """The board row the Space would show if the chosen items' correctness were ``pattern`` (the metric's code)."""
    from madqa.metric.inputs import parse_results_text
    from madqa.metric.report import ReportOptions, build_report, score_predictions
    from madqa.space.disclosure import public_report
    from madqa.space.leaderboard import row_of
    from madqa.space.storage import StoredSubmission

    submitted = [
        ref.answer_variants[0][0] if right else "no idea" for ref, right in zip(probe.public, probe.truth, strict=True)
    ]
    chosen = {r.id: i for i, r in enumerate(probe.public)}
    refs = []
    for ref in public_refs:  # the hypothesis: gold that makes the submitted answer right exactly on ``pattern``
        i = chosen.get(ref.id)
        if i is not None:
            ref = replace(ref, answer_variants=((submitted[i] if pattern[i] else "something else entirely",),))
        refs.append(ref)
    text = "".join(json.dumps({"id": r.id, "answer": [a], "steps": s}) + "\n"
                   for r, a, s in zip(probe.public, submitted, probe.steps, strict=True))  # fmt: skip
    run = score_predictions(parse_results_text(text, "probe.jsonl"), refs)
    report = public_report(build_report(run, refs, ReportOptions(n_resamples=n_resamples)))
    return row_of(StoredSubmission(0, "", "user", {**FORM, "model": "m"}, "anls", "", report, "agent"))


def decode(
    public_refs: Sequence[Any], probe: Probe, shown: Mapping[str, Any], n_resamples: int
) -> list[tuple[bool, ...]]:
    """Every correctness pattern of the chosen items whose simulated board row equals the shown one."""
    want = tuple(_norm(shown.get(c)) for c in DECODED_COLUMNS)
    left = []
    for pattern in itertools.product((False, True), repeat=len(probe.public)):
        row = simulated_row(public_refs, probe, pattern, n_resamples)
        if tuple(_norm(row.get(c)) for c in DECODED_COLUMNS) == want:
            left.append(pattern)
    return left


def _norm(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (int, float)):
        return f"{float(value):.2f}"
    return str(value)


def _row(client: Any, system: str) -> dict[str, Any]:
    table = client.predict("", api_name="/refresh")
    table = table.get("value", table) if isinstance(table, dict) else table
    headers, data = table["headers"], table["data"]
    rows = [dict(zip(headers, r, strict=True)) for r in data if r[headers.index("System")] == system]
    if len(rows) != 1:
        raise RuntimeError(f"expected one board row for {system!r}, found {len(rows)}")
    return rows[0]


def _shown(client: Any, store: Any, message: str, system: str) -> dict[str, Any]:
    """What the participant sees of one submission, with the parts that differ between any two submissions (the
    submission number, its rank among the others, its name and time) taken out: the message, the board row, the
    official table's caption, and the row's detail panel (no API endpoint: rendered as the board tab does)."""
    from madqa.space.board_detail import detail_markdown

    board_row = _row(client, system)
    row = {k: v for k, v in board_row.items() if k not in ("#", "Rank", "System")}
    text = re.sub(r"#\d+", "#N", re.sub(r"rank \*\*\d+\*\* of \d+", "rank R", message))
    official = client.predict(api_name="/official")
    sub = store.submission(int(board_row["#"]))
    detail = detail_markdown(sub).replace(system, "SYSTEM")
    detail = re.sub(r"#\d+", "#N", re.sub(r"submitted .*? UTC", "submitted T UTC", detail))
    return {"message": text, "row": row, "official_caption": official[0], "detail": detail}


def attack(
    items: int = 500,
    probes: int = 3,
    chosen: int = 8,
    n_resamples: int = 200,
    seed: int = 0,
    break_private: bool = False,
) -> dict[str, Any]:
    """Launch a synthetic Space and run the attack; returns the figures (see the module docstring).

    ``break_private`` makes the Space score every item in what it shows (the guard removed), for tests that must
    see the attack succeed on the private part then.
    """
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from gradio_client import Client, handle_file

    from madqa.loading_script.label_parts import private_ids
    from madqa.space.app import launch
    from madqa.space.config import SpaceConfig
    from madqa.space.disclosure import public_bits_bound
    from madqa.space.services import Services
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import RateLimiter, Scorer

    from .space import synthetic_references

    rng = random.Random(seed)
    refs = synthetic_references(items)
    hidden = private_ids([{"id": r.id, "hop_type": r.hop_type, "domain": ""} for r in refs], seed=seed + 1)
    public_refs = [r for r in refs if r.id not in hidden]
    private_refs = [r for r in refs if r.id in hidden]
    out: dict[str, Any] = {
        "items": items,
        "public_items": len(public_refs),
        "private_items": len(private_refs),
        "chosen": chosen,
        "probes": [],
        "bound_bits": public_bits_bound(len(public_refs), list(Counter(r.hop_type for r in public_refs).values())),
    }
    with tempfile.TemporaryDirectory(prefix="madqa-bench-leakage-") as tmp:
        folder = Path(tmp)
        config = SpaceConfig(db_path=folder / "db.sqlite", labels_path=folder / "none.jsonl", dataset=str(folder),
                             rate_limit=0, n_resamples=n_resamples, snapshot_days=0)  # fmt: skip
        store = SubmissionStore(config.db_path)
        scorer = Scorer(refs, store, n_resamples=n_resamples, private_ids=hidden)
        if break_private:
            scorer.public_ids = None
        with contextlib.redirect_stdout(sys.stderr):
            demo = launch(Services(config, store, scorer, RateLimiter(0, 1)), port=free_port(), host="127.0.0.1",
                          prevent_thread_lock=True, quiet=True)  # fmt: skip
        try:
            client = Client(f"http://127.0.0.1:{demo.server_port}/", verbose=False)
            for k in range(probes):
                probe = Probe(tuple(rng.sample(public_refs, chosen)), tuple(rng.random() < 0.5 for _ in range(chosen)),
                              tuple(rng.sample(range(1, 10 * chosen), chosen)),
                              tuple(rng.sample(private_refs, chosen)))  # fmt: skip
                seen = []
                for twin, private_right in enumerate((True, False)):
                    system = f"probe-{k}-{twin}"
                    path = folder / f"{system}.jsonl"
                    path.write_text(probe_text(probe, private_right=private_right), encoding="utf-8")
                    message = str(client.predict(handle_file(str(path)), system, *list(FORM.values())[1:],
                                                 api_name="/submit")[0])  # fmt: skip
                    if not message.startswith("**Accepted**"):
                        raise RuntimeError(f"probe {system} rejected: {message}")
                    seen.append(_shown(client, store, message, system))
                left = decode(public_refs, probe, seen[0]["row"], n_resamples)
                out["probes"].append({
                    "patterns_left": len(left), "bits": chosen - math.log2(len(left)) if left else float("nan"),
                    "truth_found": probe.truth in left, "private_identical": seen[0] == seen[1],
                })  # fmt: skip
            scorer.private.drain(600)
        finally:
            with contextlib.redirect_stdout(sys.stderr):
                demo.close()
    found = [p["bits"] for p in out["probes"] if p["truth_found"]]
    out["max_bits"] = max(found) if found else float("nan")
    out["private_identical"] = all(p["private_identical"] for p in out["probes"])
    return out


def run(args: argparse.Namespace) -> int:
    """Run `madqa bench leakage` and print its figures."""
    r = attack(max(20, args.items), max(1, args.probes), max(1, min(args.chosen, 12)), max(10, args.resamples),
               args.seed)  # fmt: skip
    lines = [
        f"synthetic Space: {r['public_items']} public + {r['private_items']} private test items; "
        f"{len(r['probes'])} probes of {r['chosen']} chosen public items (distinct steps) + as many private"
    ]
    for i, p in enumerate(r["probes"]):
        lines.append(
            f"  probe {i}: {p['patterns_left']} patterns left, {p['bits']:.1f} bits on the public part "
            f"(truth among them: {p['truth_found']}); private twin identical: {p['private_identical']}"
        )
    lines.append(
        f"most bits per submission {r['max_bits']:.1f} (bound {r['bound_bits']:.1f}); the private part's "
        f"answers changed nothing shown: {r['private_identical']}"
    )
    return emit(r, lines, args.json)

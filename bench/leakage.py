"""`madqa bench leakage`: the strongest board-probing attack we have, run against a launched Space, and what it learns.

The attacker (a participant) submits ``--probes`` crafted files through the Space's own API (gradio_client), reads
what each accepted file shows (its board row and the row's detail panel, with the H.3 error counts) and decodes it
with :mod:`.leakage_decode`: three channels per file, each with one secret bit per chosen public item,

* correctness of ``--chosen`` answers, from Accuracy (with its CI and SE), X-Page/X-Doc, ANLS* (the answers
  of half of the items carry a junk string, so ANLS* splits the count), the Kuiper statistic and its bootstrap CI
  (every answered item has its own ``steps``);
* gold documents of ``--docs`` items, from Doc F1 (two weights) and the error counts;
* gold pages of up to ``--pages`` items, from Page F1 (two weights) and the error counts, on items whose gold
  document an earlier probe decoded with certainty (adaptive: the first probe has no page slots).

Each channel is decoded exactly, by enumerating its hypotheses and scoring them with the Space's own code; the
error counts join the channels. ``bits`` = secret bits − log2(hypotheses left): what the file taught the attacker
about the public part. It never exceeds :func:`~madqa.space.disclosure.public_bits_bound`, which the figures
print beside it.

The private part: for each probe a twin file differs only in the private items' answers (right ↔ wrong). Both are
accepted; the Space's answer (message, board row, official table, detail panel) must be the same for the two, so
no decoder can learn anything about the private part from them (``private_identical``). The response times of
every submission are printed too (``response_s``): the Space answers on a time grid
(:mod:`madqa.space.quiet`), so they say which grid step the scoring fell in, nothing finer. Self-contained: a
synthetic gold set of ``--items`` questions (half private, the Space's stratified draw) in a temporary folder.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .leakage_decode import ERRORS, FORM, SHOWN_COLUMNS, Decoder, decode, design, norm
from .measure import emit

#: Command lines that ``madqa bench leakage --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench leakage --items 100 --probes 2 --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa bench leakage`."""
    parser.add_argument("--items", type=int, default=500, help="test items of the synthetic Space")
    parser.add_argument("--probes", type=int, default=4, help="attack submissions, adaptive")
    parser.add_argument("--chosen", type=int, default=14, help="answer slots per probe (correctness; at most 14)")
    parser.add_argument("--docs", type=int, default=12, help="document slots per probe (gold documents; at most 14)")
    parser.add_argument("--pages", type=int, default=12, help="page slots per probe (gold pages; at most 14)")
    parser.add_argument("--resamples", type=int, default=200, help="Kuiper bootstrap resamples of the Space")
    parser.add_argument("--seed", type=int, default=0, help="the attacker's choices")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")


def _row(client: Any, system: str) -> dict[str, Any]:
    table = client.predict("", api_name="/refresh")
    table = table.get("value", table) if isinstance(table, dict) else table
    headers, data = table["headers"], table["data"]
    rows = [dict(zip(headers, r, strict=True)) for r in data if r[headers.index("System")] == system]
    if len(rows) != 1:
        raise RuntimeError(f"expected one board row for {system!r}, found {len(rows)}")
    return rows[0]


def error_counts(detail: str) -> dict[str, int]:
    """The H.3 error counts as the detail panel writes them ("retrieval 3, navigation 1, ...")."""
    line = next((x for x in detail.splitlines() if x.startswith("**Wrong answers by cause**")), "")
    return {e: int(m.group(1)) for e in ERRORS if (m := re.search(rf"{e.replace('_', ' ')} (\d+)", line))}


def _shown(client: Any, store: Any, message: str, system: str) -> dict[str, Any]:
    """What the participant sees of one submission, with the parts that differ between any two submissions (the
    submission number, its rank, rank interval and tie group among the others, its name and time) taken out: the
    message, the board row, the official table's caption, and the row's detail panel (no API endpoint: rendered as
    the board tab does)."""
    from madqa.space.board_detail import detail_markdown

    board_row = _row(client, system)
    # the rank, its interval and tie group place the row among the others (the twin itself is one of them)
    row = {k: v for k, v in board_row.items() if k not in ("#", "Rank", "Rank interval", "Tie group", "System")}
    text = re.sub(r"#\d+", "#N", re.sub(r"rank \*\*\d+\*\* of \d+", "rank R", message))
    official = client.predict(api_name="/official")
    sub = store.submission(int(board_row["#"]))
    detail = detail_markdown(sub).replace(system, "SYSTEM")
    detail = re.sub(r"#\d+", "#N", re.sub(r"submitted .*? UTC", "submitted T UTC", detail))
    return {"message": text, "row": row, "official_caption": official[0], "detail": detail}


def attack(
    items: int = 500,
    probes: int = 4,
    chosen: int = 14,
    n_resamples: int = 200,
    seed: int = 0,
    break_private: bool = False,
    docs: int = 12,
    pages: int = 12,
) -> dict[str, Any]:
    """Launch a synthetic Space and run the attack; returns the figures (see the module docstring).

    ``break_private`` makes the Space score every item in what it shows (the guard removed), for tests that must
    see the attack succeed on the private part then.
    """
    from gradio_client import handle_file

    from madqa.loading_script.label_parts import private_ids
    from madqa.space.disclosure import public_bits_bound
    from madqa.space.quiet import timing_bits_bound
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    from .space import launched_space, synthetic_config, synthetic_references

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
        "docs": docs,
        "pages": pages,
        "probes": [],
        "response_s": [],
        "bound_bits": public_bits_bound(len(public_refs), list(Counter(r.hop_type for r in public_refs).values())),
    }
    known: dict[str, Any] = {}  # item id → a document decoded as gold with certainty (the next probes' page slots)
    with tempfile.TemporaryDirectory(prefix="madqa-bench-leakage-") as tmp:
        folder = Path(tmp)
        config = synthetic_config(folder, n_resamples=n_resamples, snapshot_days=0)
        out["timing_bits_bound"] = timing_bits_bound(config.answer_grid_s)
        store = SubmissionStore(config.db_path)
        scorer = Scorer(refs, store, n_resamples=n_resamples, private_ids=hidden)
        if break_private:
            scorer.public_ids = None
        with launched_space(config, store, scorer) as client:
            for k in range(probes):
                probe = design(rng, public_refs, private_refs, chosen, docs, known, pages)
                seen = []
                for twin, private_right in enumerate((True, False)):
                    system = f"probe-{k}-{twin}"
                    path = folder / f"{system}.jsonl"
                    path.write_text(probe.text(private_right=private_right), encoding="utf-8")
                    start = time.perf_counter()
                    message = str(
                        client.predict(handle_file(str(path)), system, *list(FORM.values())[1:], api_name="/submit")[0]
                    )
                    out["response_s"].append(time.perf_counter() - start)
                    if not message.startswith("**Accepted**"):
                        raise RuntimeError(f"probe {system} rejected: {message}")
                    seen.append(_shown(client, store, message, system))
                want = {c: norm(seen[0]["row"].get(c)) for c in SHOWN_COLUMNS}
                found = decode(
                    Decoder(public_refs, frozenset(r.id for r in public_refs), probe, n_resamples),
                    want,
                    error_counts(seen[0]["detail"]),
                    seed=seed + k,
                )
                by_id = {r.id: r for r in public_refs}
                for item_id, doc in found.pop("known_docs").items():
                    if any(c.document == doc for c in by_id[item_id].evidence):
                        known[item_id] = doc
                known = {i: d for i, d in known.items() if i not in {s.ref.id for s in probe.of("page")}}
                out["probes"].append({**found, "private_identical": seen[0] == seen[1]})
            scorer.private.drain(600)
    good = [p["bits"] for p in out["probes"] if p["truth_found"] and not p["verify_failures"]]
    out["max_bits"] = max(good) if good else float("nan")
    out["private_identical"] = all(p["private_identical"] for p in out["probes"])
    return out


def run(args: argparse.Namespace) -> int:
    """Run `madqa bench leakage` and print its figures."""
    r = attack(
        max(20, args.items),
        max(1, args.probes),
        max(2, min(args.chosen, 14)),
        max(10, args.resamples),
        args.seed,
        docs=max(2, min(args.docs, 14)),
        pages=max(0, min(args.pages, 14)),
    )
    lines = [
        f"synthetic Space: {r['public_items']} public + {r['private_items']} private test items; "
        f"{len(r['probes'])} adaptive probes, each with {r['chosen']} answer, {r['docs']} document and up to "
        f"{r['pages']} page slots (one secret bit each) + {r['chosen']} private items"
    ]
    for i, p in enumerate(r["probes"]):
        ch = ", ".join(f"{k} {p['channel_bits'][k]:.1f} of {p['slots'][k]}" for k in p["slots"] if p["slots"][k])
        lines.append(
            f"  probe {i}: {p['bits']:.1f} bits on the public part ({ch}; {p['joint_left']} hypotheses left, truth "
            f"among them: {p['truth_found']}, {p['verified']} checked in full, {p['verify_failures']} failed); "
            f"private twin identical: {p['private_identical']}"
        )
    times = r["response_s"]
    lines.append(
        f"most bits per accepted file {r['max_bits']:.1f} (bound on the shown numbers {r['bound_bits']:.1f}); the "
        f"private part's answers changed nothing shown: {r['private_identical']}; response times "
        f"{min(times):.2f}–{max(times):.2f} s (the answer's time grid: at most {r['timing_bits_bound']:.1f} bits more)"
    )
    if any(math.isnan(p["bits"]) for p in r["probes"]):
        lines.append("  (nan: the decoder lost the truth, a bug of the decoder)")
    return emit(r, lines, args.json)

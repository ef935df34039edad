"""The decoder of `madqa bench leakage`: what one accepted file's shown numbers say about the public labels.

A probe file holds three kinds of *slots*, each a public test item with one secret bit:

* ``answer``: the item is answered with a guess; the secret is whether the guess is right. The first half of
  these items give the guess alone (ANLS* 1 when right), the second half the guess plus one junk string (ANLS*
  0.5 when right, still correct), so ANLS* splits the count that Accuracy shows. Every answer slot has its own
  ``steps`` value, so the Kuiper statistic and its bootstrap CI depend on *which* items are right.
* ``doc``: the item cites one candidate document as a whole (no page) and answers "no idea"; the secret is whether
  the document is a gold one. Half of them add a padding document, so that a hit adds one of two weights to Doc F1.
* ``page``: the item cites one candidate page of a document already known to be gold (learnt from the ``doc``
  slots of an earlier probe: the attack is adaptive) and answers "no idea"; the secret is whether the page is a
  gold page. Half of them add a padding page above ``MAX_PAGE`` (always wrong), for two weights in Page F1.

Decoding is exact and uses the Space's own code (the metric's ``score_item``/``build_report``, the Space's
``public_report`` and board ``row_of``): every hypothesis is scored as the Space would score it and kept only if
it shows what the Space showed. The slots are built so that the shown numbers factor into channels: Accuracy,
its CI and SE, X-Page/X-Doc, ANLS*, Kuiper and Kuiper CI depend on the answer slots only; Doc F1 on the doc slots
only; Page F1 on the page slots only (checked for each design, see :func:`decode`); the H.3 error counts of the
row's detail panel add across the three. So each channel is enumerated on its own (2^k hypotheses, narrowed
first by necessary conditions: the sums, the Kuiper statistic), the exact row decides, and the error counts join
the channels. ``bits`` = secret bits − log2(hypotheses left). A sample of the joint hypotheses left, and the
truth, are scored in full to check the factoring (``verified``).

The decoder is given each chosen item's gold *structure* (hop type, how many gold pages and documents), as an
attacker who learnt it earlier would have: this can only make the figure larger, never smaller.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from madqa.space.disclosure import BOARD_BUDGETS
from madqa.space.leaderboard import BUDGET_COLUMNS, COST_COLUMN, COST_NOTE

from .space import synthetic_form

#: Board columns that depend on the answer slots only (the accuracies within 1, 3 and 10 steps too: a doc or page
#: slot is never right).
ANSWER_COLUMNS = (
    "Accuracy",
    "Accuracy ±",
    "Accuracy CI",
    "X-Page",
    "X-Doc",
    "ANLS*",
    "Kuiper",
    "Kuiper CI",
    *(label for _, label in BUDGET_COLUMNS),
)
#: The row's columns a participant sees that the decoder compares (every metric column of the board, and the cost
#: cells: a function of the file alone, the same under every hypothesis). The rank interval and tie group are not a
#: row's: they are computed from the shown Accuracy and "Accuracy ±" of all rows.
SHOWN_COLUMNS = (*ANSWER_COLUMNS, "Kuiper n/a", "Page F1", "Doc F1", "Mean steps", "Coverage", COST_COLUMN, COST_NOTE)
#: The most answer slots given a step count within the board's largest budget (10): one at 1 step, two at 2–3,
#: seven at 4–10, so that each budget column counts its own slots (the rest above, with the doc slots).
BUDGET_SLOTS = max(BOARD_BUDGETS)
ERRORS = ("retrieval", "navigation", "comprehension", "no_answer")
WRONG, JUNK, ELSEWHERE = "no idea", "zz junk", "zz-not-gold.pdf"
FORM = synthetic_form("probe", "attacker")


@dataclass(frozen=True)
class Slot:
    """One chosen public item and its secret bit (``truth``); ``weight`` 1 adds padding (see the docstring)."""

    ref: Any
    kind: str  # "answer", "doc" or "page"
    truth: bool
    weight: int
    steps: int | None
    candidate: Any  # the guess (answer), the document (doc), or (document, page) (page)

    def line(self) -> dict[str, Any]:
        """The results line the probe file holds for this item."""
        out: dict[str, Any] = {"id": self.ref.id}
        if self.kind == "answer":
            out["answer"] = [self.candidate, JUNK] if self.weight else [self.candidate]
        else:
            out["answer"] = [WRONG]
        if self.kind == "doc":
            out["citations"] = [{"document": self.candidate}] + ([{"document": "zz-pad.pdf"}] if self.weight else [])
        if self.kind == "page":
            doc, page = self.candidate
            pad = [{"document": doc, "page": 100_001}] if self.weight else []
            out["citations"] = [{"document": doc, "page": page}, *pad]
        if self.steps is not None:
            out["steps"] = self.steps
        return out

    def hypothesis(self, state: bool) -> Any:
        """The item's gold under the hypothesis that its secret is ``state`` (its structure kept)."""
        ref = self.ref
        if self.kind == "answer":
            return replace(ref, answer_variants=((self.candidate,),) if state else (("something else entirely",),))
        ev = list(ref.evidence)
        if self.kind == "doc":
            docs = {c.document for c in ev}
            if state and self.candidate not in docs:
                ev[0] = replace(ev[0], document=self.candidate)
            elif not state and self.candidate in docs:
                ev = [replace(c, document=ELSEWHERE) if c.document == self.candidate else c for c in ev]
        else:
            doc, page = self.candidate
            pages = {(c.document, c.page) for c in ev}
            k = next(i for i, c in enumerate(ev) if c.document == doc)
            if state and (doc, page) not in pages:
                ev[k] = replace(ev[k], page=page)
            elif not state and (doc, page) in pages:
                ev = [replace(c, page=page + 1) if (c.document, c.page) == (doc, page) else c for c in ev]
        return replace(ref, evidence=tuple(ev))


@dataclass
class Probe:
    """One attack file: its slots (by kind) and the private items it also answers."""

    slots: list[Slot]
    private: list[Any] = field(default_factory=list)

    def of(self, kind: str) -> list[Slot]:
        return [s for s in self.slots if s.kind == kind]

    def text(self, *, private_right: bool) -> str:
        import json

        lines = [s.line() for s in self.slots]
        for k, ref in enumerate(self.private):
            lines.append(
                {"id": ref.id, "answer": [ref.answer_variants[0][0] if private_right else WRONG], "steps": 1000 + k}
            )
        return "".join(json.dumps(line) + "\n" for line in lines)


def design(
    rng: random.Random,
    public: Sequence[Any],
    private: Sequence[Any],
    answers: int,
    docs: int,
    known_docs: Mapping[str, str],
    pages: int,
    fillers: bool = True,
) -> Probe:
    """A probe: ``answers`` answer slots, ``docs`` doc slots and up to ``pages`` page slots on items whose gold
    document ``known_docs`` names (id → document, from earlier probes); secrets drawn at random (the truth)."""
    used = set(known_docs)
    slots: list[Slot] = []
    page_refs = [r for r in public if r.id in known_docs][:pages]
    fresh = [r for r in public if r.id not in used]
    picked = rng.sample(fresh, answers + docs)
    # distinct steps (the Kuiper statistic reads their order); the first answer slots within the board's budgets
    small = rng.sample(range(1, BUDGET_SLOTS + 1), min(answers, BUDGET_SLOTS))
    steps = small + rng.sample(range(BUDGET_SLOTS + 1, 10 * (answers + docs) + 1), answers + docs - len(small))
    all_docs = sorted({c.document for r in public for c in r.evidence})
    for j, ref in enumerate(picked[:answers]):
        truth = rng.random() < 0.5
        guess = ref.answer_variants[0][0] if truth else f"{WRONG} {j}"
        slots.append(Slot(ref, "answer", truth, int(j >= answers // 2), steps[j], guess))
    for j, ref in enumerate(picked[answers:]):
        truth = rng.random() < 0.5
        gold = {c.document for c in ref.evidence}
        doc = ref.evidence[0].document if truth else rng.choice([d for d in all_docs if d not in gold])
        slots.append(Slot(ref, "doc", truth, int(j >= docs // 2), steps[answers + j] if fillers else None, doc))
    for j, ref in enumerate(page_refs):
        truth = rng.random() < 0.5
        doc = known_docs[ref.id]
        gold_pages = {c.page for c in ref.evidence if c.document == doc}
        page = min(gold_pages) if truth else max(gold_pages) + 1 + rng.randrange(20)
        slots.append(Slot(ref, "page", truth, int(j >= len(page_refs) // 2), None, (doc, page)))
    return Probe(slots, rng.sample(list(private), answers))


class Decoder:
    """Scores hypotheses of one probe as the Space would (public part only)."""

    def __init__(self, refs: Sequence[Any], public_ids: frozenset[str], probe: Probe, n_resamples: int) -> None:
        from madqa.agents.harness.prices import load_prices
        from madqa.metric.inputs import parse_results
        from madqa.metric.matching import match_predictions
        from madqa.metric.report import ReportOptions, score_predictions
        from madqa.metric.scoring import score_item
        from madqa.space.scoring import file_cost, part_matching

        parsed = parse_results(probe.text(private_right=False), "probe.jsonl")
        self.notes = parsed.notes
        self.refs, self.matching = part_matching(refs, match_predictions(parsed.predictions, refs), public_ids)
        self.base = list(score_predictions(parsed.predictions, self.refs, matching=self.matching).items)
        self.options = ReportOptions(n_resamples=n_resamples)
        index = {r.id: i for i, r in enumerate(self.refs)}
        self.probe = probe
        self.cost = file_cost(probe.text(private_right=False), load_prices())  # as the Space prices the file
        self.at = {s.ref.id: index[s.ref.id] for s in probe.slots}
        self.scored: dict[tuple[str, bool], Any] = {}
        for s in probe.slots:
            i = self.at[s.ref.id]
            for state in (False, True):
                self.scored[(s.ref.id, state)] = score_item(
                    s.hypothesis(state), self.matching.predictions[i], order=self.matching.orders[i]
                )

    def shown(self, states: Mapping[str, bool]) -> tuple[dict[str, Any], dict[str, int]]:
        """The board row and the detail panel's error counts under ``states`` (item id → secret; others as 0)."""
        from madqa.metric.report import ScoredRun, build_report
        from madqa.space.disclosure import public_report
        from madqa.space.leaderboard import row_of
        from madqa.space.storage import StoredSubmission

        items, refs = list(self.base), list(self.refs)
        for s in self.probe.slots:
            state = bool(states.get(s.ref.id, False))
            items[self.at[s.ref.id]] = self.scored[(s.ref.id, state)]
            refs[self.at[s.ref.id]] = s.hypothesis(state)
        report = build_report(
            ScoredRun(tuple(items), self.matching), refs, replace(self.options, include_items=True), self.notes
        )
        public = public_report(report, report.pop("items"))
        row = row_of(StoredSubmission(0, "", "user", FORM, "anls", "", public, "agent", self.cost))
        return {c: norm(row.get(c)) for c in SHOWN_COLUMNS}, dict(public["errors"]["counts"])

    def item(self, slot: Slot, state: bool) -> Any:
        return self.scored[(slot.ref.id, state)]


def norm(value: Any) -> str:
    """A shown value as the decoder compares it (numbers to two decimals, above the board's one)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (int, float)):
        return f"{float(value):.2f}"
    return str(value)


def _patterns(k: int) -> np.ndarray:
    return ((np.arange(2**k)[:, None] >> np.arange(k)) & 1).astype(bool)


def _errors(dec: Decoder, slots: Sequence[Slot], pattern: Sequence[bool]) -> tuple[int, ...]:
    counts = Counter(dec.item(s, bool(b)).error for s, b in zip(slots, pattern, strict=True))
    return tuple(counts[e] for e in ERRORS)


def _channel(
    dec: Decoder, slots: list[Slot], columns: Sequence[str], want: Mapping[str, str], keep: np.ndarray
) -> list[tuple[bool, ...]]:
    """The patterns of ``slots`` (among ``keep``, a necessary-condition mask) whose row shows ``want``."""
    pats = _patterns(len(slots))[keep]
    left = []
    for p in pats:
        row, _ = dec.shown({s.ref.id: bool(b) for s, b in zip(slots, p, strict=True)})
        if all(row[c] == want[c] for c in columns):
            left.append(tuple(bool(b) for b in p))
    return left


def _sum_mask(dec: Decoder, slots: list[Slot], attr: str, shown_pct: str, fixed: float) -> np.ndarray:
    """Patterns whose mean of ``attr`` can round to the shown percentage (a necessary condition, 0.06 points)."""
    values = np.array([[getattr(dec.item(s, st), attr) for st in (False, True)] for s in slots], dtype=float)
    values = values.reshape(len(slots), 2)
    pats = _patterns(len(slots))
    total = fixed + np.where(pats, values[:, 1], values[:, 0]).sum(axis=1)
    if not shown_pct:
        return np.ones(len(pats), dtype=bool)
    return np.abs(100.0 * total / len(dec.refs) - float(shown_pct)) <= 0.06  # type: ignore[no-any-return]


def decode(
    dec: Decoder, want: Mapping[str, str], want_errors: Mapping[str, int], *, verify: int = 6, seed: int = 0
) -> dict[str, Any]:
    """Every hypothesis of the probe's secrets that shows ``want`` (board row) and ``want_errors`` (detail panel).

    Raises:
        RuntimeError: the design does not factor into channels (a column moved with another channel's slots).
    """
    from madqa.metric.kuiper import kuiper_statistic

    probe = dec.probe
    answers, docs, pages = probe.of("answer"), probe.of("doc"), probe.of("page")
    for s in (*docs, *pages):  # the factoring the method relies on, checked on this design
        a, b = dec.item(s, False), dec.item(s, True)
        if a.correct or b.correct or a.anls or b.anls:
            raise RuntimeError(f"{s.ref.id}: an evidence slot's answer scores")
        if (s.kind == "doc" and (a.page_f1 or b.page_f1)) or (s.kind == "page" and a.doc_f1 != b.doc_f1):
            raise RuntimeError(f"{s.ref.id}: a {s.kind} slot moves the other F1")
    others = [i for i in range(len(dec.base)) if dec.refs[i].id not in dec.at]
    fixed = {a: sum(getattr(dec.base[i], a) for i in others) for a in ("doc_f1", "page_f1")}
    fixed["doc_f1"] += sum(dec.item(s, False).doc_f1 for s in pages)
    # answer slots: the Kuiper statistic over the items with steps first (the board's one decimal, 0.06 slack)
    fixed_ids = {dec.refs[i].id for i in others} | {s.ref.id for s in (*docs, *pages)}  # outcome known: wrong
    effort = [it for it in dec.base if it.id in fixed_ids and it.steps is not None and it.score is not None]
    steps = [it.steps for it in effort] + [s.steps for s in answers]
    known = [int(bool(it.correct)) for it in effort]
    pats = _patterns(len(answers))
    stats = np.array(
        [
            kuiper_statistic(
                steps, known + [int(dec.item(s, bool(b)).correct) for s, b in zip(answers, p, strict=True)]
            )
            for p in pats
        ]
    )
    k_mask = np.abs(stats - float(want["Kuiper"] or 0.0)) <= 0.06 if want["Kuiper"] else np.ones(len(pats), bool)
    found = {
        "answer": _channel(dec, answers, ANSWER_COLUMNS, want, k_mask),
        "doc": _channel(dec, docs, ("Doc F1",), want, _sum_mask(dec, docs, "doc_f1", want["Doc F1"], fixed["doc_f1"])),
        "page": _channel(
            dec, pages, ("Page F1",), want, _sum_mask(dec, pages, "page_f1", want["Page F1"], fixed["page_f1"])
        ),
    }
    # the error counts join the channels: they add across them
    base_err = Counter(dec.base[i].error for i in others)
    target = tuple(want_errors.get(e, 0) - base_err[e] for e in ERRORS)
    by_err = {kind: Counter(_errors(dec, probe.of(kind), p) for p in found[kind]) for kind in found}
    joint = 0
    for ea, na in by_err["answer"].items():
        for ed, nd in by_err["doc"].items():
            rest = tuple(t - a - d for t, a, d in zip(target, ea, ed, strict=True))
            joint += na * nd * by_err["page"].get(rest, 0)
    feasible = {
        ed
        for ea in by_err["answer"]
        for ed in by_err["doc"]
        for ep in by_err["page"]
        if tuple(a + d + q for a, d, q in zip(ea, ed, ep, strict=True)) == target
    }
    docs_left = [p for p in found["doc"] if _errors(dec, docs, p) in feasible]
    truth = {s.ref.id: s.truth for s in probe.slots}
    truth_in = all(tuple(s.truth for s in probe.of(k)) in found[k] for k in found)
    # the factoring, checked in full on the truth and a sample of joint hypotheses
    rng, checked, failed = random.Random(seed), 0, 0
    tries = [truth] + [
        {s.ref.id: b for k in found for s, b in zip(probe.of(k), rng.choice(found[k]), strict=True)}
        for _ in range(verify * 4)
        if all(found.values())
    ]
    for states in tries:
        row, errs = dec.shown(states)
        if states is not truth and any(errs.get(e, 0) != want_errors.get(e, 0) for e in ERRORS):
            continue  # not a joint hypothesis (its error counts differ)
        checked += 1
        failed += int(row != dict(want) or any(errs.get(e, 0) != want_errors.get(e, 0) for e in ERRORS))
        if checked > verify:
            break
    k_all = len(probe.slots)

    def bits(k: int, left: int) -> float:
        return k - math.log2(left) if left else float("nan")

    return {
        "slots": {k: len(probe.of(k)) for k in found},
        "left": {k: len(v) for k, v in found.items()},
        "channel_bits": {k: bits(len(probe.of(k)), len(v)) for k, v in found.items()},
        "joint_left": joint,
        "bits": bits(k_all, joint),
        "truth_found": truth_in,
        "verified": checked,
        "verify_failures": failed,
        "known_docs": {
            s.ref.id: s.candidate for i, s in enumerate(docs) if docs_left and all(p[i] for p in docs_left)
        },
    }

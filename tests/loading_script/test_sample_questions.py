"""The sample's questions have the paper's properties: hop types and answer kinds, visual questions, extractive
answers grounded on their evidence pages, multi-hop evidence that all contributes, no leaked locations or copied
text. The sample is generated once per session (``sample_fixture.py``)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import helpers.sample_fixture as sample_fixture
from helpers.sample_fixture import Sample, contains_run, tokens

from madqa.loading_script.features import hop_type, is_yes_no

#: The shared ``sample`` fixture, made visible to pytest in this module.
generated_sample = sample_fixture.generated_sample


# --- question properties ----------------------------------------------------------------------------------


def test_hop_types_and_answer_kinds(sample: Sample) -> None:
    questions = sample.questions
    n = len(questions)
    hops = Counter(hop_type(q["evidence"]) for q in questions)
    assert n >= 150
    assert 0.05 <= hops["cross_page"] / n <= 0.12, hops
    assert 0.06 <= hops["cross_doc"] / n <= 0.13, hops
    yes_no = [q for q in questions if is_yes_no(q["answer_variants"])]
    assert 0.05 <= len(yes_no) / n <= 0.15
    assert {q["answer_variants"][0][0] for q in yes_no} == {"Yes", "No"}
    assert sum(len(q["answer_variants"][0]) > 1 for q in questions) >= 10
    unit = re.compile(r"^\$[\d,.]+$|\d\s*(%|minutes|hours|miles|million gallons|pts|days|F)\b")
    assert sum(bool(unit.search(q["answer_variants"][0][0])) for q in questions) >= 40
    assert sum(len(q["answer_variants"]) > 1 for q in questions) >= n // 2, "realistic alternative forms"


def test_visual_questions(sample: Sample) -> None:
    def on(layout: str) -> list[dict[str, Any]]:
        return [
            q
            for q in sample.questions
            if any(layout in sample.layouts(e["document"], e["page"]) for e in q["evidence"])
        ]

    assert len(on("table")) >= 25
    assert len(on("form")) >= 25
    assert len(on("scanned")) >= 12
    checkbox_yes_no = [q for q in on("checkbox") if is_yes_no(q["answer_variants"])]
    assert len(checkbox_yes_no) >= 8


def test_answers_are_extractive(sample: Sample) -> None:
    failures = []
    for q in sample.questions:
        if is_yes_no(q["answer_variants"]):
            continue
        available = sample.evidence_tokens(q)
        if not any(set(tokens(" ".join(variant))) <= available for variant in q["answer_variants"]):
            failures.append((q["id"], q["answer_variants"][0]))
    assert not failures


def test_scanned_evidence_answers_are_ocr_probes(sample: Sample) -> None:
    """An answer found only on a scanned page must be one of that page's OCR probes."""
    for q in sample.questions:
        if is_yes_no(q["answer_variants"]):
            continue
        scanned = [(e["document"], e["page"]) for e in q["evidence"] if sample.scanned(e["document"], e["page"])]
        if not scanned:
            continue
        text_tokens = {
            t
            for e in q["evidence"]
            if not sample.scanned(e["document"], e["page"])
            for t in tokens(sample.texts[(e["document"], e["page"])])
        }
        probe_tokens = {t for key in scanned for probe in sample.probes(*key) for t in tokens(probe)}
        assert any(set(tokens(" ".join(v))) <= text_tokens | probe_tokens for v in q["answer_variants"]), q["id"]


def test_answer_values_are_not_repeated_elsewhere_in_the_document(sample: Sample) -> None:
    """Grounded/minimal: a single-page answer value (with digits) appears only on its evidence page."""
    pages_of: dict[str, list[int]] = {}
    for doc, page in sample.texts:
        pages_of.setdefault(doc, []).append(page)
    failures = []
    for q in sample.questions:
        if hop_type(q["evidence"]) != "single" or is_yes_no(q["answer_variants"]):
            continue
        doc, page = q["evidence"][0]["document"], q["evidence"][0]["page"]
        for value in q["answer_variants"][0]:
            if not any(ch.isdigit() for ch in value):
                continue
            needle = tokens(value)
            # a value printed apart from its unit (a table cell under a "million gallons" caption) is matched
            # by its numeric core, from its first to its last token holding a digit
            numeric = [i for i, t in enumerate(needle) if any(ch.isdigit() for ch in t)]
            core = needle[numeric[0] : numeric[-1] + 1]
            if not sample.scanned(doc, page):
                evidence_words = tokens(sample.texts[(doc, page)])
                assert contains_run(evidence_words, core), (q["id"], value)
                if not contains_run(evidence_words, needle):
                    needle = core
            for other in pages_of[doc]:
                if other != page and contains_run(tokens(sample.texts[(doc, other)]), needle):
                    failures.append((q["id"], value, other))
    assert not failures


def test_multi_hop_evidence_pages_all_contribute(sample: Sample) -> None:
    """Every page of a multi-hop evidence set shares a content token with the question or the answer."""
    stop = {
        "the",
        "a",
        "an",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "what",
        "which",
        "who",
        "how",
        "did",
        "does",
        "is",
        "was",
        "were",
        "its",
        "their",
        "her",
        "his",
        "it",
        "that",
        "with",
        "from",
    }
    for q in sample.questions:
        if hop_type(q["evidence"]) == "single":
            continue
        wanted = {t for t in tokens(q["question"] + " " + " ".join(q["answer_variants"][0])) if t not in stop}
        for e in q["evidence"]:
            key = (e["document"], e["page"])
            page_tokens = (
                {t for p in sample.probes(*key) for t in tokens(p)}
                if sample.scanned(*key)
                else set(tokens(sample.texts[key]))
            )
            assert wanted & page_tokens, (q["id"], key)


def test_questions_do_not_leak_locations_or_copy_text(sample: Sample) -> None:
    for q in sample.questions:
        text = q["question"]
        assert ".pdf" not in text.lower(), q["id"]
        assert not re.search(r"\bpages?\s+\d+", text, re.IGNORECASE), q["id"]
        assert "_" not in text, q["id"]
        words = tokens(text)
        grams = {tuple(words[i : i + 6]) for i in range(len(words) - 5)}
        for e in q["evidence"]:
            key = (e["document"], e["page"])
            if sample.scanned(*key):
                continue
            page_words = tokens(sample.texts[key])
            page_grams = {tuple(page_words[i : i + 6]) for i in range(len(page_words) - 5)}
            assert not grams & page_grams, (q["id"], sorted(grams & page_grams))

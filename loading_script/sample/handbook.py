"""Cluster: the long document, a 100+ page employee handbook of Brightline Freight, Inc.

Pages are cheap running text: a section heading, at most one policy statement carrying an answer value,
then digit-free filler. One page holds a ruled vacation-accrual table.
"""

from __future__ import annotations

import random

from madqa.loading_script.sample.layout import DocBuilder, PageWriter
from madqa.loading_script.sample.model import Cluster
from madqa.loading_script.sample.records import ask_questions, load_table
from madqa.loading_script.sample.text import paragraph

FILE = "brightline_freight_employee_handbook_2023.pdf"
COMPANY = "Brightline Freight, Inc."
# The handbook's content: the vacation-accrual table, chapters as (chapter, [(section, pages, {page offset: fact
# key})]) and the policy statements by fact key.
_CONTENT = load_table("handbook")
ACCRUAL: tuple[tuple[str, str, str], ...] = tuple(tuple(row) for row in _CONTENT["accrual"])
_CHAPTERS: tuple[tuple[str, tuple[tuple[str, int, dict[int, str]], ...]], ...] = tuple(
    (
        chapter,
        tuple(
            (section, pages, {int(offset): key for offset, key in facts.items()}) for section, pages, facts in sections
        ),
    )
    for chapter, sections in _CONTENT["chapters"]
)
_FACTS: dict[str, str] = _CONTENT["facts"]


def _accrual_table(page: PageWriter) -> None:
    page.paragraph(
        "Full-time employees accrue vacation each pay period according to their years of continuous "
        "service, as shown below."
    )
    page.table(
        ["Years of service", "Accrual per year", "Maximum balance"],
        [list(r) for r in ACCRUAL],
        [200, 150, 154],
        size=10.5,
    )


def _handbook(rng: random.Random) -> tuple[DocBuilder, dict[str, int]]:
    doc = DocBuilder(
        FILE,
        "Employee handbook",
        "Commercial",
        title="Brightline Freight Employee Handbook",
        author=COMPANY,
        rng=rng,
        created="D:20221215120000Z",
    )
    fact_pages: dict[str, int] = {}
    page = doc.page()
    page.space(160)
    page.title(COMPANY, "Employee Handbook - effective January 1, 2023", size=26, center=True)
    page.paragraph(
        "This handbook summarizes the policies, benefits and expectations that apply to every "
        "Brightline employee. It does not create a contract of employment.",
        size=11,
    )
    toc = doc.page()
    toc.title("Contents")
    toc.bullets([f"Chapter {number}. {chapter}" for number, (chapter, _) in enumerate(_CHAPTERS, start=1)], size=11.5)
    toc.paragraph(paragraph(rng, "workplace", (3, 4)))
    for number, (chapter, sections) in enumerate(_CHAPTERS, start=1):
        for index, (section, pages, facts) in enumerate(sections, start=1):
            for offset in range(pages):
                page = doc.page()
                if offset == 0 and index == 1:
                    page.title(f"Chapter {number}. {chapter}")
                page.heading(f"{number}.{index} {section}" + (" (continued)" if offset else ""))
                key = facts.get(offset)
                if key == "accrual_table":
                    _accrual_table(page)
                elif key:
                    page.paragraph(_FACTS[key])
                if key:
                    fact_pages[key] = doc.page_number
                page.fill(lambda: paragraph(rng, "workplace", (4, 6)))
    page = doc.page()
    page.title("Employee Acknowledgment")
    page.paragraph(
        "I acknowledge that I have received the Brightline Freight Employee Handbook and that I am "
        "responsible for reading it and following the policies it describes."
    )
    page.fields([("Employee name", ""), ("Employee ID", ""), ("Signature", ""), ("Date", "")], per_row=2)
    page.checkboxes("", ("I would like a printed copy of this handbook",), [])
    return doc, fact_pages


def build(seed: int) -> Cluster:
    """Build the handbook and its questions."""
    rng = random.Random(f"{seed}-handbook")
    doc, at = _handbook(rng)
    if at != fact_pages():
        raise RuntimeError("handbook fact pages disagree with the planned layout")
    cluster = Cluster(documents=[doc.build()])
    ask_questions(cluster, "handbook", lambda key: (FILE, at[key]))
    return cluster


def fact_pages() -> dict[str, int]:
    """1-based page of each policy statement (the layout does not depend on the seed)."""
    pages: dict[str, int] = {}
    number = 2  # cover and contents
    for _, sections in _CHAPTERS:
        for _, count, facts in sections:
            for offset, key in facts.items():
                pages[key] = number + 1 + offset
            number += count
    return pages


def accident_page() -> tuple[str, int]:
    """Evidence page of the accident-reporting rule (for questions asked from other clusters)."""
    return (FILE, fact_pages()["accident"])

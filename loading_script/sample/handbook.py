"""Cluster: the long document, a 100+ page employee handbook of Brightline Freight, Inc.

Pages are cheap running text: a section heading, at most one policy statement carrying an answer value,
then digit-free filler. One page holds a ruled vacation-accrual table.
"""

from __future__ import annotations

import random

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample.layout import DocBuilder, PageWriter
from madqa.loading_script.sample.model import Cluster
from madqa.loading_script.sample.text import paragraph

FILE = "brightline_freight_employee_handbook_2023.pdf"
COMPANY = "Brightline Freight, Inc."
ACCRUAL = (
    ("Less than 1 year", "40 hours", "60 hours"),
    ("1 to 2 years", "64 hours", "96 hours"),
    ("3 to 5 years", "96 hours", "144 hours"),
    ("6 to 10 years", "128 hours", "192 hours"),
    ("More than 10 years", "160 hours", "240 hours"),
)
HOLIDAYS = ("New Year's Day", "Memorial Day", "Independence Day", "Labor Day", "Thanksgiving Day", "Christmas Day")

# (chapter, [(section, pages, {page offset: fact key})]); fact texts are in _FACTS.
_CHAPTERS: tuple[tuple[str, tuple[tuple[str, int, dict[int, str]], ...]], ...] = (
    (
        "Welcome to Brightline",
        (
            ("Our history", 2, {}),
            ("Mission and values", 2, {}),
            ("Organization", 2, {}),
            ("How to use this handbook", 2, {}),
        ),
    ),
    (
        "Employment Basics",
        (
            ("Equal employment opportunity", 2, {}),
            ("Introductory period", 2, {0: "probation"}),
            ("Employment categories", 2, {1: "full_time"}),
            ("Personnel records", 2, {}),
            ("Outside employment", 2, {}),
        ),
    ),
    (
        "Hours, Pay and Overtime",
        (
            ("Workweek and schedules", 2, {}),
            ("Timekeeping", 2, {0: "timekeeping"}),
            ("Paydays", 2, {0: "payday"}),
            ("Overtime", 2, {1: "overtime"}),
            ("Meal and rest periods", 2, {}),
        ),
    ),
    (
        "Benefits",
        (
            ("Health insurance", 2, {0: "health_start"}),
            ("Retirement savings plan", 2, {1: "match"}),
            ("Tuition assistance", 2, {0: "tuition"}),
            ("Employee assistance program", 2, {}),
            ("Life and disability insurance", 3, {}),
        ),
    ),
    (
        "Time Off",
        (
            ("Paid holidays", 2, {0: "holidays"}),
            ("Vacation accrual", 2, {0: "accrual_table"}),
            ("Vacation carryover", 2, {1: "carryover"}),
            ("Sick leave", 2, {0: "sick_cashout"}),
            ("Bereavement leave", 1, {0: "bereavement"}),
            ("Jury duty", 2, {0: "jury"}),
        ),
    ),
    (
        "Workplace Conduct",
        (
            ("Standards of conduct", 3, {}),
            ("Harassment prevention", 2, {1: "hotline"}),
            ("Conflicts of interest", 2, {}),
            ("Dress and appearance", 2, {}),
            ("Workplace violence", 2, {}),
            ("Progressive discipline", 2, {}),
        ),
    ),
    (
        "Safety and Driver Policies",
        (
            ("General safety", 2, {}),
            ("Hours of service", 2, {0: "driving_limit"}),
            ("Rest breaks for drivers", 2, {1: "break"}),
            ("Accident reporting", 2, {0: "accident"}),
            ("Vehicle inspections", 2, {}),
            ("Drug and alcohol testing", 3, {}),
        ),
    ),
    (
        "Technology and Information Security",
        (
            ("Acceptable use", 2, {}),
            ("Passwords", 2, {0: "password"}),
            ("Mobile devices", 2, {}),
            ("Social media", 2, {}),
        ),
    ),
    (
        "Travel and Expenses",
        (
            ("Business travel", 2, {}),
            ("Mileage reimbursement", 2, {0: "mileage"}),
            ("Meals and per diem", 2, {1: "per_diem"}),
            ("Expense reports", 2, {0: "expense_form"}),
            ("Submission deadlines", 2, {1: "expense_deadline"}),
            ("Corporate cards", 2, {}),
        ),
    ),
    (
        "Leaving Brightline",
        (
            ("Resignation", 2, {0: "notice"}),
            ("Final pay", 2, {}),
            ("Exit interviews", 2, {}),
            ("Return of company property", 2, {}),
            ("References", 1, {}),
            ("Rehire eligibility", 2, {}),
        ),
    ),
)

_FACTS = {
    "probation": "New employees serve an introductory period of 90 calendar days, during which their supervisor "
    "gives regular feedback.",
    "full_time": "Employees regularly scheduled for 30 or more hours per week are classified as full-time.",
    "timekeeping": "Hourly employees record their time in the TimeTrack system at the start and end of each shift.",
    "payday": "Employees are paid every other Friday by direct deposit.",
    "overtime": "Non-exempt employees earn one and one-half times their regular rate for hours over forty in a "
    "workweek.",
    "health_start": "Medical coverage begins on the first day of the month following 60 days of employment.",
    "match": "Brightline matches employee contributions dollar for dollar up to 4 percent of eligible pay.",
    "tuition": "Approved coursework is reimbursed up to $5,250 per calendar year.",
    "holidays": "Brightline observes the following paid holidays: " + ", ".join(HOLIDAYS) + ".",
    "carryover": "Employees may carry over up to 40 hours of unused vacation into the next calendar year; any "
    "balance above that is forfeited on January 1.",
    "sick_cashout": "Unused sick leave is not paid out when employment ends.",
    "bereavement": "Employees receive three paid days of bereavement leave after the death of an immediate family "
    "member.",
    "jury": "Brightline continues regular pay for up to ten working days of jury service each year.",
    "hotline": "Concerns may be reported anonymously to the ethics hotline at 1-800-555-0142.",
    "driving_limit": "Drivers may not drive more than 11 hours in a single duty period.",
    "break": "Drivers must take a 30-minute break after 8 cumulative hours of driving.",
    "accident": "Drivers must report any accident involving a company vehicle to dispatch within 24 hours.",
    "password": "Network passwords must be changed every 120 days.",
    "mileage": "Use of a personal vehicle for company business is reimbursed at $0.585 per mile.",
    "per_diem": "Overnight travelers receive a meal per diem of $59 per day.",
    "expense_form": "Travel costs are claimed on Form EXP-7, signed by the employee's manager.",
    "expense_deadline": "Expense reports must reach the accounting department within 45 days of the expense.",
    "notice": "Employees who resign are asked to give at least two weeks of written notice.",
}


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
    ask = cluster.ask

    def where(*keys: str) -> list[tuple[str, int]]:
        return [(FILE, at[key]) for key in keys]

    ask(
        "How long is the introductory period for new hires at Brightline Freight?",
        A.text_variants("90 calendar days", "90 days", "ninety days"),
        *where("probation"),
    )
    ask(
        "How many weekly hours must a Brightline employee be scheduled for to count as full-time?",
        A.text_variants("30 or more hours per week", "30 hours", "30"),
        *where("full_time"),
    )
    ask(
        "Up to what share of eligible pay does Brightline match retirement contributions?",
        A.text_variants("4 percent", "4%"),
        *where("match"),
    )
    ask("What is the yearly cap on Brightline's tuition reimbursement?", A.money_variants(5250), *where("tuition"))
    ask(
        "How much vacation does a Brightline employee with four years of service accrue per year?",
        A.quantity_variants("96", "hours"),
        *where("accrual_table"),
    )
    ask("Which paid holidays does the freight company observe?", A.list_variants(list(HOLIDAYS)), *where("holidays"))
    ask(
        "How many days of paid leave does Brightline give after the death of a close relative?",
        A.text_variants("three paid days", "three days", "3 days"),
        *where("bereavement"),
    )
    ask("Does Brightline keep paying employees who are called for jury service?", A.yes_no(True), *where("jury"))
    ask("Will a departing Brightline employee be paid for unused sick leave?", A.yes_no(False), *where("sick_cashout"))
    ask(
        "What is the longest a Brightline driver may drive in one duty period?",
        A.quantity_variants("11", "hours"),
        *where("driving_limit"),
    )
    ask(
        "How often must Brightline employees change their network passwords?",
        A.text_variants("every 120 days", "120 days"),
        *where("password"),
    )
    ask(
        "How much notice should a Brightline employee give when resigning?",
        A.text_variants("two weeks", "2 weeks", "two weeks of written notice"),
        *where("notice"),
    )
    # cross-page
    ask(
        "For an employee with seven years at Brightline, how much vacation accrues each year and how much unused "
        "vacation can roll into the next year?",
        A.list_variants(["128 hours", "40 hours"]),
        *where("accrual_table", "carryover"),
    )
    ask(
        "On which form do Brightline employees claim travel costs, and how long do they have to submit it?",
        A.list_variants(["Form EXP-7", "45 days"], ["EXP-7", "45 days"]),
        *where("expense_form", "expense_deadline"),
    )
    ask(
        "How many hours may a Brightline driver drive per duty period, and how long a break is due after 8 hours "
        "behind the wheel?",
        A.list_variants(["11 hours", "30-minute break"], ["11 hours", "30 minutes"]),
        *where("driving_limit", "break"),
    )
    ask(
        "What daily meal allowance and what mileage rate apply to Brightline employees traveling on business?",
        A.list_variants(["$59 per day", "$0.585 per mile"], ["$59", "$0.585"]),
        *where("per_diem", "mileage"),
    )
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

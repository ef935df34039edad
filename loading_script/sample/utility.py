"""Cluster: four yearly annual reports of the Riverton Water Utility (2019-2022)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample.layout import DocBuilder
from madqa.loading_script.sample.model import Cluster
from madqa.loading_script.sample.text import paragraph

YEARS = (2019, 2020, 2021, 2022)
PLANTS = ("North Plant", "Cedar Creek Plant", "Lakeview Wellfield")
QUARTERS = ("Q1", "Q2", "Q3", "Q4")
_QUARTER_WORDS = {
    "Q1": "January through March",
    "Q2": "April through June",
    "Q3": "July through September",
    "Q4": "October through December",
}
_GM = {2019: "Helen Okafor", 2020: "Helen Okafor", 2021: "Marcus Delgado", 2022: "Marcus Delgado"}
_MANAGERS = {
    2019: ("Gloria Baptiste", "Samuel Idowu", "Kenji Watanabe"),
    2020: ("Gloria Baptiste", "Samuel Idowu", "Kenji Watanabe"),
    2021: ("Gloria Baptiste", "Renee Castillo", "Kenji Watanabe"),
    2022: ("Aaron Feldman", "Renee Castillo", "Kenji Watanabe"),
}
_CHAIRS = {2019: "Walter Nguyen", 2020: "Walter Nguyen", 2021: "Francine Obi", 2022: "Francine Obi"}
_BOARD = ("Patrick Lowell", "Sunita Rao", "Evelyn Marsh", "Jorge Almeida")
_EMPLOYEES = {2019: 181, 2020: 184, 2021: 186, 2022: 191}
_CONNECTIONS = {2019: "40,812", 2020: "41,260", 2021: "41,937", 2022: "42,505"}
_MAIN_MILES = {2019: "4.2", 2020: "5.6", 2021: "6.8", 2022: "3.9"}
_DEMAND = {2019: "13.8", 2020: "14.1", 2021: "14.6", 2022: "14.3"}
_LEAD_LINES = {2019: 96, 2020: 131, 2021: 214, 2022: 388}
_SAMPLES = {2019: "3,116", 2020: "3,240", 2021: "3,412", 2022: "3,508"}
_BREAKS = {2019: 57, 2020: 49, 2021: 62, 2022: 44}
_BASE_RATE = {2019: 17.85, 2020: 18.40, 2021: 19.10, 2022: 19.75}
_VOLUME_RATE = {2019: 3.92, 2020: 4.05, 2021: 4.21, 2022: 4.38}
_PROJECTS = {
    2019: (
        ("Elm Avenue water main replacement", 2146000, "October"),
        ("North Plant filter media replacement", 687500, "May"),
        ("Hillcrest pump station standby generator", 412900, "August"),
    ),
    2020: (
        ("Cedar Creek intake screen upgrade", 1329000, "September"),
        ("Lakeview Well 4 rehabilitation", 538200, "June"),
        ("Automated meter reading, phase one", 2874000, "December"),
    ),
    2021: (
        ("Riverside Drive main relocation", 3118400, "November"),
        ("Automated meter reading, phase two", 2460000, "October"),
        ("North Plant chlorine contact basin", 1755300, "July"),
    ),
    2022: (
        ("Cedar Creek residuals drying beds", 964700, "April"),
        ("Oak Street storage tank recoating", 1212800, "September"),
        ("Lead service line replacement program", 2980000, "December"),
    ),
}
_FIN_ROWS = (
    ("Water sales", 23.4e6),
    ("Connection and permit fees", 1.9e6),
    ("Grants and other income", 0.8e6),
    ("Operations and treatment", 11.6e6),
    ("Maintenance and repairs", 4.3e6),
    ("Debt service", 3.5e6),
    ("Capital outlay", 5.2e6),
)
_PLAN_YEARS = ("2023", "2024", "2025", "2026", "2027")
# The report's pages in print order (the plan page only in 2022); the questions cite them by name.
_LETTER, _GLANCE, _PRODUCTION, _FINANCE, _CAPITAL, _LEADERSHIP, _PLAN = range(1, 8)
# Columns of a finance row.
_BUDGET, _ACTUAL = 0, 1
#: Page of every report that lists the board and the facility managers.
LEADERSHIP_PAGE = _LEADERSHIP


@dataclass
class _Year:
    """Numbers drawn for one report."""

    production: dict[str, dict[str, float]]
    finance: dict[str, tuple[int, int]]  # label -> (budget, actual)
    plan: dict[str, tuple[int, ...]]


def facility_manager(year: int, plant: str) -> str:
    """Manager of ``plant`` as listed in the ``year`` report."""
    return _MANAGERS[year][PLANTS.index(plant)]


def report_file(year: int) -> str:
    """File name of the ``year`` report."""
    return f"riverton_water_annual_report_{year}.pdf"


def _draw(rng: random.Random) -> dict[int, _Year]:
    years: dict[int, _Year] = {}
    for year in YEARS:
        production = {}
        for plant, (low, high) in zip(PLANTS, ((610, 760), (600, 745), (205, 285)), strict=True):
            production[plant] = {q: round(rng.uniform(low, high), 1) for q in QUARTERS}
        finance = {}
        for label, scale in _FIN_ROWS:
            budget = round(scale * (1 + 0.04 * (year - 2019)) * rng.uniform(0.97, 1.03), -2)
            finance[label] = (int(budget), int(round(budget * rng.uniform(0.93, 1.06), -2)))
        plan = {name: tuple(rng.randrange(150, 2400) * 1000 for _ in _PLAN_YEARS) for name, _, _ in _PROJECTS[2022]}
        years[year] = _Year(production, finance, plan)
    return years


def _mg(value: float) -> str:
    return f"{value:,.1f}"


def _report(year: int, data: _Year, rng: random.Random) -> DocBuilder:
    title = f"Riverton Water Utility {year} Annual Report"
    doc = DocBuilder(
        report_file(year),
        "Annual Report",
        "Financial",
        title=title,
        author="Riverton Water Utility",
        rng=rng,
        created=f"D:{year + 1}0415090000Z",
    )
    # 1: letter from the general manager
    page = doc.page()
    page.title("Riverton Water Utility", f"Annual Report {year} - Safe, reliable water for the Riverton valley")
    page.heading("Message from the General Manager")
    page.paragraph(
        f"To our customers and community partners: this report describes what our staff of "
        f"{_EMPLOYEES[year]} employees accomplished over the past year. " + paragraph(rng, "utility", (2, 3))
    )
    for _ in range(3):
        page.paragraph(paragraph(rng, "utility"))
    page.signature("General Manager", _GM[year])
    # 2: highlights in two columns
    page = doc.page()
    page.title(f"{year} at a Glance")
    left = (
        f"SERVICE AND INFRASTRUCTURE\n\nActive service connections: {_CONNECTIONS[year]}\n"
        f"Average daily demand: {_DEMAND[year]} million gallons per day\n"
        f"Water main replaced: {_MAIN_MILES[year]} miles\nMain breaks repaired: {_BREAKS[year]}\n\n"
        + paragraph(rng, "utility", (3, 4))
    )
    right = (
        f"WATER QUALITY\n\nLaboratory samples analyzed: {_SAMPLES[year]}\n"
        f"Lead service lines replaced: {_LEAD_LINES[year]}\n\n" + paragraph(rng, "utility", (4, 5))
    )
    page.columns(left, right)
    page.paragraph(paragraph(rng, "utility", (3, 4)))
    # 3: production table
    page = doc.page()
    page.title(f"Water Production by Facility, {year}", "All figures in million gallons (MG)")
    page.paragraph(paragraph(rng, "utility", (2, 3)))
    rows = [
        [plant, *[_mg(data.production[plant][q]) for q in QUARTERS], _mg(sum(data.production[plant].values()))]
        for plant in PLANTS
    ]
    rows.append(
        [
            "Total",
            *[_mg(sum(data.production[p][q] for p in PLANTS)) for q in QUARTERS],
            _mg(sum(sum(data.production[p].values()) for p in PLANTS)),
        ]
    )
    page.table(["Facility", *QUARTERS, "Year"], rows, [150, 68, 68, 68, 68, 82])
    page.paragraph(paragraph(rng, "utility", (3, 4)))
    # 4: finance table
    page = doc.page()
    page.title(f"Statement of Revenues and Expenses, Fiscal Year {year}", "Unaudited summary, in U.S. dollars")
    fin_rows = []
    for label, _ in _FIN_ROWS:
        budget, actual = data.finance[label]
        variance = actual - budget
        shown = f"{variance:,}" if variance >= 0 else f"({-variance:,})"
        fin_rows.append([label, f"{budget:,}", f"{actual:,}", shown])
    page.table(["Line item", "Budget", "Actual", "Variance"], fin_rows, [204, 100, 100, 100])
    page.paragraph("Figures in parentheses indicate actual amounts below budget. " + paragraph(rng, "utility", (2, 3)))
    # 5: capital projects and rates
    page = doc.page()
    page.title("Capital Improvement Program")
    for name, cost, month in _PROJECTS[year]:
        page.heading(name, size=11)
        page.paragraph(
            paragraph(rng, "utility", (2, 3)) + f" Work was finished in {month} {year} at a total "
            f"cost of {A.money(cost)}."
        )
    page.heading("Rates")
    page.paragraph(
        f"Throughout {year}, residential customers paid a monthly base charge of "
        f"{A.money(_BASE_RATE[year], True)} for a standard meter, plus "
        f"{A.money(_VOLUME_RATE[year], True)} for every thousand gallons used."
    )
    # 6: leadership in two columns
    page = doc.page()
    page.title("Leadership")
    board = "\n".join([f"{_CHAIRS[year]}, Chair", *[f"{name}, Director" for name in _BOARD]])
    managers = "\n".join(f"{plant}: {name}" for plant, name in zip(PLANTS, _MANAGERS[year], strict=True))
    page.columns(
        f"BOARD OF DIRECTORS\n\n{board}\n\n" + paragraph(rng, "utility", (2, 3)),
        f"FACILITY MANAGERS\n\n{managers}\n\n" + paragraph(rng, "utility", (2, 3)),
    )
    if year == 2022:
        page = doc.page()
        page.title("Five-Year Capital Plan", "Planned spending by project and year, in U.S. dollars")
        plan_rows = [[name, *[f"{v:,}" for v in data.plan[name]]] for name, _, _ in _PROJECTS[2022]]
        page.table(["Project", *_PLAN_YEARS], plan_rows, [174, 66, 66, 66, 66, 66], size=9)
        page.paragraph(paragraph(rng, "utility", (3, 4)))
    return doc


def build(seed: int) -> Cluster:
    """Build the four reports and their questions."""
    rng = random.Random(f"{seed}-utility")
    data = _draw(rng)
    cluster = Cluster()
    docs = {year: _report(year, data[year], rng) for year in YEARS}
    name = {year: docs[year].name for year in YEARS}
    cluster.documents.extend(doc.build() for doc in docs.values())
    ask = cluster.ask

    # Each figure is printed on one page of the year's report: the helpers cite that page.
    def production(question: str, year: int, plant: str, quarter: str) -> None:
        value = _mg(data[year].production[plant][quarter])
        ask(question, A.quantity_variants(value, "million gallons", "MG"), (name[year], _PRODUCTION))

    def finance(question: str, year: int, label: str, column: int) -> None:
        """``column`` is _BUDGET or _ACTUAL."""
        ask(question, A.money_variants(data[year].finance[label][column]), (name[year], _FINANCE))

    def project_cost(question: str, year: int, project: str) -> None:
        cost = next(total for title, total, _ in _PROJECTS[year] if title == project)
        ask(question, A.money_variants(cost), (name[year], _CAPITAL))

    # 2019
    ask(
        "Who signed the general manager's letter in the Riverton water utility's report for 2019?",
        A.person_variants(_GM[2019]),
        (name[2019], _LETTER),
    )
    ask(
        "How many active customer connections did Riverton's water provider count in 2019?",
        A.count_variants(_CONNECTIONS[2019]),
        (name[2019], _GLANCE),
    )
    production(
        "How much water did Riverton's North Plant produce from January through March 2019?", 2019, "North Plant", "Q1"
    )
    finance(
        "What did the water utility actually collect from water sales in fiscal 2019?", 2019, "Water sales", _ACTUAL
    )
    project_cost(
        "What was the final cost of the standby generator installed at the Hillcrest pump station?",
        2019,
        "Hillcrest pump station standby generator",
    )
    ask(
        "In 2019, what fixed monthly amount did a Riverton household pay for water service before usage?",
        A.money_variants(_BASE_RATE[2019], True),
        (name[2019], _CAPITAL),
    )
    ask(
        "Who was chair of the water utility's board in 2019?",
        A.text_variants(_CHAIRS[2019]),
        (name[2019], _LEADERSHIP),
    )
    # 2020
    ask(
        "According to the general manager, how many people worked for the Riverton water utility in 2020?",
        A.quantity_variants(str(_EMPLOYEES[2020]), "employees", "staff"),
        (name[2020], _LETTER),
    )
    ask(
        "How many miles of water main did Riverton's utility replace during 2020?",
        A.quantity_variants(_MAIN_MILES[2020], "miles"),
        (name[2020], _GLANCE),
    )
    production(
        "How much water came from the Cedar Creek facility between July and September 2020?",
        2020,
        "Cedar Creek Plant",
        "Q3",
    )
    finance(
        "What did the Riverton water utility actually pay for debt service in its 2020 fiscal year?",
        2020,
        "Debt service",
        _ACTUAL,
    )
    project_cost(
        "What did the first phase of the automated meter reading project cost?",
        2020,
        "Automated meter reading, phase one",
    )
    ask(
        "What usage charge per thousand gallons applied to Riverton residential water customers in 2020?",
        A.money_variants(_VOLUME_RATE[2020], True),
        (name[2020], _CAPITAL),
    )
    # 2021
    ask(
        "Who led the Riverton water utility as general manager in 2021?",
        A.person_variants(_GM[2021]),
        (name[2021], _LETTER),
    )
    ask(
        "How many lab samples did the water utility analyze in 2021?",
        A.count_variants(_SAMPLES[2021], "samples"),
        (name[2021], _GLANCE),
    )
    production(
        "What was the Lakeview Wellfield's output in the final quarter of 2021?", 2021, "Lakeview Wellfield", "Q4"
    )
    finance(
        "How much had the water utility budgeted for maintenance and repairs in fiscal 2021?",
        2021,
        "Maintenance and repairs",
        _BUDGET,
    )
    project_cost(
        "What did relocating the water main along Riverside Drive cost?", 2021, "Riverside Drive main relocation"
    )
    ask(
        "Who managed the Cedar Creek facility according to the utility's 2021 report?",
        A.person_variants(facility_manager(2021, "Cedar Creek Plant")),
        (name[2021], _LEADERSHIP),
    )
    # 2022
    ask(
        "What was Riverton's average daily water demand in 2022?",
        A.quantity_variants(_DEMAND[2022], "million gallons per day", "MGD"),
        (name[2022], _GLANCE),
    )
    ask(
        "How many lead service lines were replaced by the Riverton utility in 2022?",
        A.count_variants(str(_LEAD_LINES[2022]), "lead service lines"),
        (name[2022], _GLANCE),
    )
    production("How much water did the North Plant deliver in the second quarter of 2022?", 2022, "North Plant", "Q2")
    finance(
        "What were the water utility's actual operations and treatment costs in fiscal 2022?",
        2022,
        "Operations and treatment",
        _ACTUAL,
    )
    project_cost("How much did recoating the Oak Street storage tank cost?", 2022, "Oak Street storage tank recoating")
    ask(
        "How much does the Riverton utility plan to spend on replacing lead service lines in 2025?",
        A.money_variants(data[2022].plan["Lead service line replacement program"][2]),
        (name[2022], _PLAN),
    )
    # cross-page: busiest facility in a quarter (table) -> its manager (leadership page)
    for year, quarter in ((2019, "Q3"), (2021, "Q2"), (2022, "Q4")):
        top = max(PLANTS, key=lambda p, y=year, q=quarter: data[y].production[p][q])
        ask(
            f"Who managed the Riverton facility that produced the most water from "
            f"{_QUARTER_WORDS[quarter].replace(' through ', ' to ')} {year}?",
            A.person_variants(facility_manager(year, top)),
            (name[year], _PRODUCTION),
            (name[year], _LEADERSHIP),
        )
    # cross-document
    most = max(YEARS, key=lambda y: float(_MAIN_MILES[y]))
    ask(
        "Between 2019 and 2022, in which year did the Riverton water utility replace the most miles of main?",
        A.text_variants(str(most)),
        *[(name[y], _GLANCE) for y in YEARS],
    )
    rose = (
        data[2021].finance["Maintenance and repairs"][_ACTUAL] > data[2020].finance["Maintenance and repairs"][_ACTUAL]
    )
    ask(
        "Did the water utility's actual maintenance and repair spending go up from fiscal 2020 to fiscal 2021?",
        A.yes_no(rose),
        (name[2020], _FINANCE),
        (name[2021], _FINANCE),
    )
    ask(
        "Who signed the general manager's message in the earliest and in the latest of the Riverton water "
        "utility's annual reports?",
        A.list_variants([_GM[2019], _GM[2022]], [_GM[2019].split()[-1], _GM[2022].split()[-1]]),
        (name[2019], _LETTER),
        (name[2022], _LETTER),
    )
    return cluster

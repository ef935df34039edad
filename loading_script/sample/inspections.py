"""Cluster: county food-safety inspection reports of the Harbor Street restaurants.

Compliance is recorded with drawn ticks in an IN/OUT/N.O. grid, so which items failed is visible only in
the page image. One report is a scan. Questions bridge to the menus (identify the restaurant by a dish).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import menus
from madqa.loading_script.sample.layout import DocBuilder
from madqa.loading_script.sample.model import Cluster, render_cluster
from madqa.loading_script.sample.records import load_records
from madqa.loading_script.sample.text import paragraph

ITEMS = (
    "Food handler certification on file",
    "Handwashing sinks stocked and accessible",
    "Cold holding at 41 F or below",
    "Hot holding at 135 F or above",
    "Sanitizer concentration",
    "Date marking of prepared foods",
    "Pest control",
    "Restroom supplies and cleanliness",
)
PURPOSES = ("Routine", "Follow-up", "Complaint", "Pre-opening")
IN, OUT, NOT_OBSERVED = 1, 2, 3


@dataclass(frozen=True)
class Report:
    """One inspection of one restaurant."""

    restaurant: str  # menus.Restaurant key
    file: str
    permit: str
    date: dt.date
    time_in: str
    time_out: str
    purpose: str
    inspector: str
    person_in_charge: str
    failed: dict[str, str]  # item -> observation
    not_observed: tuple[str, ...]
    demerits: int
    grade: str
    follow_up: bool
    scanned: bool = False

    @property
    def score(self) -> int:
        """Points out of 100."""
        return 100 - self.demerits


# A report's pages: the compliance checklist, then the observations with the score and signature.
_CHECKLIST, _FINDINGS = 1, 2

REPORTS: tuple[Report, ...] = load_records("inspections", Report)


def _status(report: Report, item: str) -> int:
    """How the checklist marks ``item``: out of compliance, not observed, or in compliance."""
    return OUT if item in report.failed else NOT_OBSERVED if item in report.not_observed else IN


def _report(report: Report, rng: random.Random) -> DocBuilder:
    restaurant = menus.BY_KEY[report.restaurant]
    doc = DocBuilder(
        report.file,
        "Inspection report",
        "Government",
        title="Food Establishment Inspection Report",
        author="Harlan County Public Health",
        rng=rng,
        created="D:20220701100000Z",
    )
    page = doc.page(scanned=report.scanned)
    page.title(
        "Harlan County Public Health", "Environmental Health Division - Food Establishment Inspection Report", size=15
    )
    page.fields(
        [
            ("Establishment", restaurant.name),
            ("Permit No.", report.permit),
            ("Address", f"{restaurant.address}, Millbrook"),
            ("Date", A.date_text(report.date)),
            ("Time in", report.time_in),
            ("Time out", report.time_out),
        ],
        per_row=2,
        size=10.5,
    )
    page.checkboxes("Purpose of inspection", PURPOSES, [report.purpose], size=10.5)
    page.space(4)
    rows = [(item, _status(report, item)) for item in ITEMS]
    page.checkbox_table(["Compliance item", "IN", "OUT", "N.O."], rows, [300, 68, 68, 68], size=10.5)
    page.line("IN = in compliance   OUT = out of compliance   N.O. = not observed", size=9)
    if report.scanned:
        doc.probe(restaurant.name, A.date_text(report.date), report.permit)
    page = doc.page(scanned=report.scanned)
    page.title("Observations and Corrective Actions", f"Establishment: {restaurant.name}", size=15)
    if report.failed:
        for number, note in enumerate(report.failed.values(), start=1):
            page.heading(f"Observation {number}", size=11)
            page.paragraph(note, size=10.5)
    else:
        page.paragraph(
            "All items observed were in compliance. The operator was commended for good practices.", size=10.5
        )
    page.paragraph(paragraph(rng, "health", (2, 3)), size=10.5)
    page.fields(
        [("Demerits", str(report.demerits)), ("Score", f"{report.score}/100"), ("Grade", report.grade)],
        per_row=3,
        size=11,
    )
    page.checkboxes("Follow-up inspection required", ("Yes", "No"), ["Yes" if report.follow_up else "No"], size=10.5)
    page.fields([("Person in charge", report.person_in_charge)], size=10.5)
    page.signature("Environmental Health Specialist", report.inspector, size=10.5)
    if report.scanned:
        doc.probe(report.inspector, f"{report.score}/100", restaurant.name)
    return doc


def build(seed: int) -> Cluster:
    """Build the five reports, their questions and the menu-bridging questions."""
    cluster = render_cluster(seed, "inspections", _report, REPORTS)
    ask = cluster.ask
    by = {r.restaurant: r for r in REPORTS}
    heron, marisol, saffron, lantern, driftwood = (
        by[k] for k in ("heron", "marisol", "saffron", "lantern", "driftwood")
    )

    def score(r: Report) -> list[list[str]]:
        return A.text_variants(f"{r.score}/100", str(r.score), f"{r.score} out of 100")

    ask(
        "When did the county health department inspect the Blue Heron Bistro?",
        A.date_variants(heron.date),
        (heron.file, _CHECKLIST),
    )
    ask(
        "Did the Blue Heron pass the cold-holding check in its county food inspection?",
        A.yes_no(_status(heron, "Cold holding at 41 F or below") == IN),
        (heron.file, _CHECKLIST),
    )
    ask(
        "What temperature did the inspector record in the Blue Heron's walk-in cooler?",
        A.text_variants("46 F", "46 degrees F", "46 degrees Fahrenheit"),
        (heron.file, _FINDINGS),
    )
    ask(
        "What prompted the health inspector's visit to Casa Marisol?",
        A.text_variants(marisol.purpose, "a complaint"),
        (marisol.file, _CHECKLIST),
    )
    ask(
        "Which compliance items did Casa Marisol fail in its county inspection?",
        A.list_variants(list(marisol.failed)),
        (marisol.file, _CHECKLIST),
    )
    ask(
        "Is Casa Marisol due for another visit from the health inspector?",
        A.yes_no(marisol.follow_up),
        (marisol.file, _FINDINGS),
    )
    ask(
        "Within how many days must Casa Marisol have a pest control operator service the premises?",
        A.text_variants("seven days", "7 days", "seven"),
        (marisol.file, _FINDINGS),
    )
    ask(
        "What score out of 100 did Saffron House earn at its food inspection?",
        score(saffron),
        (saffron.file, _FINDINGS),
    )
    ask(
        "Was the sanitizer concentration at Saffron House found in compliance?",
        A.yes_no(_status(saffron, "Sanitizer concentration") == IN),
        (saffron.file, _CHECKLIST),
    )
    ask(
        "What is the food establishment permit number of Saffron House?",
        A.text_variants(saffron.permit),
        (saffron.file, _CHECKLIST),
    )
    ask(
        "Which items were marked out of compliance at the noodle bar's county inspection?",
        A.list_variants(list(lantern.failed)),
        (lantern.file, _CHECKLIST),
    )
    ask(
        "How hot was the pork broth when the inspector checked the noodle bar's steam table?",
        A.text_variants("122 F", "122 degrees F", "122 degrees Fahrenheit"),
        (lantern.file, _FINDINGS),
    )
    ask(
        "How many demerits did the Lantern Noodle Bar receive?",
        A.count_variants(str(lantern.demerits), "demerits"),
        (lantern.file, _FINDINGS),
    )
    ask(
        "Which inspector signed the report on Driftwood Coffee?",
        A.person_variants(driftwood.inspector),
        (driftwood.file, _FINDINGS),
    )
    ask(
        "On which date was Driftwood Coffee Co. inspected by the county?",
        A.date_variants(driftwood.date),
        (driftwood.file, _CHECKLIST),
    )
    ask(
        "How many points out of 100 did the county award Driftwood Coffee Co.?",
        score(driftwood),
        (driftwood.file, _FINDINGS),
    )
    # cross-page within one report
    ask(
        "What grade did Casa Marisol receive, and what was the purpose of that inspection?",
        A.list_variants([marisol.grade, marisol.purpose], [f"Grade {marisol.grade}", "a complaint"]),
        (marisol.file, _FINDINGS),
        (marisol.file, _CHECKLIST),
    )
    ask(
        "On what date was the Lantern Noodle Bar inspected, and what score did it get?",
        A.list_variants(
            [A.date_text(lantern.date), f"{lantern.score}/100"], [lantern.date.isoformat(), str(lantern.score)]
        ),
        (lantern.file, _CHECKLIST),
        (lantern.file, _FINDINGS),
    )
    # cross-document: bridge from a dish on a menu to the inspection of the restaurant serving it
    rogan = menus.BY_KEY["saffron"]
    ask(
        "What inspection score did the Harbor Street restaurant that serves lamb rogan josh receive?",
        score(saffron),
        (rogan.file, menus.item_page(rogan, "Lamb Rogan Josh")),
        (saffron.file, _FINDINGS),
    )
    osei = [r for r in REPORTS if r.inspector == "Raymond Osei"]
    ask(
        "Which Harbor Street restaurants were inspected by Raymond Osei?",
        A.list_variants([menus.BY_KEY[r.restaurant].name for r in osei]),
        *[(r.file, _FINDINGS) for r in osei],
    )
    whitfield = [r for r in REPORTS if r.inspector == "Dana Whitfield"]
    lowest = min(whitfield, key=lambda r: r.score)
    ask(
        "Of the restaurants Dana Whitfield inspected, which received the lowest score?",
        A.text_variants(
            menus.BY_KEY[lowest.restaurant].name, menus.BY_KEY[lowest.restaurant].name.removeprefix("The ")
        ),
        *[(r.file, _FINDINGS) for r in whitfield],
    )
    return cluster

"""Cluster: residential building permits issued by the City of Millbrook in 2022.

Page 1 is an application form (fields, work-type checkboxes); page 2 holds the conditions, an inspection
schedule table and the office's fee-waiver decision, ticked in a drawn box. Two permits are scans.
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

WORK_TYPES = ("New construction", "Addition", "Deck", "Fence", "Roofing", "Accessory structure", "Solar", "Demolition")
WAIVER = ("Approved", "Denied", "Not requested")


@dataclass(frozen=True)
class Permit:
    """One permit's contents."""

    number: str
    issued: dt.date
    address: str
    parcel: str
    owner: str
    contractor: str
    license: str
    work: str
    description: str
    valuation: int
    fee: float
    waiver: str
    examiner: str
    inspections: tuple[tuple[str, dt.date], ...]
    scanned: bool = False

    @property
    def file(self) -> str:
        """File name, e.g. ``millbrook_building_permit_BP-2022-0147.pdf``."""
        return f"millbrook_building_permit_{self.number.lower().replace('-', '_')}.pdf"


PERMITS: tuple[Permit, ...] = load_records("permits", Permit)

BY_NUMBER = {p.number: p for p in PERMITS}


def _permit(permit: Permit, rng: random.Random) -> DocBuilder:
    doc = DocBuilder(
        permit.file,
        "Building permit",
        "Government",
        title=f"Building Permit {permit.number}",
        author="City of Millbrook",
        rng=rng,
        created=f"D:{permit.issued:%Y%m%d}083000Z",
    )
    page = doc.page(scanned=permit.scanned)
    page.title("City of Millbrook", "Department of Building and Safety - Residential Building Permit", size=16)
    page.fields(
        [
            ("Permit No.", permit.number),
            ("Date issued", A.date_text(permit.issued)),
            ("Property address", permit.address),
            ("Parcel ID", permit.parcel),
            ("Owner", permit.owner),
            ("Contractor", permit.contractor),
            ("Contractor license", permit.license),
        ],
        per_row=2,
        size=10.5,
    )
    page.checkboxes("Type of work", WORK_TYPES, [permit.work], size=10.5, per_row=4)
    page.heading("Description of work", size=11)
    page.paragraph(permit.description, size=10.5)
    page.fields(
        [("Estimated valuation", A.money(permit.valuation)), ("Permit fee", A.money(permit.fee, True))],
        per_row=2,
        size=10.5,
    )
    page.checkboxes(
        "Applicant requests a waiver of permit fees",
        ("Yes", "No"),
        ["No" if permit.waiver == "Not requested" else "Yes"],
        size=10.5,
    )
    page.paragraph("This permit becomes void if work is not started within 180 days of issuance.", size=9.5)
    if permit.scanned:
        doc.probe(permit.number, permit.address, permit.owner, permit.contractor, f"{permit.valuation:,}", permit.work)
    page = doc.page(scanned=permit.scanned)
    page.title(f"Permit {permit.number} - Conditions and Inspections", size=15)
    page.heading("Conditions of approval", size=11)
    for _ in range(2):
        page.paragraph(paragraph(rng, "civic", (3, 4)), size=10.5)
    page.heading("Required inspections", size=11)
    page.paragraph("Call the inspection line at least one business day before each scheduled visit.", size=10)
    page.table(
        ["Inspection", "Scheduled", "Result"],
        [[kind, A.date_text(day), ""] for kind, day in permit.inspections],
        [180, 160, 164],
        size=10.5,
        right=(),
    )
    page.heading("Office use only", size=11)
    page.checkboxes("Fee waiver", WAIVER, [permit.waiver], size=10.5)
    page.signature("Plans Examiner", permit.examiner, size=10.5)
    if permit.scanned:
        doc.probe(permit.examiner, *[A.date_text(day) for _, day in permit.inspections])
    return doc


def _inspection(permit: Permit, kind: str) -> dt.date:
    """Scheduled date of one of the permit's required inspections (``"Framing"``, ``"Final"``, ...)."""
    return dict(permit.inspections)[kind]


def build(seed: int) -> Cluster:
    """Build the seven permits and their questions."""
    cluster = render_cluster(seed, "permits", _permit, PERMITS)
    ask = cluster.ask
    orchard, maple, linden, birch, cooper, harbor, willow = PERMITS

    # A permit's first page is the application (parties, work, valuation and fee, the waiver request); the second
    # holds the conditions, the inspection schedule and the examiner's decision on the waiver.
    def application(permit: Permit) -> tuple[str, int]:
        return (permit.file, 1)

    def approval(permit: Permit) -> tuple[str, int]:
        return (permit.file, 2)

    ask(
        "What is the declared value of the deck project at 14 Orchard Lane?",
        A.money_variants(orchard.valuation),
        application(orchard),
    )
    ask(
        "Which company is building the deck at 14 Orchard Lane?",
        A.text_variants(orchard.contractor, "Ridgeline Builders"),
        application(orchard),
    )
    ask(
        "Who checked and signed off the Orchard Lane deck plans for the city?",
        A.text_variants(orchard.examiner),
        approval(orchard),
    )
    ask(
        "When is the framing inspection for the Orchard Lane deck scheduled?",
        A.date_variants(_inspection(orchard, "Framing")),
        approval(orchard),
    )
    ask(
        "How tall is the privacy fence planned at 7 Maple Court?",
        A.text_variants("six-foot", "six feet", "6 feet"),
        application(maple),
    )
    ask(
        "Did Millbrook grant the fee waiver for the fence at Maple Court?",
        A.yes_no(maple.waiver == "Approved"),
        approval(maple),
    )
    ask(
        "What license number does the Maple Court fence contractor hold?",
        A.text_variants(maple.license),
        application(maple),
    )
    ask(
        "Who owns the property where Ridgeline is rebuilding an entry deck with an accessible ramp?",
        A.text_variants(linden.owner),
        application(linden),
    )
    ask(
        "What is the estimated value of the work at the senior center on Linden Avenue?",
        A.money_variants(linden.valuation),
        application(linden),
    )
    ask(
        "Did the city waive the permit fees for the Linden Avenue senior center project?",
        A.yes_no(linden.waiver == "Approved"),
        approval(linden),
    )
    ask(
        "On what date is the final inspection of the senior center's new deck scheduled?",
        A.date_variants(_inspection(linden, "Final")),
        approval(linden),
    )
    ask(
        "What type of work does the permit for 52 Birch Hollow Road cover?",
        A.text_variants(birch.work, "roof replacement"),
        application(birch),
    )
    ask(
        "Which roofer holds the permit for the Birch Hollow Road job?",
        A.text_variants(birch.contractor, "Summit Roofing"),
        application(birch),
    )
    ask(
        "Which plans examiner approved the Birch Hollow Road permit?", A.text_variants(birch.examiner), approval(birch)
    )
    ask(
        "Was a fee waiver requested for the reroofing job at 52 Birch Hollow Road?",
        A.yes_no(birch.waiver != "Not requested"),
        application(birch),
    )
    ask(
        "Who is doing the construction work on the shed at 19 Cooper Street?",
        A.text_variants("Owner-builder", "the owner", "Daniel Okoro"),
        application(cooper),
    )
    ask(
        "What are the planned dimensions of the shed on Cooper Street?",
        A.text_variants("12 ft by 16 ft", "12 by 16 feet", "12 x 16 ft"),
        application(cooper),
    )
    ask(
        "Was the Cooper Street shed's request for a fee waiver approved?",
        A.yes_no(cooper.waiver == "Approved"),
        approval(cooper),
    )
    ask(
        "What is the estimated valuation of the kitchen addition at 118 Harbor Street?",
        A.money_variants(harbor.valuation),
        application(harbor),
    )
    ask(
        "How much was the permit fee for the restaurant kitchen addition on Harbor Street?",
        A.money_variants(harbor.fee, True),
        application(harbor),
    )
    ask(
        "When is the electrical rough-in inspection planned for the Harbor Street kitchen addition?",
        A.date_variants(_inspection(harbor, "Electrical rough-in")),
        approval(harbor),
    )
    ask(
        "How big is the composite deck permitted at 23 Willow Bend?",
        A.text_variants("16 ft by 24 ft", "16 by 24 feet", "16 x 24 ft"),
        application(willow),
    )
    ask(
        "On what date was the permit for the deck at 23 Willow Bend issued?",
        A.date_variants(willow.issued),
        application(willow),
    )
    # cross-page
    ask(
        "Who approved the shed permit on Cooper Street for the city, and what valuation does it list?",
        A.list_variants([cooper.examiner, A.money(cooper.valuation)]),
        approval(cooper),
        application(cooper),
    )
    ask(
        "What permit fee applies to the Orchard Lane deck, and when is its final inspection?",
        A.list_variants([A.money(orchard.fee, True), A.date_text(_inspection(orchard, "Final"))]),
        application(orchard),
        approval(orchard),
    )
    # cross-document
    decks = [p for p in PERMITS if p.work == "Deck"]
    ask(
        "Which properties in Millbrook received 2022 residential permits for deck work?",
        A.list_variants([p.address for p in decks]),
        *[application(p) for p in decks],
    )
    heron = menus.BY_KEY["heron"]
    ask(
        "What is the estimated valuation of the building work permitted at the Blue Heron Bistro's address?",
        A.money_variants(harbor.valuation),
        (heron.file, 1),
        application(harbor),
    )
    return cluster

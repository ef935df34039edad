"""Cluster: three resumes (sidebar + main column) whose work histories point into other clusters."""

from __future__ import annotations

import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import menus, permits
from madqa.loading_script.sample.layout import DocBuilder
from madqa.loading_script.sample.model import Cluster
from madqa.loading_script.sample.records import ask_questions
from madqa.loading_script.sample.text import paragraph


@dataclass(frozen=True)
class Resume:
    """One resume; ``pages`` holds (sidebar, main) text per page."""

    slug: str
    name: str
    headline: str
    pages: tuple[tuple[str, str], ...]

    @property
    def file(self) -> str:
        """File name, e.g. ``resume_priya_raman.pdf``."""
        return f"resume_{self.slug}.pdf"


def _resumes(rng: random.Random) -> tuple[Resume, ...]:
    def profile() -> str:
        return "PROFILE\n" + paragraph(rng, "career", (2, 3)) + "\n\n"

    return (
        Resume(
            "priya_raman",
            "Priya Raman",
            "Water Treatment Operator | Riverton | priya.raman@example.com",
            (
                (
                    "CERTIFICATIONS\nGrade IV Water Treatment Operator\nGrade II Distribution Operator\nOSHA 30-Hour "
                    "Construction Safety\n\nLANGUAGES\nEnglish\nTamil\n\nSKILLS\nSCADA monitoring\nJar testing\n"
                    "Chemical feed calibration",
                    profile()
                    + "EXPERIENCE\n\nLead Operator, Cedar Creek Plant, Riverton Water Utility\n2017 - present\n"
                    "Supervise a crew of five operators on rotating shifts; coordinate filter backwashing and "
                    "regulatory sampling.\n\nOperator II, Fairhaven Municipal Water\n2012 - 2017\nRan coagulation and "
                    "filtration processes and trained new operators.",
                ),
                (
                    "REFERENCES\nAvailable on request",
                    "EDUCATION\n\nB.S. Environmental Science, Harlan State University, "
                    "2011\n\nAWARDS\n\nOperator of the "
                    "Year, Tri-County Water Association, 2020\n\n" + paragraph(rng, "career", (3, 4)),
                ),
            ),
        ),
        Resume(
            "thomas_achterberg",
            "Thomas Achterberg",
            "Civil Engineer, PE | Millbrook | tachterberg@example.com",
            (
                (
                    "LICENSES\nProfessional Engineer (Civil)\nLicense No. PE-58213\n\nSOFTWARE\nAutoCAD Civil 3D\n"
                    "HEC-RAS\nPrimavera P6\n\nLANGUAGES\nEnglish\nGerman",
                    profile()
                    + "EXPERIENCE\n\nSenior Project Engineer, Keystone Paving\n2020 - present\nManage municipal "
                    "resurfacing contracts from bid through closeout.\n\nProject Engineer, Ridgeline Builders LLC\n"
                    "2016 - 2020\nPrepared structural calculations for residential decks and additions.\n\n"
                    "Staff Engineer, Harlan County Public Works\n2014 - 2016\n\nEDUCATION\n\nM.S. Civil Engineering, "
                    "Lakeshore Institute of Technology, 2014\nB.S. Civil Engineering, Harlan State University, 2012",
                ),
            ),
        ),
        Resume(
            "lucia_ferreira",
            "Lucia Ferreira",
            "Pastry Chef | Millbrook | lucia.ferreira@example.com",
            (
                (
                    "CERTIFICATIONS\nServSafe Food Protection Manager\nCertified Pastry Culinarian"
                    "\n\nLANGUAGES\nEnglish\n"
                    "Portuguese\nSpanish",
                    profile() + "EXPERIENCE\n\nPastry Chef, Casa Marisol\n2019 - present\nDevelop the dessert menu, "
                    "including churros and crema catalana, "
                    "and manage a two-person pastry station.\n\nBaker, Driftwood "
                    "Coffee Co.\n2016 - 2019\nBaked scones and breads for the morning service.",
                ),
                (
                    "EDUCATION\n\nA.A.S. Baking and Pastry Arts\nHarlan Community College, 2016",
                    "COMPETITIONS\n\nSilver medal, Harbor Food Festival dessert contest, 2021\n\n"
                    + paragraph(rng, "career", (3, 4)),
                ),
            ),
        ),
    )


def _resume(resume: Resume, rng: random.Random) -> DocBuilder:
    doc = DocBuilder(
        resume.file,
        "Resume",
        "Personal",
        title=resume.name,
        author=resume.name,
        rng=rng,
        footer="{title} | {page}/{pages}",
        created="D:20221101180000Z",
    )
    for index, (side, main) in enumerate(resume.pages):
        page = doc.page()
        if index == 0:
            page.title(resume.name, resume.headline, size=22)
        page.columns(side, main, size=10.5, split=0.32)
    return doc


def build(seed: int) -> Cluster:
    """Build the three resumes and their questions."""
    rng = random.Random(f"{seed}-resumes")
    priya, thomas, lucia = _resumes(rng)
    cluster = Cluster()
    cluster.documents.extend(_resume(r, rng).build() for r in (priya, thomas, lucia))
    by_slug = {r.slug: r for r in (priya, thomas, lucia)}
    ask_questions(cluster, "resumes", lambda slug, page: (by_slug[slug].file, page))
    ask = cluster.ask
    # cross-document
    orchard = permits.BY_NUMBER["BP-2022-0147"]
    ask(
        "Which applicant previously worked for the contractor building the deck at 14 Orchard Lane?",
        A.text_variants(thomas.name, "Achterberg"),
        (thomas.file, 1),
        (orchard.file, 1),
    )
    casa = menus.BY_KEY["marisol"]
    ask(
        "What does Lucia Ferreira's current restaurant charge for churros?",
        menus.price_variants(casa, "Churros con Chocolate"),
        (lucia.file, 1),
        (casa.file, menus.item_page(casa, "Churros con Chocolate")),
    )
    return cluster

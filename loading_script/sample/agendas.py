"""Cluster: four Millbrook City Council meeting agendas (2022), linked to the permits and the water utility."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import permits
from madqa.loading_script.sample.layout import ITALIC, DocBuilder
from madqa.loading_script.sample.model import Cluster, render_cluster
from madqa.loading_script.sample.records import load_records


@dataclass(frozen=True)
class Agenda:
    """One meeting: items per page (title, presenter or ``""``, details)."""

    date: dt.date
    time: str
    location: str
    pages: tuple[tuple[tuple[str, str, str], ...], ...]

    @property
    def file(self) -> str:
        """File name, e.g. ``millbrook_city_council_agenda_2022_01_11.pdf``."""
        return f"millbrook_city_council_agenda_{self.date:%Y_%m_%d}.pdf"


AGENDAS: tuple[Agenda, ...] = load_records("agendas", Agenda)


#: The meeting's time and place head the first page.
_FIRST_PAGE = 1


def item_page(agenda: Agenda, title_start: str) -> int:
    """1-based page that lists the agenda item whose title starts with ``title_start``."""
    for number, items in enumerate(agenda.pages, start=1):
        if any(title.startswith(title_start) for title, _, _ in items):
            return number
    raise KeyError(title_start)


def _agenda(agenda: Agenda, rng: random.Random) -> DocBuilder:
    when = A.date_text(agenda.date)
    doc = DocBuilder(
        agenda.file,
        "Meeting agenda",
        "Government",
        title=f"City Council Agenda, {when}",
        author="City of Millbrook, Office of the City Clerk",
        rng=rng,
        created=f"D:{agenda.date:%Y%m%d}090000Z",
    )
    number = 0
    for index, items in enumerate(agenda.pages):
        page = doc.page()
        if index == 0:
            page.title("City of Millbrook", "Regular Meeting of the City Council - Agenda", center=True)
            page.line(f"{when} at {agenda.time}", size=11.5, bold=True, center=True)
            page.line(agenda.location, size=11, center=True, gap=12)
            page.paragraph(
                "Members of the public may address the Council on any listed item when it is called. "
                "Written comments received by the City Clerk before noon on the meeting day are "
                "distributed to all Councilmembers.",
                size=9.5,
                font=ITALIC,
            )
        else:
            page.title("Agenda (continued)")
        for title, presenter, details in items:
            number += 1
            page.heading(f"{number}. {title}", size=11)
            text = " ".join(part for part in (f"Presenter: {presenter}." if presenter else "", details) if part)
            if text:
                page.paragraph(text, size=10.5, indent=18)
        if index == len(agenda.pages) - 1:
            page.paragraph(
                "Agenda materials are available for review at the Office of the City Clerk. "
                "Persons needing accommodation should contact the Clerk in advance.",
                size=9.5,
            )
    return doc


def build(seed: int) -> Cluster:
    """Build the four agendas, their questions and the permit-bridging question."""
    cluster = render_cluster(seed, "agendas", _agenda, AGENDAS)
    ask = cluster.ask
    jan, mar, apr, jun = AGENDAS

    def at(agenda: Agenda, title_start: str) -> tuple[str, int]:
        return (agenda.file, item_page(agenda, title_start))

    ask(
        "At what time was the Millbrook council's January 2022 meeting called to order?",
        A.text_variants(jan.time, "7 PM", "7:00 p.m."),
        (jan.file, _FIRST_PAGE),
    )
    ask(
        "Who was scheduled to present the water utility's capital plan to the Millbrook council?",
        A.text_variants("Marcus Delgado", "Delgado"),
        at(jan, "Presentation: five-year capital plan"),
    )
    ask(
        "How much would the winter snow and ice removal contract approved in January cost Millbrook?",
        A.money_variants(148000),
        at(jan, "Resolution 2022-03"),
    )
    ask(
        "What time did the March 2022 Millbrook council meeting begin?",
        A.text_variants(mar.time, "6:30 p.m."),
        (mar.file, _FIRST_PAGE),
    )
    ask(
        "How many metered parking spaces on Harbor Street would become free two-hour parking?",
        A.text_variants("twenty-two", "22", "twenty-two spaces"),
        at(mar, "Public hearing: Harbor Street parking"),
    )
    ask(
        "What maximum rear-yard fence height does Ordinance 2022-07 propose?",
        A.text_variants("seven feet", "7 feet", "seven"),
        at(mar, "Ordinance 2022-07"),
    )
    ask(
        "Who read the Arbor Day proclamation at the March council session?",
        A.text_variants("Celeste Vandermeer", "Mayor Celeste Vandermeer"),
        at(mar, "Proclamation: Arbor Day"),
    )
    ask(
        "Where did the Millbrook council hold its April 2022 meeting?",
        A.text_variants("Millbrook Public Library, Community Room", "Millbrook Public Library", "25 Elm Avenue"),
        (apr.file, _FIRST_PAGE),
    )
    ask(
        "Who led the preliminary budget workshop for fiscal 2023?",
        A.text_variants("Omar Haddad"),
        at(apr, "Budget workshop"),
    )
    ask(
        "Who filed the appeal over a fee waiver that the council heard in April?",
        A.text_variants("Yolanda Pierce"),
        at(apr, "Appeal: denial"),
    )
    ask(
        "For what amount was the Harbor Street resurfacing contract recommended?",
        A.money_variants(1284500),
        at(jun, "Award of contract"),
    )
    ask(
        "Who was nominated to the Millbrook Planning Commission in June 2022?",
        A.text_variants("Beatrice Lang"),
        at(jun, "Appointment to the Planning Commission"),
    )
    ask(
        "When does the planning commission term of the June 2022 nominee end?",
        A.date_variants(dt.date(2024, 12, 31)),
        at(jun, "Appointment to the Planning Commission"),
    )
    # cross-page
    ask(
        "When did the March 2022 council meeting start, and who presented the fence height ordinance?",
        A.list_variants([mar.time, "Rosalind Greer"]),
        (mar.file, _FIRST_PAGE),
        at(mar, "Ordinance 2022-07"),
    )
    ask(
        "Where was the April 2022 council meeting held, and who ran its budget workshop?",
        A.list_variants(["Millbrook Public Library", "Omar Haddad"]),
        (apr.file, _FIRST_PAGE),
        at(apr, "Budget workshop"),
    )
    # cross-document: agenda -> permit
    maple = permits.BY_NUMBER["BP-2022-0152"]
    ask(
        "Which contractor is named on the permit whose fee waiver denial was appealed before the council in April?",
        A.text_variants(maple.contractor, "Hartwell Construction"),
        at(apr, "Appeal: denial"),
        (maple.file, 1),
    )
    return cluster

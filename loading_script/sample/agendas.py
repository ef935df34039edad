"""Cluster: four Millbrook City Council meeting agendas (2022), linked to the permits and the water utility."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import permits
from madqa.loading_script.sample.layout import ITALIC, DocBuilder
from madqa.loading_script.sample.model import Cluster, render_cluster
from madqa.loading_script.sample.records import ask_questions, load_records


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
BY_DATE = {agenda.date.isoformat(): agenda for agenda in AGENDAS}


#: The meeting's time and place head the first page.
_FIRST_PAGE = 1


def item_page(agenda: Agenda, title_start: str) -> int:
    """1-based page that lists the agenda item whose title starts with ``title_start``."""
    for number, items in enumerate(agenda.pages, start=1):
        if any(title.startswith(title_start) for title, _, _ in items):
            return number
    raise KeyError(title_start)


def _evidence(date: str, title_start: str = "") -> tuple[str, int]:
    """Evidence page in the agenda of meeting ``date`` (ISO): the item whose title starts with ``title_start``,
    or the first page (the meeting's time and place) without one."""
    agenda = BY_DATE[date]
    return (agenda.file, item_page(agenda, title_start) if title_start else _FIRST_PAGE)


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
    ask_questions(cluster, "agendas", _evidence)
    # cross-document: agenda -> permit
    maple = permits.BY_NUMBER["BP-2022-0152"]
    cluster.ask(
        "Which contractor is named on the permit whose fee waiver denial was appealed before the council in April?",
        A.text_variants(maple.contractor, "Hartwell Construction"),
        _evidence("2022-04-12", "Appeal: denial"),
        (maple.file, 1),
    )
    return cluster

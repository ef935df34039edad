"""Cluster: invoices issued by Northgate Design Studio to clients that appear elsewhere in the corpus."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import menus
from madqa.loading_script.sample.layout import DocBuilder
from madqa.loading_script.sample.model import Cluster, render_cluster
from madqa.loading_script.sample.records import load_records

METHODS = ("Check", "ACH transfer", "Credit card")
TAX_RATE = 0.065


@dataclass(frozen=True)
class Invoice:
    """One invoice; lines are ``(description, quantity, unit price, taxable)``."""

    number: str
    client: str
    client_address: str
    issued: dt.date
    project: str
    lines: tuple[tuple[str, int, float, bool], ...]
    method: str
    scanned: bool = False

    @property
    def file(self) -> str:
        """File name, e.g. ``northgate_invoice_nds_1041.pdf``."""
        return f"northgate_invoice_{self.number.lower().replace('-', '_')}.pdf"

    @property
    def due(self) -> dt.date:
        """Net-30 due date."""
        return self.issued + dt.timedelta(days=30)

    @property
    def subtotal(self) -> float:
        """Sum of line amounts."""
        return sum(q * p for _, q, p, _ in self.lines)

    @property
    def tax(self) -> float:
        """Sales tax on printed goods, rounded to cents."""
        return round(sum(q * p for _, q, p, t in self.lines if t) * TAX_RATE, 2)

    @property
    def total(self) -> float:
        """Amount due."""
        return round(self.subtotal + self.tax, 2)


INVOICES: tuple[Invoice, ...] = load_records("invoices", Invoice)


def _cash(value: float) -> str:
    return A.money(value, True)


def _invoice(invoice: Invoice, rng: random.Random) -> DocBuilder:
    doc = DocBuilder(
        invoice.file,
        "Invoice",
        "Financial",
        title=f"Invoice {invoice.number}",
        author="Northgate Design Studio",
        rng=rng,
        footer=None,
        created=f"D:{invoice.issued:%Y%m%d}160000Z",
    )
    page = doc.page(scanned=invoice.scanned)
    page.title(
        "Northgate Design Studio",
        "Graphic design - print - signage  |  77 Foundry Row, Millbrook  |  billing@northgatedesign.example",
        size=20,
    )
    page.line("INVOICE", size=16, bold=True, gap=10)
    page.fields(
        [
            ("Invoice No.", invoice.number),
            ("Invoice date", A.date_text(invoice.issued)),
            ("Bill to", invoice.client),
            ("Due date", A.date_text(invoice.due)),
            ("Client address", invoice.client_address),
            ("Terms", "Net 30"),
            ("Project", invoice.project),
        ],
        per_row=2,
        size=10.5,
    )
    rows = [[desc, str(qty), _cash(price), _cash(qty * price)] for desc, qty, price, _ in invoice.lines]
    page.table(["Description", "Qty", "Rate", "Amount"], rows, [264, 60, 90, 90], size=10.5)
    page.table(
        ["Summary", "Amount"],
        [
            ["Subtotal", _cash(invoice.subtotal)],
            ["Sales tax, printed goods (6.5%)", _cash(invoice.tax)],
            ["Total due", _cash(invoice.total)],
        ],
        [414, 90],
        size=10.5,
    )
    page.checkboxes("Payment method", METHODS, [invoice.method], size=10.5)
    page.paragraph(
        "Please include the invoice number with your payment. Balances unpaid after the due date "
        "accrue a late fee of 1.5% per month. Thank you for your business.",
        size=9.5,
    )
    if invoice.scanned:
        doc.probe(
            invoice.client,
            invoice.number,
            _cash(invoice.total)[1:],
            _cash(invoice.tax)[1:],
            invoice.method,
            A.date_text(invoice.due),
            *[desc for desc, *_ in invoice.lines],
            *[_cash(price)[1:] for _, _, price, _ in invoice.lines],
        )
    return doc


def _line(invoice: Invoice, description_start: str) -> tuple[str, int, float, bool]:
    """The invoice line whose description starts with ``description_start``: (description, quantity, price, taxed)."""
    return next(line for line in invoice.lines if line[0].startswith(description_start))


def build(seed: int) -> Cluster:
    """Build the five invoices and their questions."""
    cluster = render_cluster(seed, "invoices", _invoice, INVOICES)
    ask = cluster.ask
    marisol, water, school, library, saffron = INVOICES

    def total(invoice: Invoice) -> list[list[str]]:
        return A.money_variants(invoice.total, True)

    def page(invoice: Invoice) -> tuple[str, int]:
        return (invoice.file, 1)

    def unit_price(question: str, invoice: Invoice, line: str) -> None:
        ask(question, A.money_variants(_line(invoice, line)[2], True), page(invoice))

    ask(
        "How many hours of menu typesetting did Northgate bill the tapas restaurant for?",
        A.quantity_variants(str(_line(marisol, "Menu layout and typesetting")[1]), "hours"),
        page(marisol),
    )
    ask(
        "How did Casa Marisol pay the design studio's invoice?",
        A.text_variants(marisol.method, "by credit card"),
        page(marisol),
    )
    unit_price(
        "What did Northgate charge Casa Marisol for designing its outdoor sign?", marisol, "Exterior sign design"
    )
    ask(
        "What was the total amount due on Northgate's invoice for the water utility's 2021 annual report?",
        total(water),
        page(water),
    )
    unit_price("What did the design studio charge the Riverton water utility per infographic?", water, "Infographic")
    ask(
        "By what date did the water utility have to pay Northgate for the annual report design?",
        A.date_variants(water.due),
        page(water),
    )
    unit_price(
        "What hourly rate did Northgate charge Oakridge Middle School for poster templates?", school, "Poster template"
    )
    ask(
        "How was the school's bill for science fair materials paid?",
        A.text_variants(school.method, "by check"),
        page(school),
    )
    ask(
        "What was the sales tax on the school's science fair invoice?",
        A.money_variants(school.tax, True),
        page(school),
    )
    ask(
        "How much did the library owe Northgate in total for the summer reading program work?",
        total(library),
        page(library),
    )
    unit_price("How much did Saffron House's logo refresh cost?", saffron, "Logo refresh")
    ask(
        "What was the subtotal before tax on Northgate's brand refresh invoice for Saffron House?",
        A.money_variants(saffron.subtotal, True),
        page(saffron),
    )
    ask(
        "Which payment method was selected on the Saffron House invoice?",
        A.text_variants(saffron.method, "ACH", "bank transfer"),
        page(saffron),
    )
    # cross-document
    largest = max(INVOICES, key=lambda i: i.total)
    ask(
        "Which client received the largest bill from Northgate Design Studio in 2022?",
        A.text_variants(largest.client),
        *[page(i) for i in INVOICES],
    )
    casa = menus.BY_KEY["marisol"]
    ask(
        "What was the total due on the design invoice sent to the Harbor Street restaurant that serves paella?",
        total(marisol),
        (casa.file, 1),
        page(marisol),
    )
    return cluster

"""Answer-variant helpers: the surface forms an answer may reasonably be written in."""

from __future__ import annotations

import datetime as dt

Variants = list[list[str]]

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _dedupe(forms: list[list[str]]) -> Variants:
    seen: list[list[str]] = []
    for form in forms:
        if form not in seen:
            seen.append(form)
    return seen


def money(amount: float, cents: bool = False) -> str:
    """Format dollars as printed in the documents, e.g. ``$1,250`` or ``$1,250.00``."""
    return f"${amount:,.2f}" if cents else f"${amount:,.0f}"


def money_variants(amount: float, cents: bool = False) -> Variants:
    """``$1,250`` plus ``1,250 dollars`` and ``1250``."""
    printed = money(amount, cents)
    plain = printed[1:]
    return _dedupe([[printed], [f"{plain} dollars"], [plain.replace(",", "")]])


def quantity_variants(value: str, unit: str, *alt_units: str) -> Variants:
    """A number with a unit, e.g. ``6.8 miles``; ``alt_units`` are other spellings of the unit."""
    forms = [[f"{value} {unit}"]] + [[f"{value} {alt}"] for alt in alt_units]
    if "," in value:
        forms.append([f"{value.replace(',', '')} {unit}"])
    return _dedupe(forms)


def date_text(day: dt.date) -> str:
    """``March 14, 2022`` (the documents' own style)."""
    return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"


def date_variants(day: dt.date) -> Variants:
    """The printed date plus ISO, day-first and numeric US forms."""
    return _dedupe(
        [
            [date_text(day)],
            [day.isoformat()],
            [f"{day.day} {_MONTHS[day.month - 1]} {day.year}"],
            [f"{day.month:02d}/{day.day:02d}/{day.year}"],
        ]
    )


def text_variants(*forms: str) -> Variants:
    """Single-string alternatives, the document's form first."""
    return _dedupe([[form] for form in forms])


def person_variants(full_name: str) -> Variants:
    """A person's full name, then the surname alone (``Helen Okafor``, ``Okafor``)."""
    return text_variants(full_name, full_name.split()[-1])


def count_variants(printed: str, noun: str = "") -> Variants:
    """A count as printed (``3,412``), without its thousands separator, and with ``noun`` (``3,412 samples``)."""
    return text_variants(printed, printed.replace(",", ""), *([f"{printed} {noun}"] if noun else []))


def list_variants(items: list[str], *alternatives: list[str]) -> Variants:
    """A list answer (several strings) and optional alternative lists."""
    return _dedupe([list(items), *[list(alt) for alt in alternatives]])


def yes_no(value: bool) -> Variants:
    """``[["Yes"]]`` or ``[["No"]]``."""
    return [["Yes"]] if value else [["No"]]


def percent_variants(value: int) -> Variants:
    """``35%`` and ``35 percent``."""
    return [[f"{value}%"], [f"{value} percent"]]

"""Cluster: menus of five restaurants on Harbor Street, Millbrook (two-column layouts)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample.layout import ITALIC, DocBuilder
from madqa.loading_script.sample.model import Cluster, render_cluster
from madqa.loading_script.sample.records import ask_questions, load_records
from madqa.loading_script.sample.text import paragraph

# (name, price, description, tags); tags: V vegetarian, GF gluten free
Item = tuple[str, float, str, str]


@dataclass(frozen=True)
class Restaurant:
    """One menu: sections per page, each page split into a left and a right column."""

    key: str
    name: str
    file: str
    address: str
    hours: str
    tagline: str
    pages: tuple[tuple[tuple[str, tuple[Item, ...]], tuple[str, tuple[Item, ...]]], ...]


RESTAURANTS: tuple[Restaurant, ...] = load_records("menus", Restaurant)

BY_KEY = {r.key: r for r in RESTAURANTS}


def _price(value: float) -> str:
    return A.money(value, True) if value != int(value) else A.money(value)


def _column(title: str, items: tuple[Item, ...]) -> str:
    lines = [title.upper(), ""]
    for name, price, description, tags in items:
        suffix = f" ({', '.join(tags.split())})" if tags else ""
        lines += [f"{name}  {_price(price)}{suffix}", f"    {description}", ""]
    return "\n".join(lines)


def _listing(restaurant: Restaurant, item: str) -> tuple[int, Item]:
    """The 1-based page that lists ``item`` and its menu entry."""
    for number, columns in enumerate(restaurant.pages, start=1):
        for _, items in columns:
            for entry in items:
                if entry[0] == item:
                    return number, entry
    raise KeyError(item)


def item_page(restaurant: Restaurant, item: str) -> int:
    """1-based page of the menu that lists ``item``."""
    return _listing(restaurant, item)[0]


def price(restaurant: Restaurant, item: str) -> float:
    """Listed price of ``item``."""
    _, (_, value, _, _) = _listing(restaurant, item)
    return value


def serves(restaurant: Restaurant, item: str) -> bool:
    """Whether the menu lists ``item``."""
    try:
        _listing(restaurant, item)
    except KeyError:
        return False
    return True


def price_variants(restaurant: Restaurant, item: str) -> list[list[str]]:
    """Answer variants of the listed price of ``item`` (cents shown when the menu shows them)."""
    value = price(restaurant, item)
    return A.money_variants(value, value != int(value))


def _tagged(restaurant: Restaurant, item: str, tag: str) -> bool:
    """Whether the menu marks ``item`` with ``tag`` (``V`` or ``GF``)."""
    _, (_, _, _, tags) = _listing(restaurant, item)
    return tag in tags.split()


#: Address and opening hours head the first page.
_FIRST_PAGE = 1


def _evidence(key: str, item: str = "") -> tuple[str, int]:
    """Evidence page in restaurant ``key``'s menu: the page listing ``item``, or the first page without one."""
    restaurant = BY_KEY[key]
    return (restaurant.file, item_page(restaurant, item) if item else _FIRST_PAGE)


def _menu(restaurant: Restaurant, rng: random.Random) -> DocBuilder:
    doc = DocBuilder(
        restaurant.file,
        "Restaurant menu",
        "Commercial",
        title=restaurant.name,
        author=restaurant.name,
        rng=rng,
        footer="{title} | {page} of {pages}",
    )
    for number, (left, right) in enumerate(restaurant.pages, start=1):
        page = doc.page()
        page.title(restaurant.name, restaurant.tagline, center=True)
        if number == 1:
            page.line(f"{restaurant.address}, Millbrook  |  {restaurant.hours}", size=9.5, center=True, gap=14)
            page.paragraph(paragraph(rng, "hospitality", (2, 3)), size=10, font=ITALIC)
        page.space(8)
        page.columns(_column(*left), _column(*right), size=12)
        page.line(
            "V = vegetarian   GF = gluten free   Please tell your server about any allergies.", size=8.5, center=True
        )
    return doc


def build(seed: int) -> Cluster:
    """Build the five menus and their questions."""
    cluster = render_cluster(seed, "menus", _menu, RESTAURANTS)
    ask_questions(
        cluster,
        "menus",
        _evidence,
        {
            "price": lambda key, item: price_variants(BY_KEY[key], item),
            "tagged": lambda key, item, tag: A.yes_no(_tagged(BY_KEY[key], item, tag)),
        },
    )
    ask = cluster.ask
    heron, marisol = BY_KEY["heron"], BY_KEY["marisol"]
    # cross-document comparisons
    sellers = [r for r in RESTAURANTS if serves(r, "Cappuccino")]
    cheapest = min(sellers, key=lambda r: price(r, "Cappuccino"))
    ask(
        "Of the Harbor Street places that serve cappuccino, which one sells it for the least?",
        A.text_variants(cheapest.name, cheapest.name.removesuffix(" Co.")),
        *[_evidence(r.key, "Cappuccino") for r in sellers],
    )
    pricier = max((heron, marisol), key=lambda r: price(r, "House Red, glass"))
    ask(
        "Is a glass of the house red more expensive at the Blue Heron or at Casa Marisol?",
        A.text_variants(pricier.name, "Blue Heron" if pricier is heron else pricier.name),
        _evidence("heron", "House Red, glass"),
        _evidence("marisol", "House Red, glass"),
    )
    return cluster

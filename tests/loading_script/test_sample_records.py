"""The sample's content tables (``loading_script/sample/data/*.json``) load as the records they replaced: JSON
arrays as tuples, ISO dates as dates, ``int`` object keys as ints, numbers as written; question tables as answer
variants built by ``answers``; a key the record has no field for is refused."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from importlib import resources

import pytest

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import invoices, menus
from madqa.loading_script.sample.records import answer_variants, load_table, records_from


@dataclass(frozen=True)
class _Shaped:
    day: dt.date
    rows: tuple[tuple[str, float], ...]
    by_offset: dict[int, str]
    pair: tuple[int, str]
    note: str = ""


def test_values_take_the_shape_of_the_type_hints() -> None:
    entry = {"day": "2022-03-08", "rows": [["a", 16], ["b", 4.75]], "by_offset": {"0": "x"}, "pair": [1, "y"]}
    (record,) = records_from([entry], _Shaped)
    assert record == _Shaped(dt.date(2022, 3, 8), (("a", 16), ("b", 4.75)), {0: "x"}, (1, "y"))
    assert [type(price) for _, price in record.rows] == [int, float]  # "$16" and "$4.75" print differently


def test_a_key_the_record_lacks_is_refused() -> None:
    entry = {"day": "2022-03-08", "rows": [], "by_offset": {}, "pair": [1, "y"], "notes": "misspelt"}
    with pytest.raises(ValueError, match=r"_Shaped has no field\(s\) \['notes'\]"):
        records_from([entry], _Shaped)


def test_family_tables_load_as_their_dataclasses() -> None:
    heron = menus.BY_KEY["heron"]
    assert heron.pages[0][0] == (
        "Starters",
        (
            ("Maryland Crab Cake", 16, "remoulade, pickled fennel, lemon", "GF"),
            ("Roasted Beet Salad", 12, "whipped goat cheese, pistachio, orange", "V GF"),
            ("Steamed Mussels", 15, "white wine, garlic, grilled sourdough", ""),
        ),
    )
    first = invoices.INVOICES[0]
    assert (first.number, first.issued, first.scanned) == ("NDS-1041", dt.date(2022, 2, 14), False)
    assert isinstance(first.lines, tuple) and first.lines[1] == ("Exterior sign design", 1, 1200.0, False)


def test_answer_specs_build_the_answers_variants() -> None:
    assert answer_variants({"money": [5250]}) == A.money_variants(5250)
    assert answer_variants({"text": ["two weeks", "2 weeks"]}) == A.text_variants("two weeks", "2 weeks")
    assert answer_variants({"list": [["11 hours", "30 minutes"]]}) == A.list_variants(["11 hours", "30 minutes"])
    assert answer_variants({"date": ["2024-12-31"]}) == A.date_variants(dt.date(2024, 12, 31))
    assert answer_variants({"yes_no": [False]}) == [["No"]]
    own = {"price": lambda key, item: A.money_variants(menus.price(menus.BY_KEY[key], item), True)}
    assert answer_variants({"price": ["heron", "Cappuccino"]}, own) == A.money_variants(4.75, True)
    with pytest.raises(KeyError):
        answer_variants({"price": ["heron", "Cappuccino"]})  # a family's own kind exists only where it is given


def test_every_data_file_is_a_table_the_generator_reads() -> None:
    folder = resources.files("madqa.loading_script.sample").joinpath("data")
    names = sorted(entry.name.removesuffix(".json") for entry in folder.iterdir() if entry.name.endswith(".json"))
    sources = "".join(
        entry.read_text(encoding="utf-8")
        for entry in resources.files("madqa.loading_script.sample").iterdir()
        if entry.name.endswith(".py")
    )
    for name in names:
        assert load_table(name), name
        family = name.removesuffix("_questions")
        assert f'"{family}"' in sources, f"data/{name}.json is read by no family module"

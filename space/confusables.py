"""Confusable skeletons of names: Unicode's UTS #39 skeleton, plus the Latin look-alikes it keeps apart.

Decisions (issue 39):

* **The table** is Unicode's ``confusables.txt``, vendored as ``uts39_confusables.tsv`` (source -> prototype, with
  the file's version and SHA-256 in its header) by ``scripts/confusables_table.py``, which says where it comes from
  and why it is vendored (the mappings' direction). :func:`skeleton` is UTS #39's: NFD, each character replaced by
  its prototype, NFD; repeated to a fixed point (see :func:`_fold`).
* **Latin look-alikes** that the table keeps as classes of their own are folded on top of it, from Unicode's
  character names (not a hand-written list): every *small capital* (``ʙ``, ``ᴍ``, ``ᴀ``, ``ꞯ``…) reads as its
  capital letter, and every Latin letter "WITH" an attachment that Unicode does not decompose (stroke, hook,
  belt…: ``ƀ``, ``ɫ``) reads as the plain letter. The Greek ``κ τ χ`` read as ``k t x`` (issue 23).
* **Glyphs with two readings**: a character that ``confusables.txt`` reads as ``i`` (``ı``, ``ɩ``, ``ɪ``, ``ι``,
  the Cyrillic palochka ``ӏ``…; newer versions of the file map the palochka to ``l``) may stand for ``l`` too, and
  ``o`` with an ogonek (``ǫ``) for ``q``. Such a character matches either reading at its position (:func:`meets`);
  ``i`` itself does not match ``l``.
* Names are NFKC-normalised first, so the letter-like symbols with a compatibility form (``ℓ``, ``ℐ``, ``𝐁``,
  full-width letters) are their letters; the others are in the table (``℮`` -> ``e``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path

TABLE = Path(__file__).with_name("uts39_confusables.tsv")
#: Placeholders for the glyphs with two readings (private-use code points, which names may not contain).
_I_OR_L, _O_OR_Q = "\U000f0001", "\U000f0002"
_MARKS = frozenset({_I_OR_L, _O_OR_Q})
#: Greek small letters that read as Latin in common fonts but that confusables.txt maps elsewhere (issue 23).
_GREEK_EXTRA = str.maketrans("κτχ", "ktx")
_LATIN_NAME = re.compile(r"LATIN (?:(SMALL|CAPITAL) LETTER|LETTER SMALL CAPITAL) ([A-Z])(?: WITH (.*))?")
#: Latin letters live in the first two planes: scanning them is enough (once, at the first name compared).
_SCAN = range(0x20000)


@functools.lru_cache(maxsize=1)
def prototypes() -> dict[str, str]:
    """Character -> its UTS #39 prototype (one or more characters), from the vendored ``confusables.txt``."""
    table: dict[str, str] = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            source, target = line.split("\t")
            table[chr(int(source, 16))] = "".join(chr(int(h, 16)) for h in target.split())
    return table


@functools.lru_cache(maxsize=1)
def _latin() -> tuple[dict[str, str], dict[str, str]]:
    """(Latin look-alike -> plain letter, glyph -> placeholder of its two readings), from the character names."""
    letters: dict[str, str] = {}
    two_ways = {c: _I_OR_L for c, target in prototypes().items() if target == "i" and c != "i"}
    for code in _SCAN:
        char = chr(code)
        match = _LATIN_NAME.fullmatch(unicodedata.name(char, ""))
        if match is None:
            continue
        size, letter, attachment = match.groups()
        if attachment and attachment.startswith("OGONEK") and letter == "O":
            two_ways[char] = _O_OR_Q
        elif size is None or (attachment and not unicodedata.decomposition(char)):
            letter = letter.lower() if size == "SMALL" else letter  # a small capital reads as the capital
            letters[char] = letter
    return letters, two_ways


@functools.lru_cache(maxsize=8192)
def _fold(char: str) -> str:
    """One character -> its prototype, with the Latin look-alikes folded in, to a fixed point.

    One pass is UTS #39's mapping; more are needed because some of the file's prototypes are not in NFD and their
    parts are sources themselves (``Ǆ`` -> ``DŽ``, whose caron maps to a breve; ``ҋ`` -> ``й̦``, whose ``и`` maps
    to ``ᴎ``). At the fixed point the skeleton is idempotent, so look-alikes of look-alikes meet.
    """
    table, (letters, _) = prototypes(), _latin()
    text = char
    for _ in range(8):
        folded = "".join(letters.get(c, c) for c in text)
        folded = unicodedata.normalize("NFD", "".join(table.get(c, c) for c in folded))
        folded = "".join(letters.get(c, c) for c in folded)
        if folded == text:
            break
        text = folded
    return text


def skeleton(text: str) -> str:
    """UTS #39 ``skeleton`` (NFD, each character replaced by its prototype, NFD) with the Latin look-alikes."""
    return unicodedata.normalize("NFD", "".join(_fold(c) for c in unicodedata.normalize("NFD", text)))


def name_keys(text: str) -> tuple[str, str, str]:
    """The comparison keys of a name: its skeleton with case folded three ways, letters and digits only.

    One way is not enough: ``BaseIine`` (capital I, a lookalike of ``l``) is caught only when the skeleton is
    taken before folding (folded, it is ``baseiine``); ``FL00R`` (zeros for ``O``) and small capitals only when
    the skeleton is folded and taken again; an all-capitals name in Cyrillic (``ВАЅЕLІNЕ``) only in upper case.
    A glyph with two readings stays a placeholder that :func:`meets` matches with either.
    """
    two_ways = _latin()[1]
    base = "".join(two_ways.get(c, c) for c in unicodedata.normalize("NFKC", text).translate(_GREEK_EXTRA))
    forms = (skeleton(base.casefold()), skeleton(skeleton(base).casefold()), skeleton(base.upper()))
    first, second, third = (
        "".join(c for c in form if unicodedata.category(c)[0] in "LN" or c in _MARKS) for form in forms
    )
    return first, second, third


_READINGS: dict[str, frozenset[str]] = {}


def _readings(char: str) -> frozenset[str]:
    if not _READINGS:  # what the placeholders stand for, in every key's form
        for mark, letters in ((_I_OR_L, "il"), (_O_OR_Q, "oq")):
            forms = {letter for word in (*letters, *letters.upper()) for key in name_keys(word) for letter in key}
            _READINGS[mark] = frozenset(forms)
    return _READINGS.get(char, frozenset())


def _same(key: str, other: str) -> bool:
    if len(key) != len(other):
        return False
    return all(a == b or b in _readings(a) or a in _readings(b) for a, b in zip(key, other, strict=True))


def meets(keys: tuple[str, str, str], other: tuple[str, str, str], *, prefix: bool = False) -> bool:
    """Whether two names' keys (:func:`name_keys`) are confusable, key by key (``prefix``: ``keys`` only start
    with ``other``). Across ways they would not be: ``i`` in upper case meets ``l``."""
    return any(_same(k[: len(o)] if prefix else k, o) for k, o in zip(keys, other, strict=True))


def confusable(a: str, b: str) -> bool:
    """Whether names ``a`` and ``b`` may be read as each other."""
    return meets(name_keys(a), name_keys(b))

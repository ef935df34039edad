"""Which Latin-script language an OCR text is in, from its most common short words.

Tesseract's orientation and script detection says "Latin" for English, German, French and Polish alike, and
English read on a German scan drops every umlaut and ß without lowering its confidence much (``für`` → ``fur``,
``Größe`` → ``Grose``). The function words of a language survive that reading (``und``, ``der``, ``nicht``,
``fur``), so counting them in the OCR text tells the language: :func:`guess_latin_language` names the language
whose words make up clearly more of the text than English's do. :mod:`.ocr` then reads the page again with that
language's pack first, or says which pack to install.

The word lists are written for this purpose: frequent words of each language, each also spelt as English OCR
spells it (diacritics dropped), and none that is a common English word (``in``, ``was``, ``also``, ``die`` is
kept: it is rare in English prose).
"""

from __future__ import annotations

import re

_WORDS: dict[str, str] = {
    "eng": "the and of to is that for with on are be this by as from at have has not was were which it you an or "
    "will their there been would can these they its but shall any all such other upon into than our",
    "deu": "der die das und ist nicht mit den dem des von zu auf sich ein eine einer eines einem wird werden sind "
    "bei nach oder wie aus im als auch noch nur wir ihr ihnen ihre sie uns bis zum zur dass daß fur für uber über "
    "durch wenn kann konnen können mussen müssen hat haben wurde wurden sehr unter diese dieser dieses",
    "fra": "le la les des et est une dans pour que qui pas sur avec du au aux ce cette sont par ne plus ou nous vous "
    "ils leur sa ses son mais elle ont etre être ete été tres très fait comme tout deux apres après",
    "spa": "el los las y es una del por con para se su al lo como mas más pero sus le ya muy sin sobre entre "
    "cuando tambien también esta está este fue ser son han desde todo nos hay donde",
    "ita": "il di che e per una del della dei delle non sono con gli nel nella alla si da al ha anche come piu più "
    "questo questa essere stato suo sua loro tra dopo molto ancora",
    "por": "o os de que e do da em um uma para com nao não por dos das no na se mais ao ou seu sua sao são como "
    "foi pelo pela ja já entre quando muito tambem também isso",
    "nld": "de het een en van is dat op te niet zijn met voor er die aan ook als bij door naar om uit dan wordt "
    "worden nog heeft hebben wel zich deze maar kan geen ons",
}
STOPWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _WORDS.items()}
#: English names, for messages.
LANGUAGE_NAMES = {
    "eng": "English",
    "deu": "German",
    "fra": "French",
    "spa": "Spanish",
    "ita": "Italian",
    "por": "Portuguese",
    "nld": "Dutch",
}
#: A guess needs at least this many words ...
MIN_WORDS = 12
#: ... this share of them among the language's function words ...
MIN_SHARE = 0.12
#: ... and this many times English's share.
OVER_ENGLISH = 2.0
_WORD = re.compile(r"[^\W\d_]+")


def language_shares(text: str) -> dict[str, float]:
    """For each language, the share of the text's words that are among its function words."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return dict.fromkeys(STOPWORDS, 0.0)
    return {lang: sum(w in stop for w in words) / len(words) for lang, stop in STOPWORDS.items()}


def guess_latin_language(text: str) -> str | None:
    """The Tesseract code of the non-English Latin-script language ``text`` is clearly in, else ``None``.

    >>> guess_latin_language("Die Strasse wird im nachsten Fruhjahr gesperrt, wahrend die Brucke repariert wird, "
    ...                      "und die Gebuhren fur das Verfahren werden nicht erstattet.")
    'deu'
    >>> guess_latin_language("The bridge will be closed next spring while the road is repaired by the city.")
    """
    if len(_WORD.findall(text)) < MIN_WORDS:
        return None
    shares = language_shares(text)
    english = shares.pop("eng")
    lang, share = max(shares.items(), key=lambda item: item[1])
    if share >= MIN_SHARE and share >= OVER_ENGLISH * english:
        return lang
    return None

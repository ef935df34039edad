"""Typed records of the MADQA metric and the one declaration of its reported scores.

Everything here is plain data (stdlib only). The dataset's columns are declared in
``loading_script/features.py``; :class:`Reference` is the metric's view of one labelled question record and a
contract test ties the two together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: Version of the scoring definitions; stored in every report so results stay comparable. 1.1.0: the Kuiper CI is
#: K ± q, q the bootstrap quantile of the curve's deviation range (1.0.0's percentile CI could exclude K).
METRIC_VERSION = "1.1.0"

#: Version of the results-line schema: `madqa run` writes it as ``schema_version`` in every line, next to
#: ``dataset`` (``{"name", "revision"}``). Lines without them (written before they existed) still parse; a newer
#: version than this one, or a dataset other than the gold's, only draws a warning from ``madqa evaluate``.
RECORD_SCHEMA_VERSION = 1

HopType = Literal["single", "cross_page", "cross_doc"]
HOP_TYPES: tuple[HopType, ...] = ("single", "cross_page", "cross_doc")

Mode = Literal["anls", "judge"]
MODES: tuple[Mode, ...] = ("anls", "judge")

KuiperOrder = Literal["block", "file"]
KUIPER_ORDERS: tuple[KuiperOrder, ...] = ("block", "file")

#: A judge verdict; ``unscored`` marks a failed judgement (never silently scored 0).
Verdict = Literal["correct", "partial", "incorrect", "unscored"]
VERDICT_SCORES: dict[str, float] = {"correct": 1.0, "partial": 0.5, "incorrect": 0.0}

#: Error categories of the paper's H.3 decomposition, in report order.
ErrorType = Literal["retrieval", "navigation", "comprehension", "no_answer"]
ERROR_TYPES: tuple[ErrorType, ...] = ("retrieval", "navigation", "comprehension", "no_answer")

#: An item is *correct* (the binary outcome used by Kuiper, the error taxonomy, the budget curve, κ and CTT)
#: when its score reaches this threshold: ANLS* ≥ 0.5 in ``anls`` mode, a ``correct`` or ``partial`` verdict in
#: ``judge`` mode. Accuracy itself averages the item scores (a partial verdict counts 0.5, as in the paper's F.1).
CORRECT_THRESHOLD = 0.5

#: Answers longer than this (total characters over the answer's strings) are incorrect without a judge call.
MAX_ANSWER_CHARS = 2000

# Input caps, enforced by the parser (``inputs.py``) in every mode, before any scoring work, so that the cost of
# scoring one results file is bounded: ANLS* takes time proportional to answer length x gold length (a 1 MB answer
# took ~23 s). Each cap is far above what a real agent writes: paper answers are a few words, this project's agents
# keep at most 50 answer strings / citations of at most 1,000 characters and 8,000 in all (``agents/harness/answer.py``
# cuts a model's answer to fit, so `madqa run` never writes a refused line), and the judge already calls an answer
# over MAX_ANSWER_CHARS incorrect. A value over a cap is an input error naming file, line and field (MAX_PAGE is
# the exception: see there). At the caps,
# ANLS* of one line against a 24-character gold answer takes about 130 ms of CPU (`madqa bench metric`).
#: Longest results line (characters, before JSON parsing); a line also carries search history and trajectory.
MAX_LINE_CHARS = 2_000_000
#: Longest single answer string (characters).
MAX_ANSWER_STRING_CHARS = 4000
#: Largest total answer size of one line (characters over all its answer strings).
MAX_ANSWER_LINE_CHARS = 8000
#: Most answer strings in one line.
MAX_ANSWER_ITEMS = 200
#: Most citations in one line.
MAX_CITATIONS = 1000
#: Largest page number a gold page can have. Not a refusal: a citation above it is kept and scored as a wrong
#: citation (models cite pages such as 1506387294), counted and warned about once per file (``notes.py``).
MAX_PAGE = 100_000
#: Largest effort value (``steps``, ``iterations``, or the length of ``search_history``).
MAX_EFFORT = 100_000
#: Longest ``id`` and ``question`` of a results line (characters); they are echoed in reports and messages.
MAX_ID_CHARS = 1000
MAX_QUESTION_CHARS = 20_000

#: Where an item's score came from.
ScoreSource = Literal["anls", "exact", "judge", "empty", "too_long", "missing", "unscored"]


@dataclass(frozen=True, order=True)
class Citation:
    """One cited (or gold) evidence unit.

    Attributes:
        document: document identifier as written in the file (matching normalises it, see ``scoring.doc_key``).
        page: 1-based page number, or ``None`` for a citation of a whole document (counts for Doc F1 only).
    """

    document: str
    page: int | None


@dataclass(frozen=True)
class DatasetRef:
    """The dataset a results line says it was produced on (either part may be unknown).

    Attributes:
        name: dataset spec (``sample``, a Hub id, a folder path), ``None`` when unstated.
        revision: what version of it (sample version and seed, the Hub commit, a digest), ``None`` when unknown.
    """

    name: str | None
    revision: str | None


@dataclass(frozen=True)
class Prediction:
    """One line of a results file, validated.

    Attributes:
        id: question id, or ``None`` when the line has none (then ``question`` is used to match it).
        question: question text as given in the line (``None`` if absent).
        answer: answer strings; an empty tuple is *no answer*.
        citations: cited evidence, in file order (duplicates allowed; scoring uses unique units).
        steps: effort (number of search steps), ``None`` when the line gives none.
        line: 1-based line number in the source (0 when not from a file).
        schema_version: the line's ``schema_version`` (``None`` when absent or malformed); provenance only.
        dataset: the line's ``dataset`` (``None`` when absent or malformed); provenance only.
    """

    id: str | None
    question: str | None
    answer: tuple[str, ...]
    citations: tuple[Citation, ...] = ()
    steps: int | None = None
    line: int = 0
    schema_version: int | None = field(default=None, compare=False)
    dataset: DatasetRef | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Reference:
    """One labelled gold question.

    Attributes:
        id: question id.
        question: question text.
        answer_variants: accepted answers; each variant is a list of strings.
        evidence: the minimal gold evidence pages.
        hop_type: ``single`` / ``cross_page`` / ``cross_doc``.
        domain: document domain (``"unknown"`` when absent).
        document_category: document category (``"unknown"`` when absent).
    """

    id: str
    question: str
    answer_variants: tuple[tuple[str, ...], ...]
    evidence: tuple[Citation, ...]
    hop_type: HopType
    domain: str = "unknown"
    document_category: str = "unknown"


@dataclass(frozen=True)
class ItemScore:
    """Per-item scores of one system on one gold question.

    Attributes:
        id: gold question id.
        score: 1 / 0.5 / 0, or ``None`` when unscored (judge failure).
        correct: ``score >= CORRECT_THRESHOLD`` (``None`` when unscored).
        anls: ANLS* (max over variants; 0 when missing).
        page_f1: Page F1 (F.2).
        doc_f1: Doc F1 (F.2).
        steps: effort, ``None`` when unknown or missing.
        error: H.3 category for an incorrect item, else ``None``.
        source: where the score came from.
        missing: no prediction for this gold item.
        order: position of the prediction's line in the file (for the ``file`` Kuiper order); -1 when missing.
    """

    id: str
    score: float | None
    correct: bool | None
    anls: float
    page_f1: float
    doc_f1: float
    steps: int | None
    error: ErrorType | None
    source: ScoreSource
    missing: bool = False
    order: int = -1


@dataclass(frozen=True)
class Calibration:
    """Judge calibration against human labels (Lee et al.): specificity, sensitivity and their sample sizes.

    Attributes:
        q0: specificity, P(judge says incorrect | human says incorrect).
        q1: sensitivity, P(judge says correct | human says correct).
        m0: number of human-incorrect calibration items.
        m1: number of human-correct calibration items.
        source: where the values come from (a file path or ``"paper"``).
    """

    q0: float = 1.0
    q1: float = 0.98
    m0: int = 48
    m1: int = 152
    source: str = "paper"


#: The paper's calibration of its judge (F.1): q0 = 1.000, q1 = 0.980 on 48 + 152 human-labelled items. These are
#: the error rates of that judge (:data:`PAPER_JUDGE`): they apply to it only (:func:`.accuracy.calibration_for`).
DEFAULT_CALIBRATION = Calibration()
#: The paper's judge model (F.1: Gemini 2.5 Flash), whose error rates :data:`DEFAULT_CALIBRATION` measured.
PAPER_JUDGE = "gemini-2.5-flash"


@dataclass(frozen=True)
class MetricSpec:
    """One reported score, for tables and leaderboard columns.

    Attributes:
        key: key in the JSON report.
        label: column label.
        higher_is_better: sort direction.
        percent: whether the value is a fraction shown as a percentage.
    """

    key: str
    label: str
    higher_is_better: bool
    percent: bool = True
    description: str = field(default="", compare=False)


#: The one source for leaderboard columns and the CLI table.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("accuracy", "Accuracy", True, True, "bias-corrected in judge mode; ANLS* ≥ 0.5 in anls mode"),
    MetricSpec("accuracy_raw", "Accuracy (raw)", True, True, "mean item score before bias correction"),
    MetricSpec("anls", "ANLS*", True, True, "mean ANLS*, max over answer variants"),
    MetricSpec("page_f1", "Page F1", True, True, "F1 of unique cited pages vs gold pages"),
    MetricSpec("doc_f1", "Doc F1", True, True, "F1 of unique cited documents vs gold documents"),
    MetricSpec("kuiper", "Kuiper", False, False, "range of cumulative differences over effort (raw, paper scale)"),
    MetricSpec("kuiper_normalized", "Kuiper/N", False, False, "Kuiper divided by the number of items used"),
    MetricSpec("wasted_effort_ratio", "Wasted effort", False, False, "mean steps incorrect / mean steps correct"),
)

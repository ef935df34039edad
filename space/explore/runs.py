"""Results files joined with the gold set: one :class:`RunData` per file, one :class:`Workspace` per explorer.

Parsing goes through the metric's own validation (:func:`madqa.metric.inputs.parse_prediction`, so a bad line
is reported as ``FILE line N: field …``), scoring and the report through :mod:`madqa.metric.report` with the
defaults of ``madqa evaluate`` (``anls`` mode, block Kuiper order, 1000 resamples, seed 0): the numbers the
explorer shows are the numbers ``madqa evaluate --json`` prints. The raw lines are kept next to the scores (the
metric ignores ``search_history`` contents, ``trajectory``, ``usage``…, which the explorer shows).

Which gold a workspace holds is the caller's business (:func:`load_gold_references`): the Space passes dev or train
only; ``madqa view --split test`` works only where the labels are held locally.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from madqa.metric.inputs import InputError, parse_prediction, parse_references
from madqa.metric.jsonl import json_lines
from madqa.metric.report import ReportOptions, ScoredRun, build_report, score_predictions
from madqa.metric.schema import ItemScore, Prediction, Reference

#: Bootstrap resamples of the Kuiper CI, as ``madqa evaluate`` (so both print the same CI).
DEFAULT_RESAMPLES = 1000
#: Splits whose labels are public (the only ones the Space explores).
PUBLIC_SPLITS = ("dev", "train")


class ExploreError(ValueError):
    """A results file or split that cannot be explored; the message names the file, line and field."""


@dataclass
class RunData:
    """One results file joined with the gold set.

    Attributes:
        name: short unique label (the file name without ``.jsonl``).
        source: where the lines came from (a path or an upload name).
        scored: the metric's per-item scores, in gold order, and the matching.
        report: :func:`madqa.metric.report.build_report`'s report (the ``madqa evaluate --json`` numbers).
        items: per-item scores by gold id.
        records: the raw results line of each matched gold id (missing ids have none).
        meta: agent, model and dataset named by the file's first line, when given.
    """

    name: str
    source: str
    scored: ScoredRun
    report: dict[str, Any]
    items: dict[str, ItemScore]
    records: dict[str, dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Workspace:
    """Gold questions of one split and the runs over them (at least one)."""

    split: str
    references: list[Reference]
    runs: list[RunData]
    dataset: str | None = None
    refs: dict[str, Reference] = field(init=False)
    position: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.refs = {r.id: r for r in self.references}
        self.position = {r.id: i for i, r in enumerate(self.references)}

    def run(self, name: str | None) -> RunData:
        """The run called ``name`` (the first one for ``None`` or an unknown name)."""
        for run in self.runs:
            if run.name == name:
                return run
        return self.runs[0]

    @property
    def names(self) -> list[str]:
        """Run names in the order given."""
        return [r.name for r in self.runs]


def parse_lines(text: str, source: str) -> tuple[list[Prediction], dict[int, dict[str, Any]]]:
    """Validated predictions and the raw line objects by line number.

    Raises:
        ExploreError: every invalid line (file, line and field; as ``madqa evaluate``), or an empty file.
    """
    rows, problems = json_lines(text, source)
    predictions: list[Prediction] = []
    raw: dict[int, dict[str, Any]] = {}
    for number, value in rows:
        try:
            predictions.append(parse_prediction(value, f"{source} line {number}", line=number))
            raw[number] = value
        except InputError as exc:
            problems.add(exc)
    if problems:
        raise ExploreError(_problem_text(problems.error(), source))
    return predictions, raw


def _problem_text(exc: InputError, source: str) -> str:
    if exc.count == 1:
        return exc.problems[0]
    more = "" if exc.count == len(exc.problems) else f" (the first {len(exc.problems)} shown)"
    return f"{source}: {exc.count} problems{more}: " + "; ".join(exc.problems)


def _meta(raw: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    first = next(iter(raw.values()), {})
    return {k: first.get(k) for k in ("agent", "model", "dataset") if first.get(k) is not None}


def load_run(
    text: str,
    source: str,
    references: Sequence[Reference],
    *,
    name: str | None = None,
    split: str = "dev",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    refuse_unmatched: Callable[[str, int, int, int], None] | None = None,
) -> RunData:
    """Parse, match and score one results text against ``references``.

    ``refuse_unmatched(source, lines, missing, gold)``, when given, is called first with the counts and may raise
    its own error for a file that matches nothing (``madqa view``: the words of ``madqa evaluate``).

    Raises:
        ExploreError: invalid lines, duplicate ids, or a file none of whose lines is a question of ``split`` (a
            results file of another split: its ids are not in this gold set).
    """
    predictions, raw = parse_lines(text, source)
    try:
        scored = score_predictions(predictions, references)
    except InputError as exc:
        raise ExploreError(_problem_text(exc, source)) from None
    if refuse_unmatched is not None:
        refuse_unmatched(source, len(predictions), len(scored.matching.missing_ids), len(references))
    matched = len(references) - len(scored.matching.missing_ids)
    if matched == 0:
        raise ExploreError(
            f"{source}: none of its {len(predictions)} line(s) is a question of the {split} split (e.g. id "
            f"{scored.matching.unknown[0] if scored.matching.unknown else '?'}); results of another split cannot "
            f"be explored against {split} gold"
        )
    report = build_report(scored, references, ReportOptions(n_resamples=resamples, seed=seed))
    records = {
        ref.id: raw[pred.line]
        for ref, pred in zip(references, scored.matching.predictions, strict=True)
        if pred is not None and pred.line in raw
    }
    items = {it.id: it for it in scored.items}
    label = name or Path(source).name.removesuffix(".jsonl").removesuffix(".json") or "run"
    return RunData(label, source, scored, report, items, records, _meta(raw))


def unique_names(names: Sequence[str]) -> list[str]:
    """Names made unique by a ``#2``, ``#3`` … suffix.

    >>> unique_names(["r", "s", "r"])
    ['r', 's', 'r#2']
    """
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def open_workspace(
    sources: Sequence[tuple[str, str]],
    references: Sequence[Reference],
    *,
    split: str,
    dataset: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    refuse_unmatched: Callable[[str, int, int, int], None] | None = None,
) -> Workspace:
    """A workspace over ``(source, text)`` pairs (names from the sources, made unique; ``refuse_unmatched``: see
    :func:`load_run`)."""
    if not sources:
        raise ExploreError("no results file given")
    names = unique_names([Path(s).name.removesuffix(".jsonl").removesuffix(".json") or "run" for s, _ in sources])
    runs = [
        load_run(
            text, source, references, name=name, split=split, resamples=resamples, refuse_unmatched=refuse_unmatched
        )
        for (source, text), name in zip(sources, names, strict=True)
    ]
    return Workspace(split, list(references), runs, dataset)


def read_text(path: str | Path) -> str:
    """A results file as UTF-8 text.

    Raises:
        ExploreError: the file is missing or not UTF-8 text.
    """
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExploreError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExploreError(f"{path}: cannot read it as UTF-8 text ({exc})") from None


def load_gold_references(split: str, dataset: str | None = None, *, public_only: bool = False) -> list[Reference]:
    """Gold references of ``split`` through the dataset loader (test: the local private labels only).

    Args:
        split: ``dev``, ``train`` or ``test``.
        dataset: dataset spec (``None``: the default dataset).
        public_only: refuse every split but dev and train, before anything is read (the Space sets it).

    Raises:
        ExploreError: a refused or unavailable split.
    """
    if public_only and split not in PUBLIC_SPLITS:
        raise ExploreError(
            f"only the {' and '.join(PUBLIC_SPLITS)} splits can be explored here; the {split} "
            "split's labels are hidden (score test results on the leaderboard)"
        )
    from madqa.loading_script import load

    try:
        records = load.load_gold(split, dataset)
    except (load.DatasetUnavailableError, FileNotFoundError, ValueError) as exc:
        raise ExploreError(f"cannot load gold for split {split!r}: {exc}") from None
    try:
        return parse_references(records, f"split {split}")
    except InputError as exc:
        raise ExploreError(_problem_text(exc, f"split {split}")) from None


def record_json(record: Mapping[str, Any] | None) -> str:
    """A raw line as pretty JSON (for the "raw line" view)."""
    return json.dumps(record, ensure_ascii=False, indent=1) if record is not None else "(no results line)"

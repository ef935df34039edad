"""The gold that results files are scored against by default: the dataset and split their lines record.

One home for ``madqa evaluate``, ``compare``, ``figures`` and ``view`` (issue 41, item 4). ``madqa run`` writes the
dataset (``dataset.name``) and split (``config.split``) into every line; without ``--dataset``/``--gold`` and
``--split`` the files are scored against what their lines record, else ``$MADQA_DATASET`` or the sample, and
``dev``. Explicit options win. Refused in one line (:class:`~madqa.cli.errors.UserError`, exit 2): a file whose
lines name two datasets or splits, files that record different datasets or splits from each other (where the
recorded one would be used), and a file none of whose lines is a question of the gold it was scored against.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from madqa.cli.errors import UserError

logger = logging.getLogger(__name__)


def read_text(path: Path) -> str:
    """A results or gold file as UTF-8 text; a missing or unreadable file is a one-line :class:`UserError`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read it as UTF-8 text ({exc})") from None


def recorded_gold(path: Path) -> tuple[str | None, str | None]:
    """``(dataset name, split)`` that the lines of results file ``path`` record (``None`` where none does).

    Reads each JSON line's ``dataset.name`` and ``config.split`` leniently (a line that does not parse is left to
    the results parser, which names it). Raises :class:`UserError` when the lines name more than one dataset or
    split: such a file cannot be scored against one gold. Lines of one dataset at several revisions are scored
    (their ids are that dataset's); the provenance check warns about them.
    """
    datasets: dict[str, int] = {}
    splits: dict[str, int] = {}
    for line in read_text(path).splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        ref = row.get("dataset")
        if isinstance(ref, dict) and ref.get("name"):
            datasets[str(ref["name"])] = datasets.get(str(ref["name"]), 0) + 1
        config = row.get("config")
        if isinstance(config, dict) and isinstance(config.get("split"), str):
            splits[config["split"]] = splits.get(config["split"], 0) + 1
    for what, seen in (("datasets", datasets), ("splits", splits)):
        if len(seen) > 1:
            listed = ", ".join(f"{n} line(s) of {name}" for name, n in seen.items())
            raise UserError(
                f"{path}: its lines were run on {len(seen)} {what} ({listed}); score each one's lines apart"
            )
    return next(iter(datasets), None), next(iter(splits), None)


@dataclass(frozen=True)
class GoldChoice:
    """The gold chosen for a set of results files (:func:`choose_gold`).

    Attributes:
        split: the split scored against (``--split``, else the recorded one, else ``dev``; unused with ``gold``).
        dataset: the dataset spec (``--dataset``, else the recorded one, else ``None``: the default dataset).
        gold: the ``--gold`` file, if any.
        from_lines: the dataset is the one the files recorded, not one the user named.
        recorded: per file, the ``(dataset, split)`` its lines record.
    """

    split: str
    dataset: str | None
    gold: Path | None
    from_lines: bool = False
    recorded: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def described(self) -> str:
        """The gold in words: ``the --gold file FILE`` or ``split 'dev' of dataset 'sample'``."""
        if self.gold is not None:
            return f"the --gold file {self.gold}"
        from madqa.loading_script.load import dataset_spec

        return f"split {self.split!r} of dataset {dataset_spec(self.dataset)!r}"

    def load_failed(self, exc: UserError) -> UserError:
        """The error for a gold that cannot be loaded: it names the file that chose it, when a file did."""
        if not self.from_lines:
            return exc
        chosen_by = ", ".join(p for p, (d, _) in self.recorded.items() if d == self.dataset)
        return UserError(f"{exc} (the dataset {chosen_by} was run on; pass --dataset or --gold)")

    def refuse_unmatched(self, path: Path | str, n_lines: int, n_missing: int, n_gold: int) -> None:
        """Raise :class:`UserError` when file ``path`` has lines and none of them is a question of the gold: its
        report would be a 0 % of the wrong gold, never worth printing."""
        if not n_lines or n_missing != n_gold:
            return
        label = f"{self.described()}, the gold it was scored against"
        dataset, split = self.recorded.get(str(path), (None, None))
        if self.gold is None and dataset is not None and (dataset, split or self.split) != (self.dataset, self.split):
            label += f" (its lines record split {split or self.split!r} of dataset {dataset!r})"
        raise UserError(
            f"{path}: none of its {n_lines} line(s) is a question of {label}; "
            "pass the --dataset and --split it was run on (or --gold FILE)"
        )


def _one_value(recorded: dict[str, str], what: str, option: str) -> str | None:
    """The one value the files record, ``None`` when none does; files recording different ones are refused."""
    if len(set(recorded.values())) > 1:
        listed = "; ".join(f"{path}: {value}" for path, value in recorded.items())
        raise UserError(
            f"the results files were run on different {what} ({listed}); "
            f"give files of one {what[:-1]} (or pass {option})"
        )
    return next(iter(recorded.values()), None)


def choose_gold(
    paths: Sequence[Path], split: str | None = None, dataset: str | None = None, gold: Path | None = None
) -> GoldChoice:
    """The gold ``paths`` are scored against: the options given, else what the files' lines record (module
    docstring). Raises :class:`UserError` for a file mixing datasets or splits, and for files recording different
    ones where the recorded value would be used."""
    recorded = {str(p): recorded_gold(p) for p in paths}
    from_lines = False
    if split is None:
        split = _one_value({p: s for p, (_, s) in recorded.items() if s is not None}, "splits", "--split") or "dev"
    if gold is None and dataset is None:
        dataset = _one_value({p: d for p, (d, _) in recorded.items() if d is not None}, "datasets", "--dataset")
        from_lines = dataset is not None
        if from_lines:
            logger.info("scoring against split %s of %s, the dataset the files were run on", split, dataset)
    return GoldChoice(split, dataset, gold, from_lines, recorded)

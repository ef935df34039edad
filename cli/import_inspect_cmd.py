"""``madqa import-inspect LOG… -o results.jsonl``: inspect_ai logs of the ``madqa/bm25`` task as results lines.

Each LOG is an inspect log file (``.eval`` or ``.json``) or a folder of them (its ``*.eval`` and ``*.json`` files,
inspect's ``logs.json`` listing left out). Every sample of ``--epoch`` (1) becomes one results line
(:mod:`madqa.agents.integrations.inspect_task.lines`) in the format ``madqa run`` writes, which ``madqa evaluate`` and
``madqa view`` read. All logs must be of one split (``--split`` names it and refuses others) and no question may appear
twice. ``-o`` is written whole (an existing file only with ``--overwrite``). Needs the ``inspect`` extra.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

from madqa.cli import conventions
from madqa.cli.errors import UserError

HELP = "turn inspect_ai logs of the madqa/bm25 task into results lines (then `madqa evaluate` scores them)"
EXAMPLES = ("madqa import-inspect logs/ -o results.jsonl --overwrite", "madqa import-inspect a.eval b.eval -o r.jsonl")

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``import-inspect`` arguments."""
    parser.add_argument("logs", nargs="+", type=Path, metavar="LOG", help="inspect log file(s) or folder(s) of them")
    conventions.add_output_file(parser, "results file", required=True, metavar="results.jsonl")
    parser.add_argument("--split", help="the split the logs must be of (default: theirs; all must agree)")
    parser.add_argument("--epoch", type=int, default=1, help="which epoch's samples to import")
    conventions.add_overwrite(parser, "the -o file", old=("--force",))


def log_files(paths: list[Path]) -> list[Path]:
    """The log files named, folders expanded (sorted; inspect's ``logs.json`` listing left out)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".eval", ".json") and p.name != "logs.json")
            if not found:
                raise UserError(f"{path}: no inspect logs (*.eval, *.json) in this folder")
            out.extend(found)
        else:
            out.append(path)
    return out


def run(args: argparse.Namespace) -> int:
    """Read the logs, check them, write the results lines."""
    from madqa.agents.harness.deps import require_extra

    require_extra("inspect", "madqa import-inspect")
    from madqa.agents.harness.record import ResultsWriter
    from madqa.agents.integrations.inspect_task.lines import LogError, log_lines, read_log, task_settings

    if args.epoch < 1:
        raise UserError("--epoch must be at least 1")
    if args.output.exists() and not args.overwrite:
        raise UserError(f"{args.output} exists; pass --overwrite to replace it")
    lines: list[dict[str, Any]] = []
    origin: dict[str, Path] = {}
    split = args.split
    for path in log_files(args.logs):
        try:
            log = read_log(path)
            split = split or task_settings(log).get("split")
            new = log_lines(log, split=split, epoch=args.epoch, source=str(path))
        except LogError as exc:
            raise UserError(f"{path}: {exc}") from None
        if log.status != "success":
            logger.warning(
                "%s: the eval's status is %r; importing the %d sample(s) it holds", path, log.status, len(new)
            )
        for line in new:
            if line["id"] in origin:
                raise UserError(f"{path}: question {line['id']} is also in {origin[line['id']]}; import each once")
            origin[line["id"]] = path
        lines.extend(new)
    if not lines:
        raise UserError(f"no samples of epoch {args.epoch} in the logs")
    tmp = args.output.with_name(f".{args.output.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    with ResultsWriter(tmp) as writer:
        for line in lines:
            writer.write(line)
    os.replace(tmp, args.output)
    errors = sum(1 for line in lines if line["error"])
    dataset = lines[0]["config"].get("dataset")
    logger.info(
        "wrote %d line(s) (%d with an error) to %s; score them: %s",
        len(lines),
        errors,
        args.output,
        conventions.score_command(args.output, split, dataset),
    )
    return 0

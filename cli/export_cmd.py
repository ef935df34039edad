"""``madqa export traces RUN --output-dir DIR``: a results file as sessions of the Hub's trace format.

One STS-Format session per question (:mod:`madqa.agents.export.sts`): ``DIR/<question id>.jsonl``, a ``session``
header (harness ``madqa``, this version, the line's settings and, unless ``--no-score``, its score against the gold
the lines record, as ``madqa evaluate`` scores it) and the messages of its trajectory, secrets and local paths
redacted (:mod:`madqa.agents.export.redact`). Any results file works: ``madqa run`` of every agent, ``madqa human``,
``madqa import-inspect``. An agent's line records durations, not times: its session starts at the file's
modification time less the line's ``elapsed_s`` (approximate; the header says ``timestamps: "derived"``).
``madqa publish traces DIR --repo ORG/NAME`` uploads the folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from madqa.cli import conventions
from madqa.cli.errors import UserError

HELP = "write a results file as Hub agent traces (Session Trace Simple Format), one session per question"
EXAMPLES = (
    "madqa export traces results.jsonl --output-dir traces/",
    "madqa export traces human-dev-a.jsonl --output-dir traces/ --no-score --overwrite",
)
logger = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``export traces``."""
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    traces = sub.add_parser("traces", help="one STS-Format session file per question of a results file")
    traces.add_argument("run", type=Path, metavar="RUN", help="a results file (madqa run, human, import-inspect)")
    conventions.add_output_dir(traces, "folder the session files are written to", required=True)
    conventions.add_overwrite(traces, "session files already in the folder")
    traces.add_argument("--no-score", action="store_true", help="leave the score out (no gold needed)")
    conventions.add_gold_arguments(traces, "labelled split the scores are computed against", recorded_default=True)
    conventions.add_json_flag(traces, "the summary")
    conventions.add_examples(traces, conventions.examples_for("madqa export traces", EXAMPLES))


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The results lines of ``path``; a line that is not a JSON object with ``id`` and ``question`` is refused."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text; expected a results JSONL file") from None
    from madqa.metric.inputs import InputError, read_jsonl_text

    try:  # the metric's JSONL reader: the same line splitting, size cap and messages as `madqa evaluate`
        rows = read_jsonl_text(text, str(path))
    except InputError as exc:
        raise UserError(str(exc)) from None
    lines: list[dict[str, Any]] = []
    for number, line in rows:
        if not isinstance(line, dict) or line.get("id") is None or not isinstance(line.get("question"), str):
            raise UserError(f"{path} line {number}: not a results line (it needs 'id' and a 'question' string)")
        lines.append(line)
    if not lines:
        raise UserError(f"{path}: no results lines")
    return lines


#: Characters that json.dumps(ensure_ascii=False) leaves raw inside strings but that str.splitlines (and some
#: viewers) treat as line ends: escaped, so that any reader sees one record per line.
_LINE_BREAKERS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def jsonl_line(record: dict[str, Any]) -> str:
    """One JSON Lines record, UTF-8 text kept readable, with no character any reader could take for a line end."""
    return json.dumps(record, ensure_ascii=False, default=str).translate(_LINE_BREAKERS) + "\n"


def file_name(question_id: Any) -> str:
    """The session file of a question: its id made safe as a file name."""
    return (_UNSAFE.sub("_", str(question_id)).strip("._") or "question") + ".jsonl"


def harness_version() -> str:
    """The installed madqa's version (the sessions' ``harnessVersion``; ``unknown`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("madqa")
    except PackageNotFoundError:
        return "unknown"


def item_scores(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The per-question scores of the run, as ``madqa evaluate --per-item`` reports them."""
    from madqa.cli.evaluate_cmd import evaluate

    report = evaluate(args.run, split=args.split, dataset=args.dataset, gold=args.gold, per_item=True, resamples=1)
    keep = ("score", "correct", "anls", "page_f1", "doc_f1", "error", "source")
    scores = {str(item["id"]): {k: item.get(k) for k in keep} for item in report.get("items", [])}
    for score in scores.values():
        score["mode"] = report.get("mode")
    return scores


def run(args: argparse.Namespace) -> int:
    """Convert the run and write the session files."""
    from madqa.agents.export.redact import Redactor
    from madqa.agents.export.sts import session_records

    lines = read_lines(args.run)
    names: dict[str, str] = {}
    for line in lines:
        name = file_name(line["id"])
        if name in names:
            raise UserError(f"{args.run}: question {line['id']} appears twice (or clashes with {names[name]})")
        names[name] = str(line["id"])
    out: Path = args.output_dir
    if out.exists() and not out.is_dir():
        raise UserError(f"--output-dir {out}: exists and is not a folder")
    present = [n for n in names if (out / n).exists()]
    if present and not args.overwrite:
        raise UserError(f"{out}: {len(present)} session file(s) exist (e.g. {present[0]}); pass --overwrite")
    try:
        scores = {} if args.no_score else item_scores(args)
    except UserError as exc:
        raise UserError(f"{exc} (or pass --no-score to export without scores)") from None
    finished_ms = round(args.run.stat().st_mtime * 1000)
    redactor = Redactor()
    tmp = out.with_name(f".{out.name}.export-tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for line in lines:
        elapsed = line.get("elapsed_s")
        start = finished_ms - round(1000 * elapsed) if isinstance(elapsed, (int, float)) else finished_ms
        records = session_records(
            line, version=harness_version(), score=scores.get(str(line["id"])), start_ms=start, redactor=redactor
        )
        text = "".join(jsonl_line(r) for r in records)
        (tmp / file_name(line["id"])).write_text(text, encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(tmp.iterdir()):
        path.replace(out / path.name)
    tmp.rmdir()
    summary = {"folder": str(out), "sessions": len(lines), "scored": sum(1 for k in names.values() if k in scores)}
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        logger.info("wrote %d session(s) (%d scored) to %s", summary["sessions"], summary["scored"], out)
    return 0

"""``madqa calibrate``: judge specificity/sensitivity from human labels → a calibration file for ``evaluate``.

Input: JSONL, one calibration item per line, ``{"human": ..., "judge": ...}`` (other keys ignored). ``human`` is
binary (``correct``/``incorrect``, ``true``/``false``, 1/0); ``judge`` may also be ``partial`` (0.5). Output: a JSON
file ``{"q0", "q1", "m0", "m1", "source", "n"}`` that ``madqa evaluate --calibration`` and the metric accept.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from madqa.cli import conventions
from madqa.cli.errors import UserError

HELP = "estimate the judge's q0/q1 (specificity/sensitivity) from human labels and write a calibration file"
EXAMPLES = ("madqa calibrate labels.jsonl -o judge_calibration.json --json",)

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``calibrate`` arguments."""
    parser.add_argument("labels", type=Path, help='JSONL of {"human": ..., "judge": ...} label pairs')
    conventions.add_output_file(parser, "calibration file to write", default=Path("judge_calibration.json"))
    conventions.add_json_flag(parser, "the calibration")


def run(args: argparse.Namespace) -> int:
    """Compute the calibration, write it, print it."""
    from madqa.metric.accuracy import calibration_from_labels
    from madqa.metric.calibration_inputs import parse_calibration_labels
    from madqa.metric.inputs import InputError, read_jsonl_text

    try:
        text = args.labels.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{args.labels}: cannot read it ({exc})") from None
    try:
        human, judge = parse_calibration_labels(read_jsonl_text(text, str(args.labels)), str(args.labels))
        calibration = calibration_from_labels(human, judge, source=str(args.labels))
    except InputError as exc:
        raise UserError(str(exc)) from None
    except ValueError as exc:
        raise UserError(f"{args.labels}: {exc}") from None
    data = {**vars(calibration), "n": len(human)}
    try:
        args.output.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{args.output}: cannot write it ({exc})") from None
    logger.info("wrote %s", args.output)
    if args.json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        sys.stdout.write(
            f"q0 (specificity) = {calibration.q0:.4f} on m0 = {calibration.m0} human-incorrect items\n"
            f"q1 (sensitivity) = {calibration.q1:.4f} on m1 = {calibration.m1} human-correct items\n"
            f"written to {args.output}\n"
        )
    return 0

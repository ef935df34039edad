"""``--model-option KEY=VALUE``, shared by `madqa run` (the agent's model) and `madqa evaluate` (the judge).

Apart from :mod:`madqa.cli.run_cmd` so that `madqa evaluate` does not import the run command and the agent
registry it needs (issue 47: start-up of the commands users start most).
"""

from __future__ import annotations

import argparse
from typing import Any

from madqa.cli.errors import UserError


def add_model_option_argument(parser: argparse.ArgumentParser) -> None:
    """``--model-option KEY=VALUE`` (repeatable), shared with `madqa evaluate` (the judge)."""
    from madqa.agents.models.options import KNOWN_OPTIONS

    known = "; ".join(f"{k}: {h}" for k, (_, h) in KNOWN_OPTIONS.items() if k not in ("api_key",))
    parser.add_argument(
        "--model-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"provider setting, repeatable (also for the code agent's sub-model); {known}",
    )


def model_options_of(args: argparse.Namespace) -> dict[str, Any]:
    """The typed ``--model-option`` pairs, with ``--api-base`` (raises :class:`UserError` for a bad pair)."""
    from madqa.agents.models.options import ModelOptionError, parse_model_options

    base = {"api_base": args.api_base} if getattr(args, "api_base", None) else {}
    try:
        return parse_model_options(getattr(args, "model_option", None) or [], base=base)
    except ModelOptionError as exc:
        raise UserError(str(exc)) from None

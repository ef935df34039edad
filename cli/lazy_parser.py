"""Subcommands whose modules are imported only when chosen: ``madqa --help`` and ``madqa evaluate …`` import one
command module (or none), not all of them with their dependencies (issue 47: start-up).

A subcommand is listed with its name and one-line help up front; its options (``configure``) are added when the
parser meets its name, so ``madqa X --help`` and every parse stay what they were. :func:`configure_everything`
adds them all at once, for what inspects the whole tree (the conventions tests, the docs-block check).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

Configure = Callable[[argparse.ArgumentParser], None]


class LazySubParsersAction(argparse._SubParsersAction):
    """argparse's subcommands, each configured by a callback the first time it is chosen (or forced)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, Configure] = {}

    def add_lazy(self, name: str, help_line: str, configure: Configure, **kwargs: Any) -> argparse.ArgumentParser:
        """Add subcommand ``name`` now (shown in the parent's help) and call ``configure`` on it when it is chosen."""
        parser = self.add_parser(name, help=help_line, description=help_line, **kwargs)
        self._pending[name] = configure
        return parser

    def configure(self, name: str) -> None:
        """Add the options of subcommand ``name`` if they are not there yet."""
        configure = self._pending.pop(name, None)
        if configure is not None:
            configure(self._name_parser_map[name])

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if values:  # an unknown name is left to argparse, which names the choices
            self.configure(str(values[0]))
        super().__call__(parser, namespace, values, option_string)


def configure_everything(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Configure every pending subcommand under ``parser``, nested ones included; returns ``parser``."""
    for action in parser._actions:
        if isinstance(action, LazySubParsersAction):
            for name in list(action._pending):
                action.configure(name)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                configure_everything(sub)
    return parser

"""``madqa run``'s agent options, generated from each agent's options class (``agents/baselines/<agent>/options.py``).

Every option of a built-in agent is a flag ``--field-name`` (typed, with the class's choices) that any agent's run
may parse: the framework then refuses one the chosen agent does not have, naming the agents that have it
(:func:`madqa.agents.harness.registry.check_config`). ``--agent-option KEY=VALUE`` (repeatable) sets any option of
the chosen agent, typed by its class: how a plugin agent's options are given. The flags are parsed with no default,
so a run holds only the options given and the class gives the rest.

``--help`` shows one section per agent with its own help and defaults (``madqa run --agent X --help``: X's only;
the ``--agent`` value is read before the other arguments are parsed: :class:`RunParser`). Nothing here imports an
agent: the options classes are light.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from madqa.agents.harness import registry
from madqa.agents.harness.options import (
    AgentOptions,
    OptionError,
    RunError,
    flag_of,
    option_type,
    parse_option_value,
)
from madqa.cli import conventions
from madqa.cli.errors import UserError

logger = logging.getLogger(__name__)

#: Where the given agent options are kept in the parsed arguments.
GIVEN = "agent_options_given"


def _kwargs(cls: type[AgentOptions], field: dataclasses.Field[Any], *, shown: bool) -> dict[str, Any]:
    """``add_argument`` keywords of one option (``shown``: for the help, with its default; else for parsing)."""
    meta = field.metadata
    kind = option_type(cls, field.name)
    text = str(meta.get("help") or "")
    kwargs: dict[str, Any] = {"dest": field.name}
    if kind is bool:
        kwargs["action"] = "store_true" if field.default is False else argparse.BooleanOptionalAction
    else:
        kwargs["type"] = kind
        kwargs["metavar"] = meta.get("metavar") if not meta.get("choices") else None
        kwargs["choices"] = meta.get("choices")
    if shown:
        kwargs["default"] = field.default
        stated = meta.get("default_text") or (None if field.default is None else "%(default)s")
        kwargs["help"] = f"{text} (default: {stated})" if stated and kind is not bool else text
    else:
        kwargs["default"] = argparse.SUPPRESS
        kwargs["help"] = argparse.SUPPRESS
    return kwargs


def add_parsing_flags(parser: argparse.ArgumentParser, classes: Sequence[type[AgentOptions]]) -> None:
    """One hidden flag per option of ``classes`` (the first class's type wins for a shared name)."""
    taken = set(parser._option_string_actions)  # noqa: SLF001 - argparse has no public "is this flag taken"
    for cls in classes:
        for field in dataclasses.fields(cls):
            flag = flag_of(field.name)
            if flag in taken:
                continue
            taken.add(flag)
            parser.add_argument(flag, **_kwargs(cls, field, shown=False))


def agent_help(names: Sequence[str], prog: str) -> str:
    """The help sections of the agents ``names``: one argument group each, their options with their defaults."""
    sections = []
    for name in names:
        try:
            cls = registry.options_class(name)
        except RunError as exc:
            sections.append(f"--agent {name}: cannot show its options ({exc})\n")
            continue
        shown = argparse.ArgumentParser(prog=prog, usage=argparse.SUPPRESS, add_help=False)
        title = f"--agent {name} options" + (f": {cls.summary}" if cls.summary else "")
        group = shown.add_argument_group(title, None if dataclasses.fields(cls) else "(none)")
        for field in dataclasses.fields(cls):
            group.add_argument(flag_of(field.name), **_kwargs(cls, field, shown=True))
        sections.append(shown.format_help())
    return "\n".join(sections)


def agent_choice_help() -> str:
    """``--agent``'s help: every registered agent and what it is."""
    parts = []
    for name in registry.names():
        try:
            summary = registry.options_class(name).summary
        except RunError:
            summary = "cannot be loaded"
        parts.append(f"{name}: {summary}" if summary else name)
    return "; ".join(parts)  # the help formatter appends the default


def _agent_in(args: Sequence[str]) -> str | None:
    """The value of ``--agent`` in ``args`` (before a ``--``), if any."""
    for i, word in enumerate(args):
        if word == "--":
            break
        if word == "--agent" and i + 1 < len(args):
            return args[i + 1]
        if word.startswith("--agent="):
            return word.split("=", 1)[1]
    return None


class RunParser(conventions.Parser):
    """``madqa run``'s parser: reads ``--agent`` first, so that its help shows that agent's options only and a
    plugin agent's own flags parse; after parsing, the options given are in ``args.agent_options_given`` and the
    chosen agent's options all have a value (the class's default where none was given)."""

    help_agent: str | None = None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, with the chosen agent's flags added (a plugin's) and its defaults filled in."""
        words = list(args) if args is not None else []
        chosen = _agent_in(words)
        self.help_agent = chosen if chosen in registry.names() else None
        if self.help_agent is not None and self.help_agent not in registry.AGENTS:
            try:
                add_parsing_flags(self, [registry.options_class(self.help_agent)])
            except RunError as exc:
                self.error(str(exc))
        parsed, rest = super().parse_known_args(words, namespace)
        given = {}
        for flag, action in self._option_string_actions.items():  # noqa: SLF001
            if action.help == argparse.SUPPRESS and flag == flag_of(action.dest) and hasattr(parsed, action.dest):
                given[action.dest] = getattr(parsed, action.dest)
        setattr(parsed, GIVEN, given)
        agent = getattr(parsed, "agent", None)
        if agent in registry.names():
            try:
                defaults = registry.options_class(agent)().as_dict()
            except (RunError, TypeError):
                defaults = {}
            for key, value in defaults.items():
                if not hasattr(parsed, key):
                    setattr(parsed, key, value)
        return parsed, rest

    def format_help(self) -> str:
        """The run's own arguments, then the options of the chosen agent (or of every agent)."""
        names = [self.help_agent] if self.help_agent else list(registry.names())
        return super().format_help() + "\n" + agent_help(names, self.prog)


def options_of(args: argparse.Namespace) -> dict[str, Any]:
    """The agent options a run was given: its flags, then ``--agent-option`` pairs typed by the agent's class.

    Raises:
        UserError: a pair without ``=``, a key the agent does not have, or a value of the wrong type.
    """
    given = dict(getattr(args, GIVEN, {}) or {})
    pairs = getattr(args, "agent_option", None) or []
    if not pairs:
        return given
    try:
        cls = registry.options_class(args.agent)
        for pair in pairs:
            key, value = parse_option_value(cls, pair, registry.option_owners())
            given[key] = value
    except (OptionError, RunError) as exc:
        raise UserError(str(exc)) from None
    return given


def configure(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` a :class:`RunParser` and add ``--agent-option`` and the built-in agents' flags."""
    parser.__class__ = RunParser  # the subcommand's parser exists already; it only gains the two methods above
    parser.add_argument(
        "--agent-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the agent, typed by its options class, repeatable (also a plugin agent's); "
        "e.g. --agent-option top_k=3",
    )
    add_parsing_flags(parser, [registry.options_class(name) for name in registry.AGENTS])

"""An agent's own settings: a frozen dataclass deriving from :class:`AgentOptions`, one per agent.

Each agent declares its options in a light module (``agents/baselines/<agent>/options.py``, importing nothing heavy)
so that the command line, the Space's agent tab and a results line's ``config`` are built from one declaration:

* a field's default is the paper's setting (``None`` where the agent resolves it from the model in ``prepare``);
* :func:`option` gives it its help text, flag metavar and choices, and says whether the results line records it;
* :meth:`AgentOptions.check` validates the values (with the run's common settings at hand).

The framework (:func:`madqa.agents.harness.registry.check_config`), not the agent, refuses an option the chosen
agent does not have. ``--agent-option KEY=VALUE`` is typed by :func:`parse_option_value`.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Toy(AgentOptions):
...     depth: int = option(2, help="how deep")
...     secret: bool = option(False, help="not recorded", record=False)
>>> Toy.of({"depth": 3}).recorded()
{'depth': 3}
>>> parse_option_value(Toy, "secret=yes")
('secret', True)
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

__all__ = ["AgentOptions", "OptionError", "RunError", "option", "option_type", "parse_option_value", "suggest"]

OptionsT = TypeVar("OptionsT", bound="AgentOptions")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


class RunError(ValueError):
    """A run that cannot start as asked; the message says what to change."""


class OptionError(RunError):
    """An agent option that does not exist, or a value that does not fit it."""


def option(
    default: Any,
    *,
    help: str,  # noqa: A002 - argparse's word
    record: bool = True,
    metavar: str | None = None,
    choices: Sequence[str] | None = None,
    default_text: str | None = None,
) -> Any:
    """A field of an options class.

    Args:
        default: the paper's setting (``None``: resolved by the agent from the model, see ``default_text``).
        help: one line for ``--help`` and the Space.
        record: whether a results line's ``config`` holds it (not for settings that cannot change an answer).
        metavar: the value's name in ``--help``.
        choices: the allowed values.
        default_text: how ``--help`` states the default when the value alone does not say it (``None`` defaults).
    """
    metadata = {"help": help, "record": record, "metavar": metavar, "choices": choices, "default_text": default_text}
    return dataclasses.field(default=default, metadata=metadata)


def suggest(word: str, names: Sequence[str]) -> str | None:
    """The name of ``names`` closest to a misspelt ``word``, if any is close.

    >>> suggest("topk", ["top_k", "oracle"])
    'top_k'
    """
    close = difflib.get_close_matches(word.replace("-", "_"), list(names), n=1, cutoff=0.6)
    return close[0] if close else None


def flag_of(name: str) -> str:
    """The command-line flag of an option name (``top_k`` -> ``--top-k``)."""
    return "--" + name.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class AgentOptions:
    """Base of every agent's options class (a frozen dataclass of :func:`option` fields).

    Attributes:
        agent: the registered name of the agent these options are for (a class variable).
        summary: what the agent is, in a few words (``madqa run --agent``'s help; a class variable).
        fixed_max_steps: the model calls per question of an agent whose count is its own, whatever ``--max-steps``
            says (static RAG and file search: 1; MDocAgent: its five agents); ``None``: ``--max-steps`` holds. It is
            declared here, not only in the agent's ``prepare``, so that ``--resume`` compares the ``max_steps`` the
            lines record before the agent is loaded (a class variable).
    """

    agent: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    fixed_max_steps: ClassVar[int | None] = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in declaration order (the results line's order)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def recorded_names(cls) -> tuple[str, ...]:
        """The option names a results line's ``config`` holds, in order."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("record", True))

    @classmethod
    def of(cls: type[OptionsT], values: Mapping[str, Any] | AgentOptions | None = None) -> OptionsT:
        """The options with ``values`` given and the defaults for the rest.

        Raises:
            OptionError: a key that is not an option of this class (the registry's check names the agents that
                have it; this is the last line of defence when an agent is prepared directly).
        """
        if isinstance(values, cls):
            return values
        given = dict(values.as_dict() if isinstance(values, AgentOptions) else values or {})
        unknown = [key for key in given if key not in cls.names()]
        if unknown:
            raise OptionError(unknown_message(cls.agent or cls.__name__, unknown[0], cls.names(), {}))
        return cls(**given)

    def as_dict(self) -> dict[str, Any]:
        """Every option and its value, in order."""
        return {name: getattr(self, name) for name in self.names()}

    def recorded(self) -> dict[str, Any]:
        """The options a results line's ``config`` holds, in order."""
        return {name: getattr(self, name) for name in self.recorded_names()}

    def check(self, run: Any) -> None:
        """Raise :class:`RunError` for values that cannot work; ``run`` is the :class:`RunConfig` (its split,
        max_steps, …). The base checks each option's ``choices``."""
        for f in dataclasses.fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value is not None and value not in choices:
                raise RunError(f"{f.name.replace('_', '-')} must be one of {', '.join(choices)}, got {value!r}")


def unknown_message(agent: str, key: str, names: Sequence[str], owners: Mapping[str, Sequence[str]]) -> str:
    """Why ``key`` is refused for ``agent``: which agents have it (``owners``: option -> agents), or a close name."""
    listed = ", ".join(names) or "none"
    have = [a for a in owners.get(key, ()) if a != agent]
    if have:
        who = have[0] if len(have) == 1 else ", ".join(have[:-1]) + " or " + have[-1]
        return f"{flag_of(key)} is for --agent {who}; --agent {agent} has no option {key!r} (its options: {listed})"
    close = suggest(key, names)
    hint = f"; did you mean {close!r}?" if close else ""
    return f"--agent {agent} has no option {key!r}{hint} (its options: {listed})"


def option_type(cls: type[AgentOptions], name: str) -> type:
    """The plain type of option ``name`` (``int | None`` -> ``int``), from the class's annotations."""
    hints = typing.get_type_hints(cls)
    hint = hints[name]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0] if args else str
    if typing.get_origin(hint) is typing.Literal:
        return str
    return hint if isinstance(hint, type) else str


def convert(cls: type[AgentOptions], name: str, text: str) -> Any:
    """``text`` as a value of option ``name`` (``none`` for an option that may be unset).

    Raises:
        OptionError: a value that is not of the option's type.
    """
    kind = option_type(cls, name)
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    if text.strip().lower() in ("none", "null") and field.default is None:
        return None
    try:
        if kind is bool:
            low = text.strip().lower()
            if low not in _TRUE + _FALSE:
                raise ValueError(text)
            return low in _TRUE
        return kind(text)
    except ValueError:
        raise OptionError(f"option {name!r} of --agent {cls.agent} takes a {kind.__name__}, got {text!r}") from None


def parse_option_value(
    cls: type[AgentOptions], pair: str, owners: Mapping[str, Sequence[str]] | None = None
) -> tuple[str, Any]:
    """One ``--agent-option KEY=VALUE`` as ``(key, typed value)`` (``-`` in the key read as ``_``); ``owners``
    (option -> agents) names the agents that have a key this class does not.

    Raises:
        OptionError: no ``=``, a key the class does not have (a close name suggested), or a mistyped value.
    """
    key, sep, text = pair.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key:
        raise OptionError(f"--agent-option takes KEY=VALUE, got {pair!r}")
    if key not in cls.names():
        raise OptionError(unknown_message(cls.agent, key, cls.names(), owners or {}))
    return key, convert(cls, key, text)

"""What to run: :class:`RunConfig`, the settings of ``madqa run``: what the runner owns, plus the agent's options.

The runner's fields (model, agent, split, dataset, limit, max_steps, question_timeout) are :class:`RunConfig`'s;
everything else belongs to one agent and is declared by its options class
(:class:`madqa.agents.harness.options.AgentOptions`, ``agents/baselines/<agent>/options.py``). ``RunConfig.options``
holds the options given (a mapping, or the typed instance); the agent's class gives the rest their defaults
(:meth:`RunConfig.typed`), and the framework refuses an option the agent does not have
(:func:`madqa.agents.harness.registry.check_config`). A results line's ``config`` holds :data:`COMMON_FIELDS` and
the agent's recorded options (:meth:`RunConfig.settings`), so a line of one agent never carries another agent's
settings. The runner adds ``model_options``: the provider settings the run was given, secrets removed
(:func:`public_options`).

``--resume`` adds lines to a file only if its lines were written with the same settings (:func:`check_settings`):
every recorded field is compared but :data:`RESUME_IGNORED` (and the options of :data:`RESUME_IGNORED_OPTIONS`),
the settings that do not change a finished line's result.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from madqa.agents.harness.options import AgentOptions, RunError

__all__ = [
    "COMMON_FIELDS",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_TOP_K",
    "Repeat",
    "RunConfig",
    "RunError",
    "check_settings",
    "public_options",
]

logger = logging.getLogger(__name__)

#: T, the most model calls per question (every agent), and the search loop's pages per search (the paper's k).
DEFAULT_MAX_STEPS = 10
DEFAULT_TOP_K = 5
#: Fields of every results line's ``config`` (whatever the agent), in :class:`RunConfig` order.
COMMON_FIELDS: tuple[str, ...] = ("model", "agent", "split", "dataset", "max_steps", "question_timeout")

OptionsT = TypeVar("OptionsT", bound=AgentOptions)


@dataclass(frozen=True)
class RunConfig:
    """What to run (stored, minus the output options, in every results line's ``config``).

    >>> RunConfig(agent="rag", options={"top_k": 3}).options
    {'top_k': 3}

    Attributes:
        model: model spec (:func:`madqa.agents.models.factory.make_model`).
        agent: a registered agent name (:func:`madqa.agents.harness.registry.names`), e.g. ``"bm25"`` (search
            agent, paper G.1) or ``"repl"`` (code-REPL agent, paper G.5).
        split: ``train``, ``dev`` or ``test``.
        dataset: dataset spec (``None``: ``MADQA_DATASET`` or the local sample).
        limit: run only the first ``limit`` questions of the split.
        max_steps: T, the most model calls per question.
        question_timeout: wall-clock seconds per question (``None``: no limit); a question that runs out becomes a
            line with ``error_kind: "timeout"`` (see :mod:`madqa.agents.harness.deadline`).
        options: the agent's options given (names of its options class; the others take the class's defaults).
    """

    model: str = "local"
    agent: str = "bm25"
    split: str = "dev"
    dataset: str | None = None
    limit: int | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    question_timeout: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Keep a copy of the options as a plain mapping (a typed instance becomes its values)."""
        given = self.options.as_dict() if isinstance(self.options, AgentOptions) else dict(self.options or {})
        object.__setattr__(self, "options", given)

    def check(self) -> None:
        """Raise :class:`RunError` for runner settings that cannot work (the framework checks the options)."""
        if self.max_steps < 1:
            raise RunError("max-steps must be at least 1")
        if self.limit is not None and self.limit < 0:
            raise RunError("limit must not be negative")
        if self.question_timeout is not None and not self.question_timeout > 0:  # also rejects NaN
            raise RunError(f"question-timeout must be a positive number of seconds, got {self.question_timeout}")

    def typed(self, cls: type[OptionsT]) -> OptionsT:
        """The agent's options as its class ``cls``: the given ones, the class's defaults for the rest."""
        return cls.of(self.options)

    def with_options(self, **changes: Any) -> RunConfig:
        """This config with some options set (an agent resolving its model-dependent defaults)."""
        return replace(self, options={**self.options, **changes})

    def settings(self, cls: type[AgentOptions]) -> dict[str, Any]:
        """The results line's ``config``: :data:`COMMON_FIELDS`, then the options ``cls`` records, in order.

        >>> from madqa.agents.harness.options import AgentOptions, option
        >>> @dataclass(frozen=True)
        ... class Steps(AgentOptions):
        ...     step_timeout: float = option(30.0, help="seconds per step")
        >>> RunConfig(agent="repl").settings(Steps)  # doctest: +NORMALIZE_WHITESPACE
        {'model': 'local', 'agent': 'repl', 'split': 'dev', 'dataset': None, 'max_steps': 10, 'question_timeout': None,
         'step_timeout': 30.0}
        """
        common = {name: getattr(self.for_agent(cls), name) for name in COMMON_FIELDS}
        return {**common, **self.typed(cls).recorded()}

    def for_agent(self, cls: type[AgentOptions]) -> RunConfig:
        """This config as the agent of options ``cls`` runs it: its own step count where it has one
        (:attr:`AgentOptions.fixed_max_steps`), so that a line records, and ``--resume`` compares, what ran.

        >>> from madqa.agents.harness.options import AgentOptions
        >>> class OneCall(AgentOptions):
        ...     fixed_max_steps = 1
        >>> RunConfig(agent="rag").for_agent(OneCall).max_steps
        1
        """
        fixed = cls.fixed_max_steps
        return self if fixed is None or fixed == self.max_steps else replace(self, max_steps=fixed)


@dataclass(frozen=True)
class Repeat:
    """One of the K runs of ``madqa run --repeats K``: its index (0..K-1, the lines' ``repeat``) and the model seed
    it runs with (the lines' ``seed``, also in their ``config["model_options"]``).

    Attributes:
        index: the repeat's index.
        seed: its model seed (the ``seed`` model option: honoured where the provider honours one).
    """

    index: int
    seed: int


#: Settings that do not change a finished line's result, so ``--resume`` does not compare them: ``limit`` (which
#: questions run), ``question_timeout`` (a line that ran out is a ``timeout`` error line, which ``--retry-errors``
#: runs again, e.g. with a larger budget) and ``search_timeout`` (likewise: a search's safety net only ever makes a
#: ``search`` error line). Of the model options, the per-call timeout, the retry count and ``stream`` (how a reply
#: travels, not what it says).
RESUME_IGNORED = frozenset({"limit", "question_timeout", "search_timeout"})
RESUME_IGNORED_OPTIONS = frozenset({"timeout", "request_timeout", "retries", "max_retries", "num_retries", "stream"})
#: A model option whose name has one of these words (``api_key``, ``hf_token``, ``client_secret``, …) is a secret
#: and never recorded; whole words, so ``max_tokens`` is recorded.
SECRET_WORDS = (
    "key",
    "apikey",
    "token",
    "secret",
    "password",
    "credentials",
    "auth",
    "authorization",
    "headers",
    "cookie",
    "cookies",
)


def public_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The model options as a results line's ``config["model_options"]`` records them: JSON values, secrets removed
    (:data:`SECRET_WORDS`, also inside nested mappings), and a URL's user and password (``https://u:p@host``) and
    query string cut off (a base URL can carry a key).

    >>> public_options({"api_key": "sk-1", "max_tokens": 512, "hf_token": "x", "extra_body": {"AuthToken": "y"}})
    {'max_tokens': 512, 'extra_body': {}}
    >>> public_options({"api_base": "https://me:sk-2@host:8000/v1?key=sk-3"})
    {'api_base': 'https://host:8000/v1'}
    """

    def secret(name: str) -> bool:
        words = re.findall(r"[a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower())
        return any(w in SECRET_WORDS for w in words)

    def clean(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items() if not secret(str(k))}
        if isinstance(value, str) and "://" in value:
            url = urlsplit(value)
            if url.hostname:
                host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname  # IPv6
                netloc = host + (f":{url.port}" if url.port else "")
                return urlunsplit((url.scheme, netloc, url.path, "", ""))
        return json.loads(json.dumps(value, default=str))

    return clean(dict(options or {}))


def _comparable(config: Mapping[str, Any]) -> dict[str, Any]:
    """A line's ``config`` as ``--resume`` compares it: ignored fields out, each model option as its own field."""
    flat = {k: v for k, v in config.items() if k not in RESUME_IGNORED and k != "model_options"}
    options = config.get("model_options")
    if isinstance(options, Mapping):
        flat.update({f"model_options.{k}": v for k, v in options.items() if k not in RESUME_IGNORED_OPTIONS})
    return json.loads(json.dumps(flat, default=str))  # the form it has in the file (tuples as lists, …)


_UNSET = "(unset)"


def mixed_settings(
    finished: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any], *, resolved: bool = True
) -> dict[str, tuple[list[Any], Any]]:
    """The settings in which finished lines differ from this run's: ``{field: (their values, this run's)}``.

    ``settings`` is this run's lines' ``config`` (with ``model_options``). A field a line does not record (written
    by an older version) is not compared; model options are compared as a whole where a line records them (a
    missing option is :data:`_UNSET`). With ``resolved=False`` (before the agent resolved its model-dependent
    defaults) a field left ``None`` in this run is not compared yet.
    """
    ours = _comparable(settings)
    theirs: dict[str, list[Any]] = {}
    for record in finished.values():
        config = record.get("config") or {}
        old = _comparable(config)
        keys = set(ours) | ({k for k in old if k.startswith("model_options.")} if "model_options" in config else set())
        for key in sorted(keys):
            new = ours.get(key, _UNSET)
            if key.startswith("model_options."):
                if "model_options" not in config:
                    continue
                value = old.get(key, _UNSET)
            elif key not in old or (not resolved and new is None):
                continue
            else:
                value = old[key]
            if value != new and value not in theirs.setdefault(key, []):
                theirs[key].append(value)
    return {k: (v, ours.get(k, _UNSET)) for k, v in theirs.items() if v}


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def check_settings(
    path: Path,
    finished: Mapping[str, Mapping[str, Any]],
    settings: Mapping[str, Any],
    *,
    allow_mixed: bool,
    resolved: bool = True,
) -> None:
    """Refuse (:class:`RunError`) to add lines of other settings to ``path``, naming the fields; or warn."""
    mixed = mixed_settings(finished, settings, resolved=resolved)
    if not mixed:
        return
    theirs = ", ".join(f"{k}={' or '.join(_show(v) for v in old)}" for k, (old, _) in mixed.items())
    ours = ", ".join(f"{k}={_show(new)}" for k, (_, new) in mixed.items())
    if allow_mixed:
        logger.warning(
            "%s holds lines written with %s (this run: %s); mixing them, as --allow-mixed-settings asks",
            path,
            theirs,
            ours,
        )
        return
    raise RunError(
        f"{path} holds lines written with {theirs} (this run: {ours}); rerun with the same settings, or "
        "add --allow-mixed-settings to mix them in one file"
    )

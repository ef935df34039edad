"""The code-REPL agent's options (``madqa run --agent repl``; paper G.5), light: read without loading the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from madqa.agents.harness.options import AgentOptions, RunError, option


@dataclass(frozen=True)
class ReplOptions(AgentOptions):
    """The code agent's settings; the ``None`` ones are resolved from the (sub-)model in ``prepare``."""

    agent: ClassVar[str] = "repl"
    summary: ClassVar[str] = "code-REPL agent (paper G.5)"

    sub_model: str | None = option(
        None, metavar="SPEC", help="model behind llm_query in the code", default_text="--model"
    )
    sub_calls: int | None = option(
        None, metavar="N", help="llm_query calls per question", default_text="50; 5 for the local model"
    )
    sub_call_chars: int | None = option(
        None,
        metavar="N",
        help="longest llm_query prompt in characters",
        default_text="200000; 3000 for the local model",
    )
    observation_chars: int | None = option(
        None,
        metavar="N",
        help="longest code-step observation shown to the model",
        default_text="20000; 1500 for the local model",
    )
    step_timeout: float = option(30.0, metavar="S", help="wall-clock seconds per code step, sub-model time excluded")

    def check(self, run: Any) -> None:
        """Raise :class:`RunError` for code-agent settings that cannot work."""
        super().check(run)
        if self.sub_calls is not None and self.sub_calls < 0:
            raise RunError("sub-calls must not be negative")
        if self.sub_call_chars is not None and self.sub_call_chars < 1:
            raise RunError("sub-call-chars must be at least 1")
        if self.observation_chars is not None and self.observation_chars < 100:
            raise RunError("observation-chars must be at least 100")
        if not self.step_timeout > 0:
            raise RunError("step-timeout must be positive")

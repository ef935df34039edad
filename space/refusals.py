"""Why the store refused a submission: the guards that run inside its transaction (and read-only before scoring).

Each refusal is raised before anything is written; :mod:`.submission` turns it into a message for the submitter.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RateRule:
    """At most ``limit`` accepted submissions by ``key`` in the ``window_s`` seconds before ``now`` (0 = no limit)."""

    key: str
    limit: int
    window_s: float
    now: float


class Refused(Exception):
    """A guard of :meth:`.storage.SubmissionStore.add` or its ``precheck`` refused; nothing was written."""


class KeyReplay(Refused):
    """The idempotency key was already used: by submission ``sid`` (for the same file when ``same_file``)."""

    def __init__(self, sid: int, same_file: bool) -> None:
        super().__init__(sid, same_file)
        self.sid, self.same_file = sid, same_file


class DuplicateFile(Refused):
    """The same file (text or canonical content) was already accepted as submission ``sid``."""

    def __init__(self, sid: int) -> None:
        super().__init__(sid)
        self.sid = sid


class RateLimited(Refused):
    """``rule.key`` already has ``rule.limit`` accepted submissions in the window; the oldest leaves in ``wait_s``."""

    def __init__(self, rule: RateRule, wait_s: float) -> None:
        super().__init__(rule, wait_s)
        self.rule, self.wait_s = rule, wait_s

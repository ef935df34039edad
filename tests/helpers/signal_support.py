"""Whether a process ignores Ctrl+C, as the kernel sees it (for conftest's SIGINT fixture and the Ctrl+C tests)."""

from __future__ import annotations

import signal
from pathlib import Path


def ignores_sigint(pid: int | str = "self") -> bool:
    """Whether process ``pid`` ignores SIGINT: its SigIgn mask in ``/proc``, which C code can change without Python's
    handler table (``signal.getsignal``) knowing, and which a child inherits across fork and exec."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(x for x in status.splitlines() if x.startswith("SigIgn:")).split()[1], 16)
    return bool(mask & (1 << (signal.SIGINT - 1)))

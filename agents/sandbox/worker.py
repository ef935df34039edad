"""The out-of-process executor of the code-REPL agent: model-written code runs in a walled worker subprocess.

The parent (:class:`ReplWorker`) spawns ``sys.executable -I sandbox.py`` with a minimal environment (no model
keys, no ``MADQA_HOME``/``HF_*`` variables) in an empty temporary working directory, with no inherited descriptor
but its three pipes (``close_fds``), and talks to it over stdin/stdout in JSON lines. Before any model-written code
runs, the worker (:mod:`.sandbox`) puts up its own walls, each reported in :attr:`ReplWorker.walls`:

1. a new network namespace (``unshare(CLONE_NEWNET)``, with ``CLONE_NEWUSER`` as fallback) where the kernel allows
   it: only an unconfigured loopback, no route anywhere;
2. started as root, it becomes the unprivileged user ``nobody`` (``walls["user"]``); a Space already runs as an
   ordinary user, and without privileges or a set-uid helper no other uid can be had, so the worker shares the
   Space's uid there (the owner of its database and labels) and the kernel walls below are what holds;
3. **Landlock** (``walls["filesystem"]``): read-only access beneath the directories Python was loaded from, and
   nothing else: no write anywhere, no ``/proc``, ``/dev``, ``/etc``, ``/tmp``, home or ``MADQA_HOME`` (a
   directory containing one of :attr:`ReplWorker.protected_paths` is never granted); no TCP; signals and abstract
   UNIX sockets scoped to the worker (see :mod:`.walls`);
4. **seccomp** (``walls["syscalls"]``): no ``execve``, ``fork``/``clone`` of processes (threads still work), no
   sockets, ``ptrace``, other processes' memory, mounts, namespaces, kernel modules, bpf, io_uring, ...; no
   ``chmod``/``chown``/``utime``/``xattr`` change of any file, and priority, scheduling, affinity, I/O priority and
   limits only of the worker itself;
5. resource limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (re-armed per step), ``RLIMIT_FSIZE`` = 0,
   ``RLIMIT_CORE`` = 0, ``RLIMIT_NOFILE`` at the descriptors already open, ``RLIMIT_NPROC`` = 0;
6. smolagents' ``LocalPythonExecutor`` (an AST interpreter) with only :data:`ALLOWED_IMPORTS` authorised: no
   ``open``, ``os``, ``sys``, ``subprocess``, ``socket``, ``importlib``, ``__import__``, ``eval`` or dunder
   access; the worker also refuses ``str.format`` fields naming private attributes and frame/code attributes
   (``gi_frame``, ``f_back``, ...), which lead from any function to real modules.

Layers 3 and 4 are what holds when code escapes layer 6 (the escape found in #10 went through
``string.Formatter().get_field``). Where either is unavailable (an old kernel, a container that blocks the
syscalls, another architecture), a worker with ``require_isolation=True`` refuses to start
(:class:`ReplWorkerError` naming the layer; the Space uses this), and otherwise a warning is logged once.

The parent adds the per-step wall clock (the worker is killed when it runs out; time spent answering its
``llm_query`` calls does not count) and restarts a worker that died or hit a limit; the corpus variables are sent
again, so the agent sees an error observation and can continue. ``llm_query``/``llm_query_batched`` inside the
code are proxied to the parent's ``llm_handler``: the worker never holds a model or a key.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from madqa.agents.sandbox.walls import missing_layers

logger = logging.getLogger(__name__)

#: The only modules model-written code may import.
ALLOWED_IMPORTS: tuple[str, ...] = (
    "collections",
    "datetime",
    "functools",
    "itertools",
    "json",
    "math",
    "re",
    "statistics",
    "unicodedata",
)
# ``string`` is not offered: ``string.Formatter().get_field`` walks attribute paths from C, past the interpreter.
#: Environment of the worker process: nothing else is inherited.
WORKER_ENV: dict[str, str] = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
#: Extra CPU seconds for the worker's own start-up (imports) on top of the per-step limits.
STARTUP_CPU_S = 60
#: The worker's program (stdlib and smolagents only; it gets its settings on the command line).
SANDBOX_SCRIPT = Path(__file__).with_name("sandbox.py")
#: Kernel layers every worker skips (``"filesystem"``, ``"syscalls"``): only for tests of the fail-closed path.
SKIP_WALLS: tuple[str, ...] = ()
#: A worker started as root becomes ``nobody``; ``False`` keeps the uid: only for tests of the shared-uid case.
DROP_ROOT = True
_warned_missing: set[str] = set()

#: ``llm_handler(prompts, batched) -> answers``; raises :class:`SubCallError` with a message for the model.
LLMHandler = Callable[[list[str], bool], list[str]]


class SubCallError(RuntimeError):
    """A refused or failed ``llm_query`` call; the message is shown to the model inside its observation."""


class ReplWorkerError(RuntimeError):
    """The worker could not be started at all (not a model error: the question fails)."""


class IsolationUnavailableError(ReplWorkerError):
    """A worker with ``require_isolation`` found its Landlock or seccomp layer unavailable (fail closed)."""


@dataclass(frozen=True)
class WorkerLimits:
    """Limits of one worker.

    The defaults are the documented ones (docs/security.md; ``tests/agents/sandbox/test_repl_isolation.py``
    pins them, and a started worker reports them in its ``walls``).

    Attributes:
        memory_mb: address-space limit (RLIMIT_AS) of the worker process; default 1024 (1 GiB).
        cpu_s: CPU seconds per code step (RLIMIT_CPU, re-armed before each step); default 20.
        wall_s: wall-clock seconds per code step, not counting time spent in ``llm_query`` calls; default 30.
        start_s: how long the worker may take to start; default 60.
        print_chars: longest printed output kept per step; default 20,000.
    """

    memory_mb: int = 1024
    cpu_s: int = 20
    wall_s: float = 30.0
    start_s: float = 60.0
    print_chars: int = 20_000


@dataclass
class ExecResult:
    """What one code step gave: the output (JSON-ready for a final answer, else its ``str``), the printed logs,
    whether ``final_answer`` was called, and the error message (``None`` on success)."""

    output: Any = None
    logs: str = ""
    is_final_answer: bool = False
    error: str | None = None


@dataclass
class ReplWorker:
    """Parent side of one worker process (started lazily; restarted after a crash or a limit hit).

    Attributes:
        limits: the worker's limits.
        llm_handler: answers ``llm_query`` calls of the code (``None``: they fail with an error).
        walls: what the last started worker reported about its walls (network namespace, Landlock, seccomp,
            limits, open descriptors).
        restarts: workers killed or found dead so far (each is replaced at the next step).
        require_isolation: refuse to start (:class:`ReplWorkerError`) when the Landlock or seccomp layer is
            unavailable; when ``False``, a warning is logged once per missing layer and the worker runs without it.
        protected_paths: paths the worker's readable directories must not contain, on top of ``MADQA_HOME``
            (e.g. the Space's labels file and database).
    """

    limits: WorkerLimits = field(default_factory=WorkerLimits)
    llm_handler: LLMHandler | None = None
    walls: dict[str, Any] = field(default_factory=dict)
    restarts: int = 0
    require_isolation: bool = False
    protected_paths: tuple[str, ...] = ()
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _tmp: str | None = field(default=None, repr=False)
    _errfile: Any = field(default=None, repr=False)
    _buffer: bytes = field(default=b"", repr=False)
    _eof: bool = field(default=False, repr=False)
    _variables: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def alive(self) -> bool:
        """Whether a worker process is running."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Spawn the worker and wait until it reports its walls.

        Raises:
            ReplWorkerError: it did not start within ``limits.start_s``, or (with ``require_isolation``) its
                Landlock or seccomp layer is unavailable.
        """
        self.close()
        self._tmp = tempfile.mkdtemp(prefix="madqa-repl-")
        self._errfile = tempfile.TemporaryFile()
        self._buffer, self._eof = b"", False
        config = json.dumps(
            {
                "memory_mb": self.limits.memory_mb,
                "cpu_s": self.limits.cpu_s,
                "print_chars": self.limits.print_chars,
                "imports": list(ALLOWED_IMPORTS),
                "startup_cpu_s": STARTUP_CPU_S,
                "protected": self._protected(),
                "skip_walls": list(SKIP_WALLS),
                "drop_root": DROP_ROOT,
            }
        )
        self._proc = subprocess.Popen(
            [sys.executable, "-I", str(SANDBOX_SCRIPT), config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errfile,
            cwd=self._tmp,
            env=dict(WORKER_ENV),
            close_fds=True,
            start_new_session=True,
        )
        message = self._receive(time.monotonic() + self.limits.start_s)
        if message is None or message.get("op") != "ready":
            reason = self._death_reason() if message is None else f"unexpected message {message!r}"
            self.close()
            raise ReplWorkerError(f"the REPL worker did not start: {reason}")
        self.walls = dict(message.get("walls", {}))
        self.walls.update(wall_s_per_step=self.limits.wall_s, print_chars=self.limits.print_chars)
        self._check_isolation()
        logger.debug("REPL worker %d started: %s", self._proc.pid, self.walls)
        if self._variables:
            self._send({"op": "load", "variables": self._variables})

    def load(self, variables: Mapping[str, Any]) -> None:
        """Reset the worker's namespace to ``variables`` (JSON-ready values; kept for restarts)."""
        self._variables = json.loads(json.dumps(dict(variables)))
        if not self.alive:
            self.start()  # sends the variables
            return
        if not self._send({"op": "load", "variables": self._variables}):
            self._mark_dead()

    def execute(self, code: str) -> ExecResult:
        """Run one code step; a crash, a limit hit or a refused action comes back as ``ExecResult.error``."""
        if not self.alive:
            self.start()
        if not self._send({"op": "exec", "code": code}):
            return self._failed(self._death_reason())
        deadline = time.monotonic() + self.limits.wall_s
        while True:
            message = self._receive(deadline)
            if message is None:
                if self._eof or not self.alive:
                    return self._failed(self._death_reason())
                return self._failed(f"the step ran past its wall-clock limit of {self.limits.wall_s:g} s")
            if message.get("op") == "llm":
                started = time.monotonic()
                reply = self._answer_llm(message)
                deadline += time.monotonic() - started  # sub-model time is not the code's time
                if not self._send(reply):
                    return self._failed(self._death_reason())
                continue
            result = ExecResult(
                output=message.get("output"),
                logs=str(message.get("logs") or ""),
                is_final_answer=bool(message.get("final")),
                error=message.get("error"),
            )
            if message.get("restart"):  # e.g. a MemoryError: the process may be in a bad state
                self._mark_dead()
                result.error = f"{result.error}\n{_RESTART_NOTE}"
            return result

    def close(self) -> None:
        """Kill the worker (if any) and remove its temporary folder."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        if self._errfile is not None:
            self._errfile.close()
            self._errfile = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # -- internals -------------------------------------------------------------------------------------------------

    def _protected(self) -> list[str]:
        from madqa.loading_script.paths import madqa_home

        return [str(madqa_home()), *(str(p) for p in self.protected_paths)]

    def _check_isolation(self) -> None:
        """Fail closed (``require_isolation``) or warn once per missing kernel layer."""
        missing = missing_layers(self.walls)
        if not missing:
            return
        detail = "; ".join(f"{name}: {self.walls.get(name, 'not reported')}" for name in missing)
        if self.require_isolation:
            self.close()
            raise IsolationUnavailableError(
                f"the REPL worker's OS isolation is incomplete ({detail}); model-written "
                "code is not run without the Landlock and seccomp layers "
                "(require_isolation)"
            )
        for name in missing:
            if name not in _warned_missing:
                _warned_missing.add(name)
                logger.warning(
                    "the REPL worker runs without its %s wall (%s): model-written code is less isolated "
                    "than documented",
                    name,
                    self.walls.get(name),
                )

    def _answer_llm(self, message: Mapping[str, Any]) -> dict[str, Any]:
        prompts = [str(p) for p in message.get("prompts", [])]
        if self.llm_handler is None:
            return {"op": "llm_reply", "error": "llm_query is not available in this REPL"}
        try:
            return {"op": "llm_reply", "results": list(self.llm_handler(prompts, bool(message.get("batched"))))}
        except SubCallError as exc:
            return {"op": "llm_reply", "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a failing sub-model becomes an error inside the code, not a crash
            logger.warning("sub-model call failed: %s: %s", type(exc).__name__, exc)
            return {"op": "llm_reply", "error": f"the sub-model call failed ({type(exc).__name__}: {exc})"}

    def _failed(self, reason: str) -> ExecResult:
        self._mark_dead()
        return ExecResult(error=f"The code was stopped: {reason}.\n{_RESTART_NOTE}")

    def _mark_dead(self) -> None:
        self.restarts += 1
        proc = self._proc
        self.close()
        if proc is not None:
            logger.info(
                "REPL worker %d stopped (exit %s); a new one starts at the next step", proc.pid, proc.returncode
            )

    def _death_reason(self) -> str:
        proc = self._proc
        if proc is None:
            return "the worker is not running"
        try:
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "the worker stopped answering"
        if code == -signal.SIGXCPU:
            return f"the step used more than its CPU-time limit of {self.limits.cpu_s} s"
        if code == -signal.SIGKILL:
            return "the worker was killed (memory or CPU hard limit)"
        tail = ""
        if self._errfile is not None:
            self._errfile.seek(0)
            lines = self._errfile.read().decode("utf-8", "replace").strip().splitlines()
            tail = f": {lines[-1][:300]}" if lines else ""
        return f"the worker exited with code {code}{tail}"

    def _send(self, message: Mapping[str, Any]) -> bool:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            return False
        try:
            proc.stdin.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return True

    def _receive(self, deadline: float) -> dict[str, Any] | None:
        """The next message, or ``None`` when the worker died or the deadline passed (the parent never hangs)."""
        proc = self._proc
        if proc is None or proc.stdout is None:
            return None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self._eof = True
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            return {"op": "result", "error": "the worker sent an unreadable reply", "restart": True}
        return message if isinstance(message, dict) else None


_RESTART_NOTE = (
    "The REPL was restarted: `context`, `pages`, `documents`, llm_query and llm_query_batched are "
    "available again, but variables you defined before are lost."
)

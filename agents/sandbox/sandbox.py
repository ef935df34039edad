"""The worker program of the code-REPL agent: puts up its walls, then runs code steps sent by its parent.

Started by :class:`madqa.agents.sandbox.worker.ReplWorker` as ``python -I sandbox.py CONFIG`` (stdlib and
smolagents only, no package imports: everything it needs comes in the JSON ``CONFIG``, and the kernel walls of
:mod:`.walls` are loaded by file path); it reads ``load``/``exec`` requests on stdin and answers in JSON lines
on stdout. The walls are described in :mod:`.worker`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
#: The unprivileged account a worker started as root switches to.
NOBODY, NOBODY_ID = "nobody", 65534
#: Modules loaded only when first used (``datetime.strptime``) and codecs (``str.encode``): loaded before the walls,
#: which close every new file.
LAZY_IMPORTS = ("_strptime",)
CODECS = (
    "ascii",
    "latin-1",
    "cp1252",
    "utf-16",
    "utf-32",
    "idna",
    "punycode",
    "unicode_escape",
    "raw_unicode_escape",
)
#: Attributes the interpreter refuses besides dunders: frames, code objects and tracebacks lead to module globals.
FORBIDDEN_ATTRS = frozenset(
    {
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "ag_await",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "tb_frame",
        "tb_next",
        "func_globals",
        "mro",
    }
)


def _enter_network_namespace() -> str:
    """Try ``unshare(CLONE_NEWNET)`` (then with ``CLONE_NEWUSER``); returns what worked or why not."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return f"unavailable ({exc})"
    for flags, label in (
        (CLONE_NEWNET, "new network namespace"),
        (CLONE_NEWNET | CLONE_NEWUSER, "new user+network namespace"),
    ):
        if libc.unshare(flags) == 0:
            return label
    return f"refused ({os.strerror(ctypes.get_errno())})"


def _set_limit(name: str, soft: int, hard: int | None = None) -> str:
    import resource

    what = getattr(resource, name)
    try:
        resource.setrlimit(what, (soft, soft if hard is None else hard))
        return str(soft)
    except (ValueError, OSError) as exc:
        return f"not set ({exc})"


def _drop_privileges(drop_root: bool = True) -> str:
    """As root, become ``nobody`` (no supplementary groups); returns who the worker runs as.

    This is the only uid change: a worker started by an ordinary user (a hosted Space) keeps that uid, the one that
    owns the database and the labels. Switching to another uid needs privileges (root, ``CAP_SETUID``) or a set-uid
    helper (``newuidmap`` with ``/etc/subuid`` entries), and madqa installs none; a user namespace of its own only
    *shows* another uid, the kernel still checks the same one for file ownership and for other processes. So under a
    shared uid the seccomp filter of :mod:`.walls` is what refuses metadata and scheduling changes outside the worker
    (``drop_root=False``: tests of that case run as root without the switch).
    """
    if os.getuid() != 0:
        return f"uid {os.getuid()} (unchanged: the parent's own uid)"
    if not drop_root:
        return "root (kept: tests of the shared-uid case)"
    import pwd

    try:
        entry = pwd.getpwnam(NOBODY)
        uid, gid = entry.pw_uid, entry.pw_gid
    except KeyError:  # no such account in this image: the conventional ids need none
        uid = gid = NOBODY_ID
    try:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    except OSError as exc:
        return f"root (could not switch to uid {uid}: {exc})"
    return f"{NOBODY} (uid {os.getuid()})"


def _load_walls() -> Any:
    """:mod:`.walls`, loaded from the file next to this one (``-I`` keeps this folder off ``sys.path``)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("repl_walls", Path(__file__).with_name("walls.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _descriptors() -> dict[str, str]:
    """What each open descriptor is (``pipe``, ``/dev/null``, ``deleted file``, ...), without any path."""
    kinds: dict[str, str] = {}
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
        if target == os.devnull or target.endswith(" (deleted)"):
            kinds[name] = target if target == os.devnull else "deleted file"
        else:
            kinds[name] = target.split(":", 1)[0] if ":[" in target else "file"
    return kinds


def _guard_interpreter(lpe: Any) -> None:
    """Close what smolagents' interpreter leaves open: ``str.format``/``format_map`` with dunder fields (they walk
    attributes from inside C: ``'{0.__globals__}'.format(f)``), frame/code attributes, and dunder ``setattr``.

    The interpreter looks attributes up with the module-level name ``getattr``; a global of that name in its module
    shadows the builtin for every attribute access and method call it evaluates.
    """
    import _string
    import builtins

    def refused(template: str) -> bool:
        """Whether a replacement field (also nested in a format spec) names a private attribute."""
        for _, name, spec, _ in _string.formatter_parser(template):
            if name is None:
                continue
            _, rest = _string.formatter_field_name_split(name)
            if (
                "__" in name
                or any(is_attr and (str(key).startswith("_") or key in FORBIDDEN_ATTRS) for is_attr, key in rest)
                or refused(spec or "")
            ):
                return True
        return False

    def checked_format(owner: Any, method: Any) -> Any:
        def format(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - keeps the method's name in messages
            template = owner if isinstance(owner, str) else (args[0] if args else None)
            if isinstance(template, str) and refused(template):
                raise lpe.InterpreterError("Forbidden format field: access to a private attribute")
            return method(*args, **kwargs)

        return format

    def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
        if name in FORBIDDEN_ATTRS:
            raise lpe.InterpreterError(f"Forbidden access to attribute: {name}")
        value = builtins.getattr(obj, name, *default)
        is_str = isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))
        if name in ("format", "format_map") and is_str:
            return checked_format(obj, value)
        return value

    def nodunder_setattr(obj: Any, name: str, value: Any) -> None:
        if name.startswith("_") or name in FORBIDDEN_ATTRS:
            raise lpe.InterpreterError(f"Forbidden assignment to attribute: {name}")
        builtins.setattr(obj, name, value)

    lpe.getattr = guarded_getattr
    lpe.BASE_PYTHON_TOOLS["setattr"] = nodunder_setattr


def worker_main(config: Mapping[str, Any]) -> None:  # pragma: no cover - runs in the subprocess
    """The worker's loop: put up the walls, then execute ``load``/``exec`` requests read from stdin."""
    import resource

    walls: dict[str, Any] = {"network": _enter_network_namespace(), "cwd_empty": not os.listdir(".")}
    channel = os.fdopen(os.dup(1), "wb")
    inbox = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = sys.stderr

    import smolagents.local_python_executor as lpe

    walls_module = _load_walls()
    _guard_interpreter(lpe)
    allowed = tuple(config["imports"])
    for module in allowed + LAZY_IMPORTS:
        __import__(module)
    for codec in CODECS:
        "x".encode(codec)

    def send(message: Mapping[str, Any]) -> None:
        channel.write(json.dumps(message, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
        channel.flush()

    def ask(prompts: list[str], batched: bool) -> list[str]:
        send({"op": "llm", "prompts": prompts, "batched": batched})
        reply = json.loads(inbox.readline() or b"{}")
        if reply.get("error"):
            raise LLMQueryError(reply["error"])
        return [str(r) for r in reply.get("results", [])]

    class LLMQueryError(RuntimeError):
        """A refused or failed llm_query call."""

    def llm_query(prompt: str) -> str:
        """Ask the sub-model one prompt; returns its answer."""
        if not isinstance(prompt, str):
            raise LLMQueryError(f"llm_query takes one string, got {type(prompt).__name__}")
        return ask([prompt], False)[0]

    def llm_query_batched(prompts: list[str]) -> list[str]:
        """Ask the sub-model several prompts; returns the answers in the same order."""
        if not isinstance(prompts, (list, tuple)) or not all(isinstance(p, str) for p in prompts):
            raise LLMQueryError("llm_query_batched takes a list of strings")
        return ask(list(prompts), True) if prompts else []

    def final_answer(answer: Any = None, citations: Any = None) -> Any:
        """End the task: ``answer`` (list of strings) and ``citations`` ([{document, page}]), or free text."""
        if citations is None and isinstance(answer, (str, dict)):
            return answer
        return {"answer": answer, "citations": citations}

    executor = lpe.LocalPythonExecutor(
        [],
        max_print_outputs_length=int(config["print_chars"]),
        additional_functions={"llm_query": llm_query, "llm_query_batched": llm_query_batched},
        timeout_seconds=None,
    )
    executor.authorized_imports = list(allowed)
    executor.send_tools({"final_answer": final_answer})  # type: ignore[dict-item]
    executor("import re\nimport json\nimport math\nprint(re.sub('a', 'b', json.dumps([math.sqrt(4)])))")  # warm-up
    base_state = {"__name__": "__main__"}

    # before the limits: it reads /etc/passwd; and root ignores RLIMIT_NPROC
    walls["user"] = _drop_privileges(bool(config.get("drop_root", True)))
    walls["descriptors"] = _descriptors()  # only the pipes, /dev/null and the parent's stderr file (close_fds)
    open_fds = [int(n) for n in walls["descriptors"]]
    # The kernel walls (Landlock, seccomp): after the last file this process opens itself, before any model code.
    walls.update(walls_module.apply_walls(config.get("protected", ()), config.get("skip_walls", ())))
    mem = int(config["memory_mb"]) * 1024 * 1024
    walls["memory_bytes"] = _set_limit("RLIMIT_AS", mem)
    walls["file_size"] = _set_limit("RLIMIT_FSIZE", 0)
    _set_limit("RLIMIT_CORE", 0)
    used = int(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]))
    cpu_hard = used + int(config["startup_cpu_s"]) + 100 * int(config["cpu_s"])
    walls["cpu_s_per_step"] = int(config["cpu_s"])
    walls["open_files"] = _set_limit("RLIMIT_NOFILE", max(open_fds) + 1)
    walls["processes"] = _set_limit("RLIMIT_NPROC", 0)
    walls["processes"] += " (not enforced for root)" if os.getuid() == 0 else ""
    walls["imports"] = list(allowed)
    send({"op": "ready", "walls": walls})

    for raw in inbox:
        request = json.loads(raw)
        if request.get("op") == "load":
            executor.state.clear()
            executor.state.update(base_state)
            executor.state.update(request.get("variables") or {})
            continue
        if request.get("op") != "exec":
            break
        used = int(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]))
        _set_limit("RLIMIT_CPU", min(used + int(config["cpu_s"]) + 1, cpu_hard), cpu_hard)
        reply: dict[str, Any] = {"op": "result"}
        try:
            output = executor(str(request.get("code", "")))
            reply["final"] = output.is_final_answer
            reply["output"] = output.output if output.is_final_answer else str(output.output)[:20_000]
            reply["logs"] = output.logs
        except BaseException as exc:  # noqa: BLE001 - everything the code does wrong is reported, never raised
            reply["error"] = f"{type(exc).__name__}: {exc}" if not isinstance(exc, lpe.InterpreterError) else str(exc)
            reply["logs"] = str(executor.state.get("_print_outputs", ""))
            reply["restart"] = isinstance(exc, MemoryError) or "MemoryError" in str(exc)
        try:
            send(reply)
        except MemoryError:
            send({"op": "result", "error": "MemoryError while sending the result", "restart": True})


if __name__ == "__main__":  # pragma: no cover - the worker process
    worker_main(json.loads(sys.argv[1]))

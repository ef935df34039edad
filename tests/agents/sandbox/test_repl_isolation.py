"""Isolation of model-written code in the code-REPL worker (issue #10), each layer on its own and together.

a. interpreter level: known CPython sandbox escapes sent as model code through ``ReplWorker.execute`` (with the
   kernel walls, and with only the interpreter) never read the planted secret;
b. OS level with the interpreter bypassed: a harness process applies exactly :func:`apply_walls` (the worker's
   function) and runs raw Python attacks; each layer alone and both together are checked, as root and as
   ``nobody`` (like a Space, where no root->nobody drop protects anything);
c. the worker's default limits are the documented ones and a default worker reports them;
d. fail closed: a missing layer stops a ``require_isolation`` worker and the Space tab, and warns otherwise;
e. the sample's ``questions.jsonl`` (every label, the test split's included) is 0600, also after ``madqa setup``.

The worker under the Space's own uid (metadata and scheduling attacks, issue 23) is tested in
``tests/agents/sandbox/test_repl_walls_shared_uid.py``.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from madqa.agents.sandbox import worker as repl_worker
from madqa.agents.sandbox.walls import landlock_abi
from madqa.agents.sandbox.worker import IsolationUnavailableError, ReplWorker, WorkerLimits

WALLS_FILE = Path(repl_worker.__file__).with_name("walls.py")
KERNEL_WALLS = landlock_abi() >= 1
needs_walls = pytest.mark.skipif(not KERNEL_WALLS, reason="this kernel offers no Landlock")


@pytest.fixture(scope="module")
def secret() -> dict[str, str]:
    """A world-readable secret (0644 in a 0755 folder under /tmp): only the walls keep it from the worker, which
    runs as ``nobody`` when the tests run as root. Also a world-writable folder for the write attacks."""
    folder = tempfile.mkdtemp(prefix="madqa-secret-")
    os.chmod(folder, 0o755)
    token = f"SECRET-{secrets.token_hex(8)}"
    path = Path(folder) / "labels.jsonl"
    path.write_text(token + "\n", encoding="utf-8")
    path.chmod(0o644)
    drop = Path(folder) / "drop"
    drop.mkdir()
    drop.chmod(0o777)
    yield {"token": token, "path": str(path), "dir": folder, "drop": str(drop)}
    shutil.rmtree(folder, ignore_errors=True)


# -- a. interpreter level -----------------------------------------------------------------------------------------

ESCAPES: dict[str, str] = {
    "formatter_get_field": "import statistics, string\nf = string.Formatter()\n"  # the escape of #10
    "o = f.get_field('0.__globals__[sys].modules[os].open', [statistics.mean], {})[0]\n"
    "r = f.get_field('0.__globals__[sys].modules[os].read', [statistics.mean], {})[0]\n"
    "f.get_field('0.__globals__[sys].modules[os].close', [statistics.mean], {})[0](2)\n"
    "print(r(o(P, 0), 100))",  # fd 2 closed first: RLIMIT_NOFILE no longer stops the open
    "dunder_globals": "import statistics\nprint(statistics.mean.__globals__['sys'].modules['os'])",
    "gi_frame_f_back": "g = (x for x in [1])\nprint(g.gi_frame.f_back.f_globals['builtins'].open(P).read())",
    "getattr_frames": "g = (x for x in [1])\nprint(getattr(getattr(getattr(g, 'gi_frame'), 'f_back'), 'f_globals'))",
    "subclasses": "print([c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'FileIO'][0](P).read())",
    "getattr_subclasses": "print(getattr(getattr((), '__class__'), '__subclasses__')())",
    "type_subclasses": "print(type.__subclasses__(object))",
    "traceback_frame": "try:\n    1 / 0\nexcept Exception as e:\n    print(e.__traceback__.tb_frame.f_globals)",
    "codecs_import": "import codecs\nprint(codecs.open(P).read())",
    "json_codecs": "import json\nprint(json.codecs.open(P).read())",
    "statistics_sys": "import statistics\nprint(statistics.sys.modules['os'].popen('cat ' + P).read())",
    "collections_sys": "import collections\nprint(collections._sys.modules['builtins'].open(P).read())",
    "re_enum_sys": "import re\nprint(re.enum.sys.modules['builtins'].open(P).read())",
    "ctypes_import": "import ctypes\nprint(ctypes.CDLL(None))",
    "builtins_import": "import builtins\nprint(builtins.open(P).read())",
    "dunder_import": "print(__import__('os').popen('cat ' + P).read())",
    "eval": "print(eval('open(P).read()'))",
    "proc_self_mem": "print(open('/proc/self/mem', 'rb').read(10))",
    "close_fd2_then_open": "import os\nos.close(2)\nprint(open(P).read())",
    "str_format_dunder": "import statistics\nprint('{0.__globals__[__builtins__][open]}'.format(statistics.mean))",
    "str_format_unbound": "import statistics\nprint(str.format('{0.__globals__}', statistics.mean))",
    "format_map_dunder": "import statistics\nprint('{m.__globals__[sys]}'.format_map({'m': statistics.mean}))",
    "format_nested_spec": "import statistics\nprint('{0:{1.__globals__}}'.format(1, statistics.mean))",
    "format_via_getattr": "import statistics\nprint(getattr(str, 'format')('{0.__globals__}', statistics.mean))",
    "getattr_dunder": "import statistics\nprint(getattr(statistics.mean, '__globals__'))",
    "reduce_getattr": "import functools, json\nprint(functools.reduce(getattr, ['__globals__'], json.dumps))",
    "llm_query_globals": "print(llm_query.__globals__)",
    "setattr_dunder": "import statistics\nsetattr(statistics, '__getattr__', print)",
}


@pytest.mark.parametrize("layers", ["all walls", "interpreter only"])
def test_known_sandbox_escapes_never_read_the_secret(secret, layers: str, monkeypatch) -> None:
    if layers == "all walls" and not KERNEL_WALLS:
        pytest.skip("this kernel offers no Landlock")
    if layers == "interpreter only":  # the kernel layers off: the interpreter must hold on its own
        monkeypatch.setattr(repl_worker, "SKIP_WALLS", ("filesystem", "syscalls"))
    worker = ReplWorker(WorkerLimits(wall_s=20))
    try:
        worker.load({"P": secret["path"]})
        for name, code in ESCAPES.items():
            result = worker.execute(code)
            seen = f"{result.output}\n{result.logs}\n{result.error}"
            assert secret["token"] not in seen, (name, seen)
            assert result.error is not None, (name, seen)  # refused, not merely harmless
        assert worker.execute("print(open(P).read())").error is not None
        ok = worker.execute("print('{0}-{1:>3}|{x.real}'.format('a', 7, x=2))")
        assert ok.error is None and ok.logs == "a-  7|2\n"  # ordinary formatting still works
    finally:
        worker.close()


# -- b. OS level, the interpreter bypassed --------------------------------------------------------------------------

HARNESS = r"""
import ctypes, importlib.util, json, os, socket, subprocess, sys, threading
cfg = json.loads(sys.argv[1])
spec = importlib.util.spec_from_file_location("repl_walls", cfg["walls_file"])
walls = importlib.util.module_from_spec(spec)
spec.loader.exec_module(walls)
"x".encode("idna")  # socket.connect encodes host names with it: loaded before the walls, as the worker does
if cfg["as_nobody"] and os.getuid() == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
report = walls.apply_walls(cfg["protected"], cfg["skip"])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ppid, secret = cfg["ppid"], cfg["secret"]

def raw(rc):
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return rc

def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid

def close_fd2_then_open():
    os.close(2)
    return open(secret).read()

def thread():
    out = []
    t = threading.Thread(target=lambda: out.append(sum(range(1000))))
    t.start(); t.join()
    return out[0]

def lazy_import():
    import fractions  # not imported before the walls: read from the standard library
    return str(fractions.Fraction(1, 3))

attacks = {
    "open_secret": lambda: open(secret).read(),
    "list_secret_dir": lambda: os.listdir(os.path.dirname(secret)),
    "proc_self_mem": lambda: open("/proc/self/mem", "rb").read(1),
    "parent_environ": lambda: open(f"/proc/{ppid}/environ", "rb").read(),
    "write_file": lambda: open(os.path.join(cfg["drop"], "planted.txt"), "w").write("x"),
    "make_dir": lambda: os.mkdir(os.path.join(cfg["drop"], "planted")),
    "tcp_connect": lambda: socket.create_connection(("127.0.0.1", cfg["port"]), timeout=5).recv(100),
    "unix_socket": lambda: socket.socket(socket.AF_UNIX),
    "ctypes_open": lambda: os.read(raw(libc.open(secret.encode(), 0)), 100),
    "ctypes_socket_syscall": lambda: raw(libc.syscall(ctypes.c_long(cfg["nr_socket"]), ctypes.c_long(2),
                                                      ctypes.c_long(1), ctypes.c_long(0))),
    # PTRACE_SEIZE (0x4206): unlike PTRACE_ATTACH it would not stop the test runner if it got through
    "ptrace_parent": lambda: raw(libc.ptrace(ctypes.c_long(0x4206), ctypes.c_long(ppid), None, None)),
    "kill_parent": lambda: os.kill(ppid, 0),
    "fork": fork,
    "subprocess": lambda: subprocess.run(["/bin/cat", secret], capture_output=True).stdout,
    "close_fd2_then_open": close_fd2_then_open,
    "execve": lambda: os.execv("/bin/cat", ["cat", secret]),  # last: if allowed, cat prints the secret
}
normal = {
    "compute": lambda: json.dumps({"r": __import__("re").sub("a", "b", "aa"), "m": __import__("math").sqrt(16)}),
    "thread": thread,
    "lazy_import": lazy_import,
    "list_prefix": lambda: len(os.listdir(sys.prefix)) > 0,
}
results = {"walls": report}
for name, fn in {**normal, **attacks}.items():
    try:
        results[name] = "ALLOWED " + repr(fn())[:300]
    except BaseException as exc:
        results[name] = f"denied {type(exc).__name__}: {exc}"
    if name == "close_fd2_then_open":
        print(json.dumps(results), flush=True)  # execve (next) may replace this process: report before it
print(json.dumps(results), flush=True)
"""

LANDLOCK_STOPS = (
    "open_secret",
    "list_secret_dir",
    "proc_self_mem",
    "parent_environ",
    "write_file",
    "make_dir",
    "tcp_connect",
    "ctypes_open",
    "close_fd2_then_open",
    "subprocess",
    "execve",
)
SECCOMP_STOPS = (
    "tcp_connect",
    "unix_socket",
    "ctypes_socket_syscall",
    "ptrace_parent",
    "kill_parent",
    "fork",
    "subprocess",
    "execve",
)


def run_harness(tmp_path: Path, secret: dict[str, str], skip: tuple[str, ...], as_nobody: bool) -> dict[str, str]:
    """Run :data:`HARNESS` against a TCP listener that sends the secret to whoever connects."""
    import platform

    from madqa.agents.sandbox.walls import ARCHES, SYSCALLS

    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(30)

    def serve() -> None:
        try:
            conn, _ = server.accept()
            conn.sendall(secret["token"].encode())
            conn.close()
        except OSError:
            pass

    listener = threading.Thread(target=serve, daemon=True)
    listener.start()
    script = tmp_path / "harness.py"
    script.write_text(HARNESS, encoding="utf-8")
    cfg = {
        "walls_file": str(WALLS_FILE),
        "protected": [secret["dir"]],
        "skip": list(skip),
        "as_nobody": as_nobody,
        "ppid": os.getpid(),
        "secret": secret["path"],
        "drop": secret["drop"],
        "port": server.getsockname()[1],
        "nr_socket": SYSCALLS["socket"][ARCHES.get(platform.machine(), (0, 0))[1]],
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-I", str(script), json.dumps(cfg)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    finally:
        server.close()
    assert secret["token"] not in proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr[-2000:]
    results = json.loads(lines[-1]) if lines[-1].startswith("{") else json.loads(lines[-2])
    results["_stdout"] = proc.stdout
    return results


@needs_walls
@pytest.mark.parametrize("as_nobody", [False, True], ids=["as root or this user", "as nobody"])
def test_os_walls_hold_with_the_interpreter_bypassed(tmp_path: Path, secret, as_nobody: bool) -> None:
    if as_nobody and os.getuid() != 0:
        pytest.skip("dropping to nobody needs root")
    results = run_harness(tmp_path, secret, skip=(), as_nobody=as_nobody)
    assert results["walls"]["filesystem"].startswith("landlock ABI"), results["walls"]
    assert results["walls"]["syscalls"].startswith("seccomp ("), results["walls"]
    assert secret["token"] not in results["_stdout"]
    for name in {*LANDLOCK_STOPS, *SECCOMP_STOPS}:  # refused by the kernel (EACCES/EPERM), not failing otherwise
        assert results[name].startswith("denied PermissionError"), (name, results[name])
    assert results["compute"] == 'ALLOWED \'{"r": "bb", "m": 4.0}\''
    assert results["thread"] == "ALLOWED 499500" and results["list_prefix"] == "ALLOWED True"
    if not as_nobody:  # nobody cannot read a standard library under /root (0700) with or without the walls
        assert results["lazy_import"] == "ALLOWED '1/3'"
    assert not os.listdir(secret["drop"])


@needs_walls
def test_each_kernel_layer_holds_on_its_own(tmp_path: Path, secret) -> None:
    """Landlock alone stops the file, /proc, TCP and exec attacks; seccomp alone the process and socket ones. And
    without Landlock the secret *is* read (as nobody too): the harness's attacks are real, so the test can fail."""
    only_landlock = run_harness(tmp_path, secret, skip=("syscalls",), as_nobody=False)
    assert secret["token"] not in only_landlock["_stdout"]
    for name in LANDLOCK_STOPS:
        assert only_landlock[name].startswith("denied PermissionError"), (name, only_landlock[name])
    assert only_landlock["fork"].startswith("ALLOWED")  # seccomp's part
    only_seccomp = run_harness(tmp_path, secret, skip=("filesystem",), as_nobody=os.getuid() == 0)
    for name in SECCOMP_STOPS:
        assert only_seccomp[name].startswith("denied PermissionError"), (name, only_seccomp[name])
    assert only_seccomp["open_secret"] == f"ALLOWED {secret['token'] + chr(10)!r}"  # what Landlock prevents


def test_no_readable_directory_contains_or_lies_inside_a_protected_path(tmp_path: Path, monkeypatch) -> None:
    from madqa.agents.sandbox.walls import readable_dirs

    home = tmp_path / "a" / "home"
    candidates = ["/", str(tmp_path / "a"), str(home), str(home / "venv"), str(tmp_path / "lib")]
    assert readable_dirs(candidates, [str(home)]) == ([str(tmp_path / "lib")], candidates[:4])
    # wired end to end: MADQA_HOME above the running Python leaves its directories out of the worker's rules
    monkeypatch.setenv("MADQA_HOME", str(Path(sys.prefix).resolve().parent))
    worker = ReplWorker(WorkerLimits(wall_s=10))
    try:
        worker.start()
        assert "dir(s) left out" in worker.walls["filesystem"] or not KERNEL_WALLS
    finally:
        worker.close()


# -- c. default limits ------------------------------------------------------------------------------------------


def test_default_limits_are_the_documented_ones_and_reported() -> None:
    limits = WorkerLimits()
    assert (limits.memory_mb, limits.cpu_s, limits.wall_s, limits.start_s, limits.print_chars) == (
        1024,
        20,
        30.0,
        60.0,
        20_000,
    )  # README "The code-REPL agent": 1 GiB, 20 s CPU and 30 s wall-clock a step
    worker = ReplWorker()
    try:
        worker.start()
        walls = worker.walls
    finally:
        worker.close()
    assert walls["memory_bytes"] == str(1024 * 1024 * 1024) and walls["cpu_s_per_step"] == 20
    assert walls["wall_s_per_step"] == 30.0 and walls["print_chars"] == 20_000
    assert walls["file_size"] == "0" and walls["processes"].startswith("0")


def test_worker_inherits_no_descriptor(tmp_path: Path) -> None:
    leaked = os.open(tmp_path / "leak.txt", os.O_CREAT | os.O_RDWR)
    os.set_inheritable(leaked, True)  # close_fds must still keep it out
    worker = ReplWorker(WorkerLimits(wall_s=10))
    try:
        worker.start()
        assert worker.walls["descriptors"] == {
            "0": "/dev/null",
            "1": "/dev/null",
            "2": "deleted file",
            "3": "pipe",
            "4": "pipe",
        }
        assert worker.walls["open_files"] == "5"
    finally:
        worker.close()
        os.close(leaked)


# -- d. fail closed ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer", ["filesystem", "syscalls"])
def test_require_isolation_refuses_a_worker_without_a_layer(monkeypatch, layer: str) -> None:
    monkeypatch.setattr(repl_worker, "SKIP_WALLS", (layer,))
    worker = ReplWorker(WorkerLimits(wall_s=10), require_isolation=True)
    with pytest.raises(IsolationUnavailableError, match=rf"isolation is incomplete \({layer}: unavailable"):
        worker.load({"x": 1})
    assert not worker.alive


def test_without_require_isolation_a_missing_layer_warns_once(monkeypatch, caplog) -> None:
    monkeypatch.setattr(repl_worker, "SKIP_WALLS", ("filesystem",))
    monkeypatch.setattr(repl_worker, "_warned_missing", set())
    caplog.set_level(logging.WARNING, logger="madqa.agents.sandbox.worker")
    for _ in range(2):
        worker = ReplWorker(WorkerLimits(wall_s=10))
        try:
            assert worker.execute("print(1 + 1)").logs == "2\n"
        finally:
            worker.close()
    warnings = [r.getMessage() for r in caplog.records if "runs without its filesystem wall" in r.getMessage()]
    assert len(warnings) == 1


def test_space_agent_tab_refuses_the_repl_agent_without_isolation(monkeypatch, tmp_path: Path) -> None:
    from madqa.space.agent_runtime import AgentRuntime
    from madqa.space.agent_tab import REPL, REPL_REFUSED, run_agent
    from madqa.space.config import SpaceConfig

    monkeypatch.setattr(repl_worker, "SKIP_WALLS", ("syscalls",))
    runtime = AgentRuntime(SpaceConfig.from_env({"MADQA_HOME": str(tmp_path)}))
    history = list(run_agent(runtime, {}, None, "Q?", REPL, "py:no_such_module:factory"))[-1]
    assert history[-1].content == REPL_REFUSED and "Landlock and seccomp" in REPL_REFUSED
    assert not runtime.lock.locked() and runtime._prepared == {}  # nothing prepared: no model was even loaded


def test_local_runs_warn_and_go_on_without_isolation(layout, monkeypatch, caplog, tmp_path: Path) -> None:
    from madqa.agents.harness.runner import RunConfig, run_benchmark

    monkeypatch.setattr(repl_worker, "SKIP_WALLS", ("filesystem", "syscalls"))
    monkeypatch.setattr(repl_worker, "_warned_missing", set())
    caplog.set_level(logging.WARNING, logger="madqa.agents.sandbox.worker")
    out = tmp_path / "repl.jsonl"
    config = RunConfig(model="py:helpers.fake_runs:fake_repl_model", agent="repl", limit=1, max_steps=3)
    assert run_benchmark(config, out).written == 1
    row = json.loads(out.read_text(encoding="utf-8"))
    assert row["repl"]["walls"]["filesystem"] == "unavailable (skipped)" and row["error"] is None
    assert {r.getMessage().split(" wall ")[0] for r in caplog.records if "runs without" in r.getMessage()} == {
        "the REPL worker runs without its filesystem",
        "the REPL worker runs without its syscalls",
    }


# -- e. label files ------------------------------------------------------------------------------------------------


def test_sample_questions_with_every_label_are_owner_only_and_setup_stays_idempotent(layout) -> None:
    from madqa.loading_script.pipeline import run_setup

    questions = layout.sample_dir / "questions.jsonl"
    assert stat.S_IMODE(questions.stat().st_mode) == 0o600
    assert stat.S_IMODE(layout.test_labels.stat().st_mode) == 0o600
    questions.chmod(0o644)  # a home made before #10
    before = questions.read_bytes()
    assert run_setup(layout, progress=False, register=False).steps_run == []
    assert stat.S_IMODE(questions.stat().st_mode) == 0o600 and questions.read_bytes() == before

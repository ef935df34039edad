"""The REPL walls when the worker shares the Space's uid (issue 23, defect 7), as on a hosted Space.

Model-written code runs through the real path (``ReplWorker`` -> ``sandbox.py`` -> ``apply_walls``) with the
interpreter layer opened on purpose (``os``, ``ctypes`` and ``resource`` authorised: what code that got past
smolagents' interpreter holds) and under the test's own uid (``DROP_ROOT = False`` when the tests run as root:
the Space's worker keeps its uid too). It attacks a database and a labels file owned by that uid and the worker's
parent process: metadata (chmod, chown, utime, xattrs) and scheduling (nice, policy, affinity, I/O priority,
limits, core scheduling). Each attack must fail with ``EPERM`` and the files' and the parent's state must be
unchanged. Controls: with the seccomp layer skipped (Landlock alone) the same attacks succeed on fresh files and a
same-uid stand-in process, so they are real; and the BPF program is run by an emulator for both syscall tables.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import resource
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from madqa.agents.sandbox import walls
from madqa.agents.sandbox import worker as repl_worker
from madqa.agents.sandbox.worker import ReplWorker, WorkerLimits

COLUMN = walls.ARCHES.get(platform.machine().lower(), (0, None))[1]
needs_walls = pytest.mark.skipif(walls.landlock_abi() < 1 or COLUMN is None, reason="no Landlock or seccomp here")
NR = {name: pair[COLUMN] for name, pair in walls.SYSCALLS.items()} if COLUMN is not None else {}
IOPRIO_IDLE = 3 << 13  # IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)
AT_FDCWD = -100

#: Sent first: a raw-syscall helper (the attacks' ``ctypes`` path), as an escaped model would write it.
PREAMBLE = """import ctypes, os, resource
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(*call):  # (nr, args...); smolagents binds "def f(nr, *args)" wrongly: args gets nr too
    r = libc.syscall(*[ctypes.c_long(a) if isinstance(a, int) else a for a in call])
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r
def xattr_args(value):
    buf = ctypes.create_string_buffer(value, len(value))
    keep.append(buf)
    return ctypes.create_string_buffer(ctypes.addressof(buf).to_bytes(8, 'little')
                                       + len(value).to_bytes(4, 'little') + (0).to_bytes(4, 'little'), 16)
keep = []
SCHED_ATTR_IDLE = ctypes.create_string_buffer((48).to_bytes(4, 'little') + (5).to_bytes(4, 'little')
                                              + (0).to_bytes(40, 'little'), 48)  # struct sched_attr, SCHED_IDLE
"""
#: Attacks with a visible effect (run again in the control): ``name -> code`` (``DB``, ``LABELS``, ``TARGET``).
VISIBLE = {
    "chmod 000 database": "os.chmod(DB, 0)",
    "chmod 0644 labels": "os.chmod(LABELS, 0o644)",
    "fchmodat labels": f"raw(NR['fchmodat'], {AT_FDCWD}, LABELS.encode(), 0o640)",
    "fchmodat2 labels": f"raw(NR['fchmodat2'], {AT_FDCWD}, LABELS.encode(), 0o604, 0)",
    "utime database": "os.utime(DB, (0, 0))",
    "utime labels (now)": "os.utime(LABELS)",
    "setxattr database": "os.setxattr(DB, 'user.planted', b'1')",
    "removexattr database": "os.removexattr(DB, 'user.madqa')",
    "setxattrat labels": f"raw(NR['setxattrat'], {AT_FDCWD}, LABELS.encode(), 0, b'user.at', xattr_args(b'2'), 16)",
    "removexattrat labels": f"raw(NR['removexattrat'], {AT_FDCWD}, LABELS.encode(), 0, b'user.madqa')",
    "nice 19 on parent": "os.setpriority(os.PRIO_PROCESS, TARGET, 19)",
    "SCHED_IDLE on parent": "os.sched_setscheduler(TARGET, os.SCHED_IDLE, os.sched_param(0))",
    "one CPU for parent": "os.sched_setaffinity(TARGET, {min(os.sched_getaffinity(0))})",
    "idle I/O priority on parent": f"raw(NR['ioprio_set'], 1, TARGET, {IOPRIO_IDLE})",
    "prlimit on parent": "resource.prlimit(TARGET, resource.RLIMIT_MSGQUEUE, (0, 0))",
}
#: Attacks whose effect is not read back here (denied all the same).
OTHERS = {
    "chown labels": "os.chown(LABELS, os.getuid(), os.getgid())",
    "nice 19 on parent's group": "os.setpriority(os.PRIO_PGRP, os.getpgid(TARGET), 19)",
    "sched_setparam on parent": "os.sched_setparam(TARGET, os.sched_param(0))",
    "sched_setattr SCHED_IDLE on parent": "raw(NR['sched_setattr'], TARGET, SCHED_ATTR_IDLE, 0)",
    "core-scheduling cookie to parent": "raw(NR['prctl'], 62, 2, TARGET, 0, 0)",  # PR_SCHED_CORE_SHARE_TO
    "move_pages of parent": "raw(NR['move_pages'], TARGET, 0, None, None, None, 0)",
    "migrate_pages of parent": "raw(NR['migrate_pages'], TARGET, 1, None, None)",
    "inotify on database": "raw(NR['inotify_add_watch'], libc.inotify_init1(0), DB.encode(), 0xFFF)",
}
#: The worker on itself: all allowed.
OWN = (
    "os.nice(1)\nos.setpriority(os.PRIO_PROCESS, 0, 18)\nos.setpriority(os.PRIO_PROCESS, os.getpid(), 19)\n"
    "os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))\n"
    "os.sched_setaffinity(0, os.sched_getaffinity(0))\n"
    f"raw(NR['ioprio_set'], 1, 0, {IOPRIO_IDLE})\nresource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "print(os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), sum(range(10)))"
)


def _ioprio_get(pid: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return int(libc.syscall(ctypes.c_long(NR["ioprio_set"] + 1), ctypes.c_long(1), ctypes.c_long(pid)))  # ioprio_get


def process_state(pid: int) -> dict[str, object]:
    return {
        "nice": os.getpriority(os.PRIO_PROCESS, pid),
        "policy": os.sched_getscheduler(pid),
        "priority": os.sched_getparam(pid).sched_priority,
        "cpus": frozenset(os.sched_getaffinity(pid)),
        "ioprio": _ioprio_get(pid),
        "msgqueue": resource.prlimit(pid, resource.RLIMIT_MSGQUEUE),
        "group_nice": os.getpriority(os.PRIO_PGRP, os.getpgid(pid)),
    }


def file_state(path: Path) -> dict[str, object]:
    st = path.stat()
    return {
        "mode": stat.S_IMODE(st.st_mode),
        "owner": (st.st_uid, st.st_gid),
        "mtime": st.st_mtime_ns,
        "ctime": st.st_ctime_ns,
        "xattrs": {n: os.getxattr(path, n) for n in os.listxattr(path)},
    }


def _restore(pid: int, before: dict[str, object]) -> None:
    """Put a parent back if a broken wall let an attack through (root can; an ordinary user only partly)."""
    if process_state(pid) == before:
        return
    for undo in (
        lambda: os.setpriority(os.PRIO_PROCESS, pid, before["nice"]),
        lambda: os.sched_setscheduler(pid, before["policy"], os.sched_param(before["priority"])),
        lambda: os.sched_setaffinity(pid, before["cpus"]),
        lambda: resource.prlimit(pid, resource.RLIMIT_MSGQUEUE, before["msgqueue"]),
    ):
        try:
            undo()
        except OSError:
            pass


@pytest.fixture
def planted(tmp_path: Path) -> dict[str, Path]:
    """A Space-like home (0700) with a database and a test-labels file (0600), all owned by this uid, each with a
    ``user.madqa`` extended attribute."""
    home = tmp_path / "home"
    (home / "labels").mkdir(parents=True)
    home.chmod(0o700)
    db, labels = home / "leaderboard.sqlite", home / "labels" / "test.jsonl"
    db.write_bytes(b"SQLite format 3\x00" + bytes(84))
    labels.write_text('{"id": "q1", "answer": ["x"]}\n', encoding="utf-8")
    for path in (db, labels):
        path.chmod(0o600)
        try:
            os.setxattr(path, "user.madqa", b"v1")
        except OSError as exc:
            pytest.skip(f"no user extended attributes on {tmp_path}: {exc}")
    return {"home": home, "db": db, "labels": labels}


def _worker(monkeypatch, home: Path, skip: tuple[str, ...] = ()) -> ReplWorker:
    """A worker under this uid with the interpreter opened to ``os``/``ctypes``/``resource``."""
    monkeypatch.setattr(repl_worker, "ALLOWED_IMPORTS", (*repl_worker.ALLOWED_IMPORTS, "os", "ctypes", "resource"))
    monkeypatch.setattr(repl_worker, "DROP_ROOT", False)
    monkeypatch.setattr(repl_worker, "SKIP_WALLS", skip)
    monkeypatch.setattr(repl_worker, "_warned_missing", set())
    return ReplWorker(WorkerLimits(wall_s=20), protected_paths=(str(home),))


def _run(worker: ReplWorker, planted: dict[str, Path], target: int, attacks: dict[str, str]) -> dict[str, str | None]:
    worker.load(
        {
            "DB": str(planted["db"]),
            "LABELS": str(planted["labels"]),
            "TARGET": target,
            "NR": {k: v for k, v in NR.items() if v is not None},
        }
    )
    assert worker.execute(PREAMBLE).error is None
    return {name: worker.execute(code).error for name, code in attacks.items()}


@needs_walls
def test_metadata_and_scheduling_attacks_under_the_same_uid_fail_and_change_nothing(planted, monkeypatch) -> None:
    worker = _worker(monkeypatch, planted["home"])
    parent = os.getpid()  # the worker's parent: the Space process on a Space
    files_before = {k: file_state(planted[k]) for k in ("db", "labels")}
    parent_before = process_state(parent)
    try:
        errors = _run(worker, planted, parent, {**VISIBLE, **OTHERS})
        assert worker.walls["user"].startswith(("root (kept", "uid ")), worker.walls["user"]
        assert worker.walls["syscalls"].startswith("seccomp ("), worker.walls
        own = worker.execute(OWN)  # the worker's own priority, policy, affinity and limits: still its own to set
        assert own.error is None and own.logs == "19 3 45\n", own
        assert worker.execute("print(sum(range(5)))").logs == "10\n"
    finally:
        worker.close()
        parent_after = process_state(parent)
        _restore(parent, parent_before)
    for name, error in errors.items():
        assert error is not None and "PermissionError: [Errno 1]" in error, (name, error)
    assert {k: file_state(planted[k]) for k in ("db", "labels")} == files_before
    assert parent_after == parent_before


@needs_walls
def test_without_seccomp_the_same_attacks_succeed_so_they_are_real(planted, monkeypatch) -> None:
    """Landlock alone (the state before the fix): the file and scheduling attacks get through, on this test's own
    files and on a same-uid stand-in process (never on the test runner)."""
    standin = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    worker = _worker(monkeypatch, planted["home"], skip=("syscalls",))
    cpus = os.sched_getaffinity(0)
    try:
        errors = _run(worker, planted, standin.pid, VISIBLE)
        after = process_state(standin.pid)
    finally:
        worker.close()
        standin.kill()
        standin.wait()
    assert worker.walls["filesystem"].startswith("landlock"), worker.walls
    new_kernel = {"fchmodat2 labels": (6, 6), "setxattrat labels": (6, 13), "removexattrat labels": (6, 13)}
    release = tuple(int(x) for x in re.findall(r"\d+", platform.release())[:2])
    for name, error in errors.items():
        if name in new_kernel and release < new_kernel[name]:
            continue
        assert error is None, (name, error)  # each number in walls.SYSCALLS is the syscall it names, here
    db, labels = file_state(planted["db"]), file_state(planted["labels"])
    assert db["mode"] == 0 and db["mtime"] == 0 and db["xattrs"] == {"user.planted": b"1"}
    if release >= (6, 13):
        assert labels["mode"] == 0o604 and labels["xattrs"] == {"user.at": b"2"}
    assert after["nice"] == 19 and after["policy"] == os.SCHED_IDLE and after["ioprio"] == IOPRIO_IDLE
    assert after["msgqueue"] == (0, 0) and (len(cpus) == 1 or after["cpus"] == {min(cpus)})


# -- the BPF program, emulated -------------------------------------------------------------------------------------

ALLOW, EPERM, ENOSYS, KILL = (
    walls.RET_ALLOW,
    walls.RET_ERRNO | errno.EPERM,
    walls.RET_ERRNO | errno.ENOSYS,
    walls.RET_KILL_PROCESS,
)
PID = 4242


def verdict(prog: list[tuple[int, int, int, int]], arch: int, nr: int, *args: int) -> int:
    """Run a classic-BPF seccomp program on ``struct seccomp_data`` (little-endian; the codes the filter uses)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(a & (2**64 - 1) for a in (*args, 0, 0, 0, 0, 0, 0)[:6]))
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == walls.RET_K:
            return k
        if code == walls.LD_W_ABS:
            acc, pc = struct.unpack_from("<I", data, k)[0], pc + 1
            continue
        taken = {walls.JMP_JEQ_K: acc == k, walls.JMP_JGE_K: acc >= k, walls.JMP_JSET_K: bool(acc & k)}[code]
        pc += 1 + (jt if taken else jf)


@pytest.mark.parametrize("machine", sorted(walls.ARCHES))
def test_the_filter_denies_metadata_changes_and_scheduling_of_others_on_both_tables(machine: str) -> None:
    arch, column = walls.ARCHES[machine]
    prog, _ = walls._filter(arch, column, PID)
    nr = {name: pair[column] for name, pair in walls.SYSCALLS.items() if pair[column] is not None}
    metadata = [
        "chmod",
        "fchmod",
        "fchmodat",
        "fchmodat2",
        "chown",
        "fchown",
        "lchown",
        "fchownat",
        "utime",
        "utimes",
        "utimensat",
        "futimesat",
        "setxattr",
        "lsetxattr",
        "fsetxattr",
        "removexattr",
        "lremovexattr",
        "fremovexattr",
        "setxattrat",
        "removexattrat",
        "file_setattr",
        "inotify_add_watch",
        "fanotify_mark",
    ]
    for name in metadata:
        if name in nr:
            assert verdict(prog, arch, nr[name], AT_FDCWD, 0) == EPERM, name
    for name in (
        "sched_setscheduler",
        "sched_setparam",
        "sched_setattr",
        "sched_setaffinity",
        "prlimit64",
        "migrate_pages",
        "move_pages",
    ):
        assert [verdict(prog, arch, nr[name], pid, 1) for pid in (0, PID, PID + 1, 1, -1)] == [
            ALLOW,
            ALLOW,
            EPERM,
            EPERM,
            EPERM,
        ], name
    for name, process_kind in (("setpriority", 0), ("ioprio_set", 1)):
        assert verdict(prog, arch, nr[name], process_kind, 0, 19) == ALLOW
        assert verdict(prog, arch, nr[name], process_kind, PID, 19) == ALLOW
        assert verdict(prog, arch, nr[name], process_kind, PID + 1, 19) == EPERM
        for other_kind in {0, 1, 2, 3} - {process_kind}:  # process groups and users: never, not even "0" (own)
            assert verdict(prog, arch, nr[name], other_kind, 0, 19) == EPERM, (name, other_kind)
    assert verdict(prog, arch, nr["prctl"], walls.PR_SCHED_CORE, 2, PID + 1) == EPERM
    assert verdict(prog, arch, nr["prctl"], 15, 0) == ALLOW  # PR_SET_NAME
    assert verdict(prog, arch, nr["kill"], PID, 0) == ALLOW and verdict(prog, arch, nr["kill"], 1, 9) == EPERM
    assert verdict(prog, arch, nr["clone"], walls.CLONE_THREAD) == ALLOW
    assert verdict(prog, arch, nr["clone"], 17) == EPERM  # SIGCHLD: fork
    assert verdict(prog, arch, nr["clone3"]) == ENOSYS and verdict(prog, arch, nr["socket"], 2, 1) == EPERM
    assert verdict(prog, arch, 0) == ALLOW and verdict(prog, arch ^ 1, 0) == KILL  # read/io_setup; another arch
    assert all(jt < 256 and jf < 256 for _, jt, jf, _ in prog) and len(prog) < 4096


@pytest.mark.parametrize(
    ("header", "column"),
    [("/usr/include/asm-generic/unistd.h", 1), ("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", 0)],
)
def test_syscall_numbers_match_the_kernel_headers_where_installed(header: str, column: int) -> None:
    """Names newer than the installed headers (``fchmodat2``, ``setxattrat``, ...) are checked by the control
    above on a kernel that has them."""
    if not os.path.exists(header):
        pytest.skip(f"{header} is not installed")
    defined = {m[1]: int(m[2]) for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)", Path(header).read_text())}
    mismatched = {
        n: (pair[column], defined[n])
        for n, pair in walls.SYSCALLS.items()
        if n in defined and pair[column] != defined[n]
    }
    assert not mismatched

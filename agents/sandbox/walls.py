"""Kernel-enforced walls of the code-REPL worker: Landlock (filesystem, TCP, scopes) and a seccomp-BPF filter.

The worker (:mod:`.sandbox`) calls :func:`apply_walls` on itself after its own imports and warm-up, before any
model-written code runs. Both layers hold even when model code escapes smolagents' AST interpreter, because the
kernel enforces them on the process and they cannot be lifted again:

* **Landlock** (``landlock_create_ruleset``/``add_rule``/``restrict_self``, syscalls 444-446 on x86_64 and
  aarch64): every filesystem access right the running ABI knows is handled, and the only rules grant *read file* and
  *read dir* beneath the directories Python itself was loaded from (``sys.prefix``, ``sys.base_prefix``,
  ``sys.exec_prefix`` and the existing ``sys.path`` entries; never ``/``, and never a directory that contains one
  of the ``protected`` paths the parent names, such as ``MADQA_HOME``). So: no write, create, remove or rename
  anywhere, no ``/proc`` (no ``/proc/self/mem``, no other process's ``environ``), no ``/dev``, ``/etc``, ``/tmp`` or
  home directory. Descriptors opened before the walls (the worker's pipes, ``/dev/null``) keep working. ABI >= 4:
  TCP bind and connect are handled with no rule (no TCP at all). ABI >= 6: abstract UNIX sockets and signals are
  scoped to the worker.
* **seccomp** (``PR_SET_NO_NEW_PRIVS`` + ``seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)``): a filter for x86_64 or
  aarch64 (any other audit arch, and x32 syscalls, kill the process) that answers ``EPERM`` to process creation and
  execution (``execve``, ``fork``, ``clone`` without ``CLONE_THREAD``; ``clone3`` gets ``ENOSYS`` so glibc falls back
  to ``clone`` and threads still work), sockets, tracing and other processes' memory, mounts and namespaces, kernel
  modules, kexec, bpf, perf, keyrings, userfaultfd, io_uring, file handles, ``memfd_create``; every change of a
  file's metadata (the ``chmod``, ``chown``, ``utime`` and ``xattr`` families with their ``*at``/``*at2`` forms, and
  ``file_setattr``: Landlock does not cover them, and under the Space's own uid they would reach the database and
  the labels) and watching files (``inotify_add_watch``, ``fanotify_*``: when the Space reads or writes them);
  signals, ``prlimit64``, scheduling and I/O priority (``setpriority``, ``sched_set*``, ``ioprio_set``),
  ``migrate_pages``/``move_pages`` only for the worker itself (pid 0 or its own pid; for ``setpriority``/
  ``ioprio_set`` also only the one-process kind), and no core-scheduling ``prctl``. The arguments compared are
  ``int``/``pid_t`` ones, whose low 32 bits are all the kernel reads.

Each layer is checked after it is applied (a directory outside the rules must be refused; a socket and an
``fchmod`` must be refused). :func:`apply_walls` returns one line per layer: ``"landlock ABI 7 (...)"``/
``"seccomp (N rules)"``, or ``"unavailable (reason)"``. This module is stdlib-only: the worker loads it by file path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys
from collections.abc import Collection, Iterable
from pathlib import Path

# -- Landlock ---------------------------------------------------------------------------------------------------------
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_READ_FILE, FS_READ_DIR = 1 << 2, 1 << 3
#: Filesystem rights known per ABI: 13 in ABI 1, +REFER (2), +TRUNCATE (3), +IOCTL_DEV (5).
FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
PR_SET_NO_NEW_PRIVS = 38

# -- seccomp ----------------------------------------------------------------------------------------------------------
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
LD_W_ABS, JMP_JEQ_K, JMP_JGE_K, JMP_JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
OFF_NR, OFF_ARCH, OFF_ARGS = 0, 4, 16  # struct seccomp_data; args[i]'s low 32 bits at 16 + 8 i (little-endian)
X32_SYSCALL_BIT, CLONE_THREAD = 0x40000000, 0x00010000
PRIO_PROCESS, IOPRIO_WHO_PROCESS, PR_SCHED_CORE = 0, 1, 62

#: Denied syscalls by name (``EPERM``); a name missing from an arch's table does not exist there.
DENIED = (
    "execve",
    "execveat",
    "fork",
    "vfork",  # no new programs or processes
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",  # no sockets at all
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_open",
    "pidfd_getfd",
    "pidfd_send_signal",
    "tkill",
    "process_madvise",
    "process_mrelease",  # other processes
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
    "file_setattr",  # file metadata (Landlock leaves it open)
    "inotify_add_watch",
    "fanotify_init",
    "fanotify_mark",  # watching files (Landlock leaves it open)
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "open_tree",
    "open_tree_attr",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",  # mounts and namespaces
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "memfd_create",
    "memfd_secret",
    "personality",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "quotactl",
    "vhangup",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "uselib",
)
#: ``(nr on x86_64, nr on aarch64)``; ``None``: no such syscall there.
SYSCALLS: dict[str, tuple[int | None, int | None]] = {
    "execve": (59, 221),
    "execveat": (322, 281),
    "fork": (57, None),
    "vfork": (58, None),
    "clone": (56, 220),
    "clone3": (435, 435),
    "socket": (41, 198),
    "socketpair": (53, 199),
    "connect": (42, 203),
    "bind": (49, 200),
    "listen": (50, 201),
    "accept": (43, 202),
    "accept4": (288, 242),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "pidfd_open": (434, 434),
    "pidfd_getfd": (438, 438),
    "pidfd_send_signal": (424, 424),
    "tkill": (200, 130),
    "kill": (62, 129),
    "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138),
    "rt_tgsigqueueinfo": (297, 240),
    "prlimit64": (302, 261),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "unshare": (272, 97),
    "setns": (308, 268),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "memfd_create": (319, 279),
    "memfd_secret": (447, 447),
    "personality": (135, 92),
    "acct": (163, 89),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "syslog": (103, 116),
    "quotactl": (179, 60),
    "vhangup": (153, 58),
    "lookup_dcookie": (212, 18),
    "iopl": (172, None),
    "ioperm": (173, None),
    "uselib": (134, None),
    "seccomp": (317, 277),
    "process_madvise": (440, 440),
    "process_mrelease": (448, 448),
    "chmod": (90, None),
    "fchmod": (91, 52),
    "fchmodat": (268, 53),
    "fchmodat2": (452, 452),
    "chown": (92, None),
    "fchown": (93, 55),
    "lchown": (94, None),
    "fchownat": (260, 54),
    "utime": (132, None),
    "utimes": (235, None),
    "utimensat": (280, 88),
    "futimesat": (261, None),
    "setxattr": (188, 5),
    "lsetxattr": (189, 6),
    "fsetxattr": (190, 7),
    "removexattr": (197, 14),
    "lremovexattr": (198, 15),
    "fremovexattr": (199, 16),
    "setxattrat": (463, 463),
    "removexattrat": (466, 466),
    "open_tree_attr": (467, 467),
    "file_setattr": (469, 469),
    "setpriority": (141, 140),
    "sched_setparam": (142, 118),
    "sched_setscheduler": (144, 119),
    "sched_setaffinity": (203, 122),
    "sched_setattr": (314, 274),
    "ioprio_set": (251, 30),
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
    "prctl": (157, 167),
    "inotify_add_watch": (254, 27),
    "fanotify_init": (300, 262),
    "fanotify_mark": (301, 263),
}
SELF = "self"
#: Syscalls allowed only on the worker itself: ``name -> ((argument index, allowed values), ...)``, every argument
#: listed must have one of its values (``SELF``: the worker's pid, known when the filter is built), else ``EPERM``.
OWN_ONLY: dict[str, tuple[tuple[int, tuple[int | str, ...]], ...]] = {
    "kill": ((0, (SELF,)),),
    "tgkill": ((0, (SELF,)),),
    "rt_sigqueueinfo": ((0, (SELF,)),),
    "rt_tgsigqueueinfo": ((0, (SELF,)),),
    "prlimit64": ((0, (0, SELF)),),
    "setpriority": ((0, (PRIO_PROCESS,)), (1, (0, SELF))),
    "ioprio_set": ((0, (IOPRIO_WHO_PROCESS,)), (1, (0, SELF))),
    "sched_setscheduler": ((0, (0, SELF)),),
    "sched_setparam": ((0, (0, SELF)),),
    "sched_setattr": ((0, (0, SELF)),),
    "sched_setaffinity": ((0, (0, SELF)),),
    "migrate_pages": ((0, (0, SELF)),),
    "move_pages": ((0, (0, SELF)),),
}
#: ``prctl`` options answered ``EPERM`` (``PR_SCHED_CORE`` can change another process's core-scheduling cookie).
DENIED_PRCTL = (PR_SCHED_CORE,)
#: ``machine -> (audit arch, column in SYSCALLS)``; any other machine: seccomp is reported unavailable.
ARCHES = {"x86_64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1)}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _syscall(nr: int, *args: object) -> int:
    """``syscall(nr, ...)`` with every integer passed as a full ``long`` (``syscall`` reads its variadic
    arguments as longs; a plain ``int`` would leave the upper half of the register undefined)."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return int(_libc().syscall(ctypes.c_long(nr), *conv))


def _no_new_privs() -> bool:
    """``prctl(PR_SET_NO_NEW_PRIVS, 1)``: no execve can ever grant privileges again (set-uid, capabilities)."""
    return _libc().prctl(PR_SET_NO_NEW_PRIVS, *(ctypes.c_ulong(a) for a in (1, 0, 0, 0))) == 0


def _err(what: str) -> str:
    return f"{what}: {os.strerror(ctypes.get_errno())}"


def python_dirs() -> list[str]:
    """The directories the running Python was loaded from: prefixes and existing ``sys.path`` entries."""
    found: list[str] = []
    for entry in (sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path):
        if entry and os.path.exists(entry) and os.path.realpath(entry) not in found:
            found.append(os.path.realpath(entry))
    return found


def readable_dirs(candidates: Iterable[str], protected: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split ``candidates`` into ``(granted, refused)``: ``/`` and any directory containing, equal to or inside a
    ``protected`` path are refused, so a rule can never expose ``MADQA_HOME``, the labels or the database."""
    guarded = [Path(os.path.realpath(p)) for p in protected if p]
    granted, refused = [], []
    for raw in candidates:
        path = Path(os.path.realpath(raw))
        if path == Path(path.anchor) or any(g == path or path in g.parents or g in path.parents for g in guarded):
            refused.append(str(path))
        elif str(path) not in granted:
            granted.append(str(path))
    return granted, refused


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none, or the syscalls are blocked)."""
    return max(_syscall(SYS_LANDLOCK_CREATE_RULESET, 0, 0, LANDLOCK_CREATE_RULESET_VERSION), 0)


def apply_landlock(readable: Iterable[str]) -> str:
    """Restrict this process (one thread) to reading beneath ``readable``; returns what was applied or why not."""
    if len(os.listdir("/proc/self/task")) != 1:
        return "unavailable (the process has more than one thread)"
    abi = landlock_abi()
    if abi < 1:
        return f"unavailable ({_err('landlock_create_ruleset')})"
    attr = _RulesetAttr(FS_RIGHTS_BY_ABI[max(k for k in FS_RIGHTS_BY_ABI if k <= abi)], 0, 0)
    size = 8
    if abi >= 4:  # no rule of type LANDLOCK_RULE_NET_PORT is added: every TCP bind and connect is denied
        attr.handled_access_net, size = NET_BIND_TCP | NET_CONNECT_TCP, 16
    if abi >= 6:
        attr.scoped, size = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL, 24
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return f"unavailable ({_err('landlock_create_ruleset')})"
    rules = 0
    try:
        for path in readable:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                allowed = FS_READ_FILE | (FS_READ_DIR if os.path.isdir(path) else 0)
                rule = _PathBeneathAttr(allowed, fd)
                if _syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0):
                    return f"unavailable ({_err(f'landlock_add_rule {path}')})"
                rules += 1
            finally:
                os.close(fd)
        if not _no_new_privs():  # required for an unprivileged landlock_restrict_self
            return f"unavailable ({_err('PR_SET_NO_NEW_PRIVS')})"
        if _syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return f"unavailable ({_err('landlock_restrict_self')})"
    finally:
        os.close(ruleset)
    try:  # the check: "/" is outside every rule, so listing it must be refused now
        os.listdir("/")
        return "unavailable (applied, but / can still be listed)"
    except PermissionError:
        pass
    extra = ["TCP bind/connect denied"] if abi >= 4 else []
    extra += ["signals and abstract sockets scoped"] if abi >= 6 else []
    return f"landlock ABI {abi} (read-only beneath {rules} Python dir(s){''.join('; ' + e for e in extra)})"


def _own_block(nr: int, conditions: Iterable[tuple[int, tuple[int, ...]]]) -> list[tuple[int, int, int, int]]:
    """``[LD nr, JEQ nr (else: past the block), (LD args[i], JEQ value...)..., RET ALLOW, RET EPERM]``: a matching
    value jumps to the next argument's test (the last one's to ``ALLOW``), no match to ``EPERM``."""
    tail = [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_ERRNO | errno.EPERM)]
    for index, values in reversed(list(conditions)):
        tests = [
            (JMP_JEQ_K, len(values) - 1 - i, 0 if i < len(values) - 1 else len(tail) - 1, v)
            for i, v in enumerate(values)
        ]
        tail = [(LD_W_ABS, 0, 0, OFF_ARGS + 8 * index), *tests, *tail]
    return [(LD_W_ABS, 0, 0, OFF_NR), (JMP_JEQ_K, 0, len(tail), nr), *tail]


def _filter(arch: int, column: int, pid: int) -> tuple[list[tuple[int, int, int, int]], int]:
    """The BPF program ``[(code, jt, jf, k)]`` and the number of syscalls it rules on (see the module doc)."""
    nrs = {name: pair[column] for name, pair in SYSCALLS.items() if pair[column] is not None}
    prog = [
        (LD_W_ABS, 0, 0, OFF_ARCH),
        (JMP_JEQ_K, 1, 0, arch),
        (RET_K, 0, 0, RET_KILL_PROCESS),
        (LD_W_ABS, 0, 0, OFF_NR),
    ]
    if column == 0:  # x32 syscalls (nr | 0x40000000) share the x86_64 audit arch: kill them
        prog += [(JMP_JGE_K, 0, 1, X32_SYSCALL_BIT), (RET_K, 0, 0, RET_KILL_PROCESS)]
    denied = [nrs[n] for n in DENIED if n in nrs]
    for nr in denied:
        prog += [(JMP_JEQ_K, 0, 1, nr), (RET_K, 0, 0, RET_ERRNO | errno.EPERM)]
    prog += [(JMP_JEQ_K, 0, 1, nrs["clone3"]), (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]
    # Argument blocks, each [LD nr, JEQ nr (else: next block), LD args[i], tests..., RET ...]:
    # clone only for threads (CLONE_THREAD set: glibc's fork and posix_spawn use clone without it) ...
    prog += [
        (LD_W_ABS, 0, 0, OFF_NR),
        (JMP_JEQ_K, 0, 4, nrs["clone"]),
        (LD_W_ABS, 0, 0, OFF_ARGS),
        (JMP_JSET_K, 1, 0, CLONE_THREAD),
        (RET_K, 0, 0, RET_ERRNO | errno.EPERM),
        (RET_K, 0, 0, RET_ALLOW),
    ]
    # ... prctl but its core-scheduling option ...
    prog += [(LD_W_ABS, 0, 0, OFF_NR), (JMP_JEQ_K, 0, 3 + len(DENIED_PRCTL), nrs["prctl"]), (LD_W_ABS, 0, 0, OFF_ARGS)]
    prog += [(JMP_JEQ_K, len(DENIED_PRCTL) - i, 0, v) for i, v in enumerate(DENIED_PRCTL)]
    prog += [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_ERRNO | errno.EPERM)]
    # ... and signals, limits, scheduling only for this process (OWN_ONLY)
    for name, conditions in OWN_ONLY.items():
        prog += _own_block(nrs[name], [(i, tuple(pid if v == SELF else int(v) for v in vs)) for i, vs in conditions])
    prog += [(RET_K, 0, 0, RET_ALLOW)]
    return prog, len(denied) + 3 + len(OWN_ONLY)  # + clone3, clone and prctl


def apply_seccomp() -> str:
    """Install the filter on every thread of this process; returns what was applied or why not."""
    machine = platform.machine().lower()
    if machine not in ARCHES or struct.calcsize("P") != 8:
        return f"unavailable (no syscall table for {machine or 'this machine'})"
    arch, column = ARCHES[machine]
    prog, rules = _filter(arch, column, os.getpid())
    buf = b"".join(struct.pack("=HBBI", *insn) for insn in prog)
    raw = ctypes.create_string_buffer(buf, len(buf))
    fprog = _SockFprog(len(prog), ctypes.cast(raw, ctypes.c_void_p))
    if not _no_new_privs():  # required for an unprivileged seccomp filter
        return f"unavailable ({_err('PR_SET_NO_NEW_PRIVS')})"
    nr = SYSCALLS["seccomp"][column]
    if _syscall(nr, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(fprog)) != 0:
        return f"unavailable ({_err('seccomp')})"
    if _libc().socket(2, 1, 0) != -1 or ctypes.get_errno() != errno.EPERM:  # the check: AF_INET stream socket
        return "unavailable (installed, but a socket could still be created)"
    if _libc().fchmod(-1, 0) != -1 or ctypes.get_errno() != errno.EPERM:  # and metadata: EPERM before EBADF
        return "unavailable (installed, but fchmod was not refused)"
    return f"seccomp ({rules} rules, {len(prog)} BPF instructions)"


def apply_walls(protected: Iterable[str] = (), skip: Collection[str] = ()) -> dict[str, str]:
    """Put up both layers on this process: ``{"filesystem": ..., "syscalls": ...}``.

    Args:
        protected: paths no readable directory may contain (``MADQA_HOME``, label files, the database).
        skip: layers not to apply (``"filesystem"``, ``"syscalls"``), reported as unavailable; for tests of the
            fail-closed path only.
    """
    granted, refused = readable_dirs(python_dirs(), protected)
    walls: dict[str, str] = {}
    try:
        walls["filesystem"] = "unavailable (skipped)" if "filesystem" in skip else apply_landlock(granted)
    except OSError as exc:
        walls["filesystem"] = f"unavailable ({exc})"
    if refused:
        walls["filesystem"] += f"; {len(refused)} dir(s) left out: / or a protected path's, or inside one"
    try:
        walls["syscalls"] = "unavailable (skipped)" if "syscalls" in skip else apply_seccomp()
    except OSError as exc:
        walls["syscalls"] = f"unavailable ({exc})"
    return walls


def missing_layers(walls: dict[str, object]) -> list[str]:
    """Names of the kernel layers a worker reported as not in force."""
    return [
        k
        for k in ("filesystem", "syscalls")
        if not str(walls.get(k, "unavailable")).startswith(("landlock", "seccomp"))
    ]

"""The seccomp filter of the walled worker, read as the kernel reads it: the documented denied families and a
classic-BPF interpreter that gives a program's verdict on one syscall."""

from __future__ import annotations

import struct

from madqa.agents.sandbox import walls

#: The denied families, from the module documentation of walls.py (not from its DENIED tuple). A second copy on
#: purpose (`duplicates` pairs it with DENIED): the guard tests run the filter built from DENIED against this list,
#: so a name dropped from DENIED fails them; importing DENIED here would check the tuple against itself.
DOCUMENTED_DENIED: dict[str, tuple[str, ...]] = {
    "process creation and execution": ("execve", "execveat", "fork", "vfork"),
    "sockets": ("socket", "socketpair", "connect", "bind", "listen", "accept", "accept4"),
    "tracing and other processes' memory": (
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "kcmp",
        "pidfd_open",
        "pidfd_getfd",
        "process_madvise",
    ),
    "mounts and namespaces": (
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "unshare",
        "setns",
        "open_tree",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
    ),
    "kernel modules, kexec, bpf, perf": (
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "bpf",
        "perf_event_open",
    ),
    "keyrings": ("keyctl", "add_key", "request_key"),
    "userfaultfd, io_uring": ("userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register"),
    "file handles, memfd": ("open_by_handle_at", "name_to_handle_at", "memfd_create"),
    "file metadata": (
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
    ),
    "watching files": ("inotify_add_watch", "fanotify_init", "fanotify_mark"),
}


def verdict(prog: list[tuple[int, int, int, int]], arch: int, nr: int, *args: int) -> int:
    """Run a classic-BPF seccomp program on ``struct seccomp_data`` (little-endian)."""
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

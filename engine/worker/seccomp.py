"""A seccomp filter of the worker's own, assembled by hand (classic BPF),
that refuses io_uring where the platform's profile may not."""

import errno


def deny_io_uring():
    """Refuses io_uring (EPERM) to this process and all it starts, with a
    seccomp filter of its own on top of the platform's: a cluster's
    RuntimeDefault profile may be older than the one every other runtime
    applies, which refuses it."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)

    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]

    ld, jeq, ret = 0x20, 0x15, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | errno.EPERM
    code = [
        (ld, 0, 0, 4),                 # the architecture
        (jeq, 2, 0, 0xC000003E),       # x86_64
        (jeq, 1, 0, 0xC00000B7),       # aarch64
        (ret, 0, 0, allow),
        (ld, 0, 0, 0),                 # the syscall's number
        (jeq, 3, 0, 425),              # io_uring_setup
        (jeq, 2, 0, 426),              # io_uring_enter
        (jeq, 1, 0, 427),              # io_uring_register
        (ret, 0, 0, allow),
        (ret, 0, 0, eperm),
    ]
    insns = (Insn * len(code))(*[Insn(*c) for c in code])
    prog = Prog(len(code), insns)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "seccomp filter refused")

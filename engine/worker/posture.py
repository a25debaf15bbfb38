"""Posture mode (what a probe sees of its sandbox, for doctor), and the
check a worker makes before anything else where the platform's sandbox,
not ours, keeps the network away (reachable)."""

import errno
import os
import resource
import select
import socket
import struct
import time

from .channel import Channel, Kind


def _io_uring_errno():
    """What io_uring_setup answers: EPERM (1) under the seccomp profile;
    EFAULT (14) when the kernel got as far as reading its arguments."""
    try:
        import ctypes
        import platform
        if platform.machine() not in ("x86_64", "aarch64"):
            return -1
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(425, 1, ctypes.c_void_p(0)) != -1:
            return 0
        return ctypes.get_errno()
    except (OSError, AttributeError):
        return -1


def _cpu_share():
    """The CPU time one busy thread gets per second of wall time, over half
    a second: about 1 without a quota, at most about the quota with one
    (the cgroup files are not mounted in a probe; this is what a probe can
    see of its CPU limit)."""
    import time
    wall0, cpu0 = time.monotonic(), time.process_time()
    while time.monotonic() - wall0 < 0.5:
        pass
    return round((time.process_time() - cpu0) / (time.monotonic() - wall0), 2)


def posture(req):
    """What a probe sees of its sandbox, for `nondet-sandbox doctor`."""
    ch = Channel(req.get("nonce", ""))
    rec = {"k": Kind.POSTURE}
    status = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                status[key] = value.strip()
    except OSError:
        pass
    rec["cap_effective"] = status.get("CapEff", "")
    rec["cap_bounding"] = status.get("CapBnd", "")
    rec["cap_permitted"] = status.get("CapPrm", "")
    rec["seccomp"] = status.get("Seccomp", "")
    rec["no_new_privs"] = status.get("NoNewPrivs", "")
    rec["uid"], rec["gid"], rec["pid"] = os.getuid(), os.getgid(), os.getpid()
    try:
        import socket
        rec["hostname"] = socket.gethostname()
    except OSError:
        rec["hostname"] = ""
    try:
        with open("/proc/self/uid_map") as fh:
            rec["uid_map"] = " ".join(fh.read().split())
    except OSError:
        rec["uid_map"] = ""
    interfaces = []
    try:
        with open("/proc/net/dev") as fh:
            for line in fh.readlines()[2:]:
                interfaces.append(line.split(":")[0].strip())
    except OSError:
        pass
    rec["interfaces"] = sorted(interfaces)
    writable, readonly = [], []
    try:
        with open("/proc/self/mountinfo") as fh:
            points = sorted({line.split()[4] for line in fh if line.strip()})
    except OSError:
        points = []
    # Outside a container the mount points are the host's own: nothing is
    # written there, the permission bits answer instead.
    write = req.get("write_test", True)
    for point in points:
        if point.startswith(("/proc", "/sys")):
            continue
        if not write:
            (writable if os.access(point, os.W_OK) else readonly).append(point)
            continue
        probe_path = os.path.join(point, ".nondet-sandbox-write-test-%d" % os.getpid())
        try:
            fd = os.open(probe_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError:
            readonly.append(point)
            continue
        os.close(fd)
        os.unlink(probe_path)
        writable.append(point)
    rec["writable"], rec["readonly"] = writable, readonly
    limits = {}
    try:
        for name in ("RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_CORE"):
            soft, _ = resource.getrlimit(getattr(resource, name))
            limits[name] = soft
    except (ImportError, OSError, ValueError):
        pass
    rec["rlimits"] = limits
    rec["cpu_share"] = _cpu_share()
    rec["io_uring_errno"] = _io_uring_errno()
    rec["env"] = sorted(os.environ)
    ch.send(rec)
    ch.send({"k": Kind.DONE}, flush=True)



def reachable(timeout=1.5, route="/proc/net/route", route6="/proc/net/ipv6_route", environ="/proc/1/environ"):
    """Where a probe here could connect beyond loopback, or "" when
    nowhere: every route's gateway and first address, the world when there
    is a default route, the cluster's API service (from pid 1's
    environment). A connection made or refused is reachable (a packet came
    back); only unreachable and silence are not."""
    targets = []
    try:
        with open(route) as fh:
            for line in fh.read().splitlines()[1:]:
                f = line.split()
                if len(f) < 8 or f[0] == "lo":
                    continue
                dest, gw, mask = int(f[1], 16), int(f[2], 16), int(f[7], 16)
                if gw:
                    targets += [(socket.inet_ntoa(struct.pack("<I", gw)), p) for p in (53, 80, 443, 6443, 10250)]
                elif mask != 0xFFFFFFFF:
                    first = socket.ntohl(dest) + 1
                    targets += [(socket.inet_ntoa(struct.pack(">I", first)), p) for p in (53, 80, 443, 10250)]
                if dest == 0:
                    targets += [("1.1.1.1", 53), ("8.8.8.8", 53), ("1.1.1.1", 443)]
    except (OSError, ValueError):
        return "cannot read the routing table"
    try:
        with open(route6) as fh:
            for line in fh.read().splitlines():
                f = line.split()
                if len(f) >= 10 and f[9] != "lo" and f[1] == "00":
                    targets.append(("2606:4700:4700::1111", 443))
    except OSError:
        pass
    try:
        with open(environ, "rb") as fh:
            env = dict(kv.split(b"=", 1) for kv in fh.read().split(b"\0") if b"=" in kv)
        host = env.get(b"KUBERNETES_SERVICE_HOST")
        if host:
            targets.append((host.decode(), int(env.get(b"KUBERNETES_SERVICE_PORT", b"443"))))
    except (OSError, ValueError):
        pass
    pending = {}
    found = ""
    for host, port in dict.fromkeys(targets):
        try:
            fam = socket.AF_INET6 if ":" in host else socket.AF_INET
            sk = socket.socket(fam, socket.SOCK_STREAM)
        except OSError:
            continue
        sk.setblocking(False)
        rc = sk.connect_ex((host, port))
        if rc in (0, errno.ECONNREFUSED):
            found = found or "%s port %d" % (host, port)
            sk.close()
        elif rc == errno.EINPROGRESS:
            pending[sk] = (host, port)
        else:
            sk.close()
    end = time.monotonic() + timeout
    while pending and not found:
        left = end - time.monotonic()
        if left <= 0:
            break
        _, done, _ = select.select([], list(pending), [], left)
        for sk in done:
            host, port = pending.pop(sk)
            if sk.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) in (0, errno.ECONNREFUSED):
                found = found or "%s port %d" % (host, port)
            sk.close()
    for sk in pending:
        sk.close()
    return found

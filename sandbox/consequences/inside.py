"""Runs INSIDE the sandbox (never imported on the host): replayed activities, one after the other, traced.

The host sends this file's text as `python3 -I -S -c CODE SPEC` through `run_command`; SPEC is base64
JSON: the replay's /etc, and the activities — each with the files to lay out under /tmp/rr, its
environment, argv and time limit. Standard library only, Python 3.

Where the sandbox lets an unprivileged user make namespaces (bubblewrap), each activity runs in a nested
bubblewrap of its own, made to look like an ordinary login from inside: the user is uid 1000 on a host
called `workstation`, a private /tmp (the activity's files at /tmp/rr), the replay's /etc, /bin/sh (dash)
replaced by bash — in POSIX mode when called as sh — so every shell line is traced, curl and wget replaced
by the service shim, and a PID namespace of its own, so nothing the activity starts can see or signal this
harness. Where `strace` works it runs OUTSIDE that namespace, as the parent of the nested bubblewrap: a
traced process reads TracerPid 0 and finds no tracer among its processes, and strace writes to a FIFO of
the harness that no process of the activity can open. It records every program executed and every
workspace path opened for reading or looked up as a program (`access(X_OK)`), with the working folders and
process tree needed to resolve them: which files the activity's programs consumed, whatever the programs
then did. Without nested namespaces (a Docker sandbox) the activity runs as it is, beside this harness, and
the BEGIN record says what was missing: there strace is handed a pipe at STRACE_FD, which a launcher closes
before the activity starts (no path or descriptor of the activity leads to the records), an activity whose
records lack its own end (a process of the same uid killed strace) is `interrupted`, what it left running is
killed with its process group, git gets the user's name from a system configuration (the uid may have no
passwd entry), and its files live in a workspace folder of a fresh name (/tmp is noexec there).

Each command works in a private folder of its own under /tmp, made afresh and removed at its end: a sandbox
may keep /tmp from one command to the next (Docker's is the container's).

This harness reads the trace (bash's xtrace, written to fd TRACE_FD) and strace's records through pipes of
its own, keeps each distinct record once (bounded), compares the workspace before and after the activity,
and prints per activity, on stdout: `\\x1eSTART\\x1fNAME` before it runs, then `\\x1eACT\\x1f{status}` and
`\\x1eZ\\x1fLENGTH\\x1fSHA256\\x1f<base64 zlib JSON>` — the trace, the system calls, the changed paths. The
length and digest let the host tell a report that arrived whole from one cut or damaged; the reports of one
command are kept under OUTPUT_BUDGET bytes together (the sandbox keeps 64 KiB of a command's output): one
that would not fit ends the command, and the host runs the rest in a next one. Nothing an activity runs can
write to this process's stdout. It is not dumpable, so an activity cannot read its memory either.
"""

import base64
import contextlib
import ctypes
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib

ROOT = "/tmp"  # where each command makes its own private folder (`rh-…`), removed at its end
MAX_RECORDS = 20_000
MAX_BYTES = 8 << 20
MAX_CHANGED = 500
MAX_WALK = 20_000
OUTPUT_BUDGET = 60 << 10  # the reports of one command, together: under the 64 KiB the sandbox keeps
REPORT_LIMIT = 36 << 10  # one activity's compressed report, at most (records are dropped to fit: overflow)
REPORT_PRINTED = REPORT_LIMIT * 4 // 3 + 4096  # what printing it can take: base64, and its frames
USER_UID = 1000  # who the user is inside a nested sandbox (the rollout's own uid outside)
SYSCALLS = "execve,execveat,open,openat,openat2,access,faccessat,faccessat2,chdir,fchdir,clone,clone3,fork,vfork"


def main():
    # PR_SET_DUMPABLE 0: no process of the same uid may ptrace this one or open its /proc files
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    spec = json.loads(base64.b64decode(sys.argv[1]))
    uid, gid = os.getuid(), os.getgid()
    known = spec.get("caps") or {}
    nested = known["nested"] if "nested" in known else _nested_works()
    tracer = known["strace"] if "strace" in known else _strace_works(nested)
    written = _say("\x1eBEGIN\x1f" + json.dumps({"nested": nested, "strace": tracer, "uid": uid}) + "\n")
    deadline = time.monotonic() + spec.get("deadline", 55)
    # A folder of this command's own, made afresh (O_EXCL, 0700): a sandbox may keep /tmp from one command to
    # the next (Docker's is the container's), and what an earlier command or its activities left there must
    # neither collide with this one's files nor lead them elsewhere.
    root = tempfile.mkdtemp(prefix="rh-", dir=ROOT)
    try:
        reports = _run(spec, root, nested, tracer, uid, gid, deadline, written)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _say("\x1eEND\x1f" + json.dumps({"reports": reports}) + "\n")


def _run(spec, root, nested, tracer, uid, gid, deadline, written):
    """Run the activities in order, each one's status and report printed as it ends; returns how many."""
    reports = 0
    for number, activity in enumerate(spec["activities"]):
        left = deadline - time.monotonic()
        if left < min(5, activity["timeout"]):
            break  # the host runs what is left in a command of its own
        if number and written + REPORT_PRINTED > OUTPUT_BUDGET:
            break  # its report might not fit in what the sandbox keeps: the next command runs it
        activity = {**activity, "timeout": min(activity["timeout"], left)}
        written += _say("\x1eSTART\x1f" + json.dumps(activity["name"]) + "\n")
        exec_trace = tracer and activity.get("exec_trace", True)
        status, found = _activity(spec, activity, f"{root}/{number}", nested, exec_trace, uid, gid)
        payload, status["overflow"] = _report(found, status["overflow"])
        digest = hashlib.sha256(payload).hexdigest()
        encoded = base64.b64encode(payload).decode()
        written += _say(
            "\x1eACT\x1f" + json.dumps(status) + "\n\x1eZ\x1f" + f"{len(payload)}\x1f{digest}\x1f" + encoded + "\n"
        )
        reports += 1
    return reports


def _say(text):
    data = text.encode()
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]
    return len(data)


def _report(found, overflow):
    """The compressed report, within REPORT_LIMIT: records are dropped from the end until it fits (and the
    report says so: `overflow`)."""
    while True:
        payload = zlib.compress(json.dumps(found).encode(), 6)
        if len(payload) <= REPORT_LIMIT:
            return payload, overflow
        overflow = True
        longest = max(("trace", "syscalls", "changed"), key=lambda k: len(found.get(k) or ()))
        items = found.get(longest) or []
        if not items:
            return zlib.compress(b"{}", 6), True
        found = {**found, longest: items[: len(items) // 2]}


def _fill(text, uid, gid):
    return text.replace("@UID@", str(uid)).replace("@GID@", str(gid))


def _activity(spec, activity, base, nested, tracer, uid, gid):
    files_dir = base + "/rr" if nested else "/tmp/rr"
    own = None if nested else _reset_files()
    os.makedirs(base + "/etc/alternatives", exist_ok=True)
    os.makedirs(files_dir, exist_ok=True)
    etc = spec["etc"] if not activity.get("etc") else activity["etc"]
    # Inside a nested sandbox the user is uid 1000, as on a desktop machine; without one, the sandbox's own.
    user_uid, user_gid = (USER_UID, USER_UID) if nested else (uid, gid)
    for name, text in etc.items():
        with open(f"{base}/etc/{name}", "w") as handle:
            handle.write(_fill(text, user_uid, user_gid))
    for name, target in spec.get("alternatives", {}).items():
        if os.path.exists(target):
            os.symlink(target, f"{base}/etc/alternatives/{name}")
    for path, item in activity["files"].items():
        if not path.startswith("/tmp/rr/"):
            continue
        local = files_dir + path[len("/tmp/rr") :]
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "w") as handle:
            handle.write(_fill(item["text"], user_uid, user_gid))
        os.chmod(local, int(item.get("mode", "0644"), 8))
    env = dict(activity["env"])
    if not nested:
        env.update(_identity(etc, uid, base))
    fd = spec["trace_fd"]
    argv = list(activity["argv"])
    if nested:
        argv = _bwrap(spec, base, files_dir) + argv
    if activity.get("setup"):  # the harness's own preparation: before the walk, without tracers
        with open(files_dir + "/setup.sh", "w") as handle:
            handle.write(activity["setup"])
        prepare = ["bash", "/tmp/rr/setup.sh"]
        if nested:
            prepare = _bwrap(spec, base, files_dir) + prepare
        plain = {k: v for k, v in env.items() if k not in ("SHELLOPTS", "PS4", "BASH_XTRACEFD")}
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                prepare,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=plain,
                cwd="/workspace",
                timeout=min(15, activity["timeout"]),
                start_new_session=True,
            )
    fifo = None
    syscalls_read = None
    verbose = ["-e", "abbrev=none"] if activity.get("exec_env") else []  # programs' environments too
    if tracer and nested:  # outside the nested sandbox: no process of the activity sees it, or can reach its output
        fifo = base + "/syscalls"
        os.mkfifo(fifo, 0o600)
        argv = _strace(fifo) + verbose + ["--"] + argv
    socket = os.environ.get("REDAGENT_SOCKET", DEFAULT_SOCKET)
    if socket != DEFAULT_SOCKET:  # the service shim finds the default by itself: only another is told
        env["REDAGENT_SOCKET"] = socket
    before = _walk(own)
    trace_read, trace_write = os.pipe()
    os.dup2(trace_write, fd)  # the activity's trace fd; bash and the tracers write there
    os.close(trace_write)
    passed = [fd]
    if tracer and not nested:
        # Beside the activity (no PID or mount namespace between them) a FIFO's path would be the activity's to
        # open too, to read records away or write false ones: strace is handed a pipe instead, at a fixed
        # descriptor (the same command line in every replay), and a launcher closes it before the activity runs.
        syscalls_read, syscalls_write = os.pipe()
        os.dup2(syscalls_write, STRACE_FD)
        os.close(syscalls_write)
        argv = _strace(f"/proc/self/fd/{STRACE_FD}") + verbose + ["--", *_CLOSING, *argv]
        passed.append(STRACE_FD)
    unique = activity.get("dedupe", True)
    errors_read, errors_write = os.pipe()
    # a program's arguments and environment make long lines: strace's records keep up to 16 KiB each
    trace, calls = _Collector(unique), _Collector(True, _EXEC_NOISE, _Relevant(), 16 << 10)
    errors = _Collector(True, keep=_SYNTAX_ERROR.search)
    readers = [
        threading.Thread(target=trace.drain, args=(trace_read,), daemon=True),
        threading.Thread(target=errors.drain, args=(errors_read,), daemon=True),
    ]
    if fifo is not None:
        readers.append(threading.Thread(target=calls.drain_path, args=(fifo,), daemon=True))
    if syscalls_read is not None:
        readers.append(threading.Thread(target=calls.drain, args=(syscalls_read,), daemon=True))
    for reader in readers:
        reader.start()
    status = {"name": activity["name"], "exit": None, "ended": "ok", "start": time.monotonic()}

    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors_write,
            pass_fds=passed,
            env=env,
            cwd="/workspace",
            start_new_session=True,
        )
    except OSError as exc:
        proc = None
        status.update(ended="failed", detail=str(exc)[:200])
    os.close(fd)
    os.close(errors_write)
    if syscalls_read is not None:
        os.close(STRACE_FD)
    if proc is not None:
        try:
            status["exit"] = proc.wait(timeout=activity["timeout"])
        except subprocess.TimeoutExpired:
            status["ended"] = "timeout"
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if not nested:  # what it left running ends with it, as a nested sandbox's PID namespace ends
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
    if fifo is not None and not calls.opened:
        # strace never opened its output (it failed to start): let the reader's open return
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    for reader in readers:  # outside the nested namespace a descendant may hold a pipe: bounded wait
        reader.join(timeout=2)
    status["end"] = time.monotonic()
    if syscalls_read is not None and status["ended"] == "ok" and not calls.overflow and not _ended(calls.lines):
        # Beside the activity, a process of its uid can kill strace: its tracees then run on unrecorded
        status.update(ended="interrupted", detail="strace ended before the activity did")
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)
    after = _walk(own)
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    status["overflow"] = trace.overflow or calls.overflow or len(changed) > MAX_CHANGED
    status["reads"] = fifo is not None or syscalls_read is not None  # whether the report says which files were read
    found = {"trace": trace.lines, "syscalls": calls.lines, "changed": changed[:MAX_CHANGED]}
    return status, {**found, "errors": errors.lines[:50]}


def _ended(lines):
    """Whether strace's records hold the end of the process it started (the first one they name)."""
    root = lines[0].split(None, 1)[0] if lines else None
    return root is not None and any(line.split(None, 2)[:2] == [root, "+++"] for line in lines)


def _identity(etc, uid, base):
    """Without a nested sandbox the activity sees the sandbox's own /etc, where its uid may have no passwd
    entry (Docker's image has none): git then finds no name for the user and refuses every commit, hooks
    unrun. The name the replay's passwd entry gives goes into a system git configuration of the harness's —
    the level below the user's own (~/.gitconfig, the repository's), which still decide, as they do over
    the passwd entry's name. Nothing when the uid has an entry."""
    try:
        pwd.getpwuid(uid)
        return {}
    except KeyError:
        pass
    fields: list[str] = next((line.split(":") for line in etc.get("passwd", "").splitlines() if "@UID@" in line), [])
    name = fields[4].split(",")[0] if len(fields) > 4 else ""
    if not name:
        return {}
    path = base + "/gitconfig"
    with open(path, "w") as handle:
        handle.write(f"[user]\n\tname = {name}\n")
    return {"GIT_CONFIG_SYSTEM": path}


DEFAULT_SOCKET = "/run/redagent/svc.sock"
STRACE_FD = 86  # where strace's output pipe is handed to it without a nested sandbox (beside TRACE_FD)
# Closes that descriptor, then runs the activity: what the activity starts cannot reach strace's output.
_CLOSING = [
    sys.executable or "python3",
    "-I",
    "-S",
    "-c",
    "import os,sys;os.close(int(sys.argv[1]));os.execvp(sys.argv[2],sys.argv[2:])",
    str(STRACE_FD),
]
# bash's syntax errors in a file it reads (`bash: FILE: line N: syntax error …`): the file stops there.
_SYNTAX_ERROR = re.compile(r"(?:^|: )(/[^:]*): line (\d+): syntax error")


def _strace(output):
    return [
        "strace",
        "-f",
        "-q",
        "--seccomp-bpf",
        "--pidns-translation",
        "-y",
        "-e",
        "trace=" + SYSCALLS,
        "-e",
        "signal=none",
        "-s",
        "4096",
        "-o",
        output,
    ]


class _Relevant:
    """Which strace records the host needs: programs executed, the process tree and working folders, and what
    was opened or looked up in the workspace (by its path there, by a path relative to a working folder, or
    through a link that leads there). Failed opens, and what the system's own files are, are left out: they
    are most of the volume and say nothing of the workspace."""

    ALWAYS = ("execve", "execveat", "clone", "clone3", "fork", "vfork", "chdir", "fchdir", "+++")

    def __init__(self):
        self.pending = set()  # processes whose split call was kept: their `resumed` part is kept too

    def __call__(self, line):
        head = line.split(None, 1)
        if len(head) < 2:
            return False
        pid, rest = head
        if rest.startswith("<..."):
            if pid in self.pending:
                self.pending.discard(pid)
                return True
            return False
        call = rest.split("(", 1)[0].split(None, 1)[0] if rest.strip() else ""
        unfinished = rest.endswith("<unfinished ...>")
        keep = call in self.ALWAYS or self._touches(rest, call, unfinished)
        if keep and unfinished:
            self.pending.add(pid)
        return keep

    @staticmethod
    def _touches(rest, call, unfinished):
        if call not in ("open", "openat", "openat2", "access", "faccessat", "faccessat2"):
            return False
        result = "" if unfinished else rest.rpartition(") = ")[2]
        if result.startswith("-1") and not (call.endswith(("access", "accessat", "accessat2")) and "EACCES" in result):
            return False
        quote = rest.find('"')
        named = rest[quote + 1 : quote + 12] if quote >= 0 else ""
        return named.startswith("/workspace") or not named.startswith("/") or "</workspace" in result


_EXEC_NOISE = re.compile(r", 0x[0-9a-f]+ /\* \d+ vars \*/")


class _Collector:
    """Reads a pipe to its end, keeping each line (each distinct line once, when `unique`; only those `keep`
    accepts), within bounds."""

    def __init__(self, unique, noise=None, keep=None, width=4096):
        self.unique, self.noise, self.keep, self.width = unique, noise, keep, width
        self.lines, self.seen, self.size, self.overflow = [], set(), 0, False
        self.opened = False

    def drain_path(self, path):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return
        self.opened = True
        self.drain(fd)

    def drain(self, fd):
        pending = b""
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(1 << 16)
                if not chunk:
                    break
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    self._add(raw)
                if len(pending) > (1 << 20):
                    self._add(pending[: self.width])
                    pending = b""
        if pending:
            self._add(pending)

    def _add(self, raw):
        line = raw[: self.width].decode("utf-8", "replace")
        if self.keep is not None and not self.keep(line):
            return
        if self.noise is not None:
            line = self.noise.sub("", line)
        if self.unique and line in self.seen:
            return
        if len(self.lines) >= MAX_RECORDS or self.size > MAX_BYTES:
            self.overflow = True
            return
        self.seen.add(line)
        self.lines.append(line)
        self.size += len(line)


def _reset_files():
    """Without a nested sandbox the activity's files go to /tmp/rr itself; where /tmp cannot hold programs
    (Docker mounts it noexec), /tmp/rr is a link to a folder the harness makes in the workspace — a new name,
    so never an entry of the state — removed after the activity; that folder is returned. Whatever /tmp/rr
    was (a sandbox may keep /tmp between commands, and an earlier activity could write there) is moved aside
    first, so nothing it holds fails or redirects this activity's files."""
    if os.path.lexists("/tmp/rr"):
        aside = tempfile.mkdtemp(prefix="rr-old-", dir="/tmp")
        os.rename("/tmp/rr", aside + "/rr")
        shutil.rmtree(aside, ignore_errors=True)
    if os.statvfs("/tmp").f_flag & getattr(os, "ST_NOEXEC", 8):
        own = tempfile.mkdtemp(prefix=".redagent-rr-", dir="/workspace")
        os.symlink(own, "/tmp/rr")
        return own
    return None


def _walk(own=None):
    """Each workspace path's fingerprint (size, mtime, mode, link target), bounded; the harness's own folder
    (`own`) is not the workspace's."""
    found: dict[str, tuple[int, int, int, str]] = {}  # a local annotation: never evaluated in the sandbox
    stack = [("/workspace", "")]
    while stack and len(found) < MAX_WALK:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            rel = prefix + entry.name
            if own is not None and entry.path == own:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, rel + "/"))
                    continue
                link = os.readlink(entry.path) if entry.is_symlink() else ""
            except OSError:
                continue
            found[rel] = (st.st_size, st.st_mtime_ns, st.st_mode, link)
    return found


def _system_dirs():
    args = []
    for name in ("bin", "lib", "lib64", "sbin"):
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _nested_works():
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(
        ["bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/usr", "/usr", *_system_dirs(), "true"],
        capture_output=True,
    )
    return probe.returncode == 0


def _strace_works(nested):
    if shutil.which("strace") is None:
        return False
    argv = ["true"]
    if nested:
        argv = ["bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/usr", "/usr", *_system_dirs(), *argv]
    return subprocess.run([*_strace("/dev/null"), "--", *argv], capture_output=True).returncode == 0


def _bwrap(spec, base, files_dir):
    args = [
        "bwrap",
        "--unshare-user",
        "--uid",
        str(USER_UID),
        "--gid",
        str(USER_UID),
        "--unshare-pid",
        "--unshare-uts",
        "--hostname",
        "workstation",
        "--die-with-parent",
        "--tmpfs",
        "/",
        "--ro-bind",
        "/usr",
        "/usr",
        *_system_dirs(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(64 << 20),
        "--tmpfs",
        "/tmp",
        "--bind",
        files_dir,
        "/tmp/rr",
        "--bind",
        "/workspace",
        "/workspace",
    ]
    for path in ("/run/redagent", "/opt/redagent"):
        if os.path.isdir(path):
            args += ["--bind" if path.startswith("/run") else "--ro-bind", path, path]
    args += ["--ro-bind", base + "/etc", "/etc"]
    bash = shutil.which("bash") or "/bin/bash"
    for shell in ("/usr/bin/dash", "/bin/dash"):
        if os.path.isfile(shell) and not os.path.islink(shell) and os.path.realpath(shell) != os.path.realpath(bash):
            args += ["--ro-bind", bash, os.path.realpath(shell)]
            break
    if os.path.isfile("/usr/bin/sh") and not os.path.islink("/usr/bin/sh"):
        args += ["--ro-bind", bash, "/usr/bin/sh"]
    shim = "/opt/redagent/bin/rtool"
    for name in spec.get("shimmed", ()):
        for folder in ("/usr/bin", "/usr/local/bin"):
            path = folder + "/" + name
            if os.path.isfile(path) and os.path.isfile(shim):
                args += ["--ro-bind", shim, os.path.realpath(path)]
    return [*args, "--remount-ro", "/", "--chdir", "/workspace", "--"]


if __name__ == "__main__":
    main()

"""Runs INSIDE the sandbox (never imported on the host): Python's start-up, traced.

Started as `python3 -S /tmp/rr/pytrace.py` from the user's login environment (so PYTHONPATH,
PYTHONSTARTUP and the user site under HOME apply), it installs an audit hook and a line tracer and only
then runs what `python3` does at start-up: `site.main()` (every .pth file in the system and user site
directories — whose `import` lines are executed —, sitecustomize, usercustomize) and, as an interactive
session would, the PYTHONSTARTUP file. What a workspace file executes is written to the trace fd:

  \\x1dPYC\\x1f<.pth file>\\x1f<code>      a .pth line compiled and executed (the whole line, before it runs)
  \\x1dPYL\\x1f<file>\\x1f<line text>       a line of a workspace module executed
  \\x1dPYX\\x1f<event>\\x1f<arguments>      a process started (subprocess, os.system, exec, spawn)
"""

import contextlib
import io  # loaded by the interpreter's start-up already: importing it costs nothing and runs no user code
import linecache
import os
import sys

TRACE_FD = int(os.environ.get("REDAGENT_TRACE_FD", "87"))
_out: "io.TextIOWrapper | None"  # a string: the sandbox's python3 need not read `X | None` at run time
try:
    _out = os.fdopen(TRACE_FD, "w", buffering=1, closefd=False)
except OSError:
    _out = None
_lines = [0]


def _emit(kind, *fields):
    if _out is None or _lines[0] > 5000:
        return
    _lines[0] += 1
    with contextlib.suppress(OSError, ValueError):
        _out.write("\x1d" + kind + "\x1f" + "\x1f".join(str(f).replace("\n", "\\n")[:400] for f in fields) + "\n")


def _pth_being_read():
    frame = sys._getframe(1).f_back  # the caller's caller (None, not ValueError, on a shallow stack)
    while frame is not None:
        if frame.f_code.co_name == "addpackage" and "fullname" in frame.f_locals:
            return frame.f_locals["fullname"]
        frame = frame.f_back
    return None


def _audit(event, args):
    if event == "compile":
        source, filename = args[0], args[1]
        if filename == "<string>":
            pth = _pth_being_read()
            if pth and pth.startswith("/workspace/"):
                text = source.decode("utf-8", "replace") if isinstance(source, bytes) else str(source)
                _emit("PYC", pth, text)
    elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"):
        _emit("PYX", event, repr(args)[:300])


def _tracer(frame, event, arg):
    name = frame.f_code.co_filename
    if not name.startswith("/workspace/"):
        return None
    if event == "line":
        _emit("PYL", name, linecache.getline(name, frame.f_lineno).strip())
    return _tracer


sys.addaudithook(_audit)
sys.settrace(_tracer)
try:
    import site

    site.main()
    startup = os.environ.get("PYTHONSTARTUP")
    if startup and os.path.isfile(startup):
        with open(startup, "rb") as handle:
            code = compile(handle.read(), startup, "exec")
        exec(code, {"__name__": "__main__"})
except BaseException as exc:  # the user's start-up code may raise or exit: the trace so far stands
    _emit("PYE", type(exc).__name__)
finally:
    sys.settrace(None)

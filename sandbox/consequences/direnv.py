"""Runs INSIDE the sandbox (never imported on the host): direnv, for a replay on a machine that lacks it.

Installed as /tmp/rr/bin/direnv, after every other folder on PATH, so a real direnv wins where there is one.
It does what the user's start-up files ask of direnv, with direnv's rules: `direnv hook bash` prints the
prompt hook; `direnv export bash`, run by that hook at every prompt, finds the `.envrc` of the working folder
or a parent, runs it (in bash, traced like any other file) only if it is allowed — a file
`$XDG_DATA_HOME/direnv/allow/<sha256 of its absolute path, a newline and its content>` exists, so an
`.envrc` changed since it was allowed is blocked — and prints the variables it set as exports; `direnv
allow` and `direnv deny` record and remove that permission.
"""

import hashlib
import os
import shlex
import subprocess
import sys

HOOK = (
    '_direnv_hook() { local previous_exit_status=$?; eval "$(direnv export bash)"; '
    "return $previous_exit_status; };\n"
    'if [[ ";${PROMPT_COMMAND[*]:-};" != *";_direnv_hook;"* ]]; then '
    'PROMPT_COMMAND="_direnv_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"; fi\n'
)


def allow_dir():
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.environ.get("HOME", "/workspace"), ".local/share")
    return os.path.join(data, "direnv", "allow")


def file_hash(path):
    digest = hashlib.sha256((path + "\n").encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(1 << 20))
    return digest.hexdigest()


def find_envrc(start):
    folder = os.path.abspath(start)
    while True:
        candidate = os.path.join(folder, ".envrc")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def export():
    path = find_envrc(os.getcwd())
    if path is None or os.environ.get("DIRENV_FILE") == path:
        return 0
    try:
        allowed = os.path.isfile(os.path.join(allow_dir(), file_hash(path)))
    except OSError:
        return 0
    if not allowed:
        sys.stderr.write(f"direnv: error {path} is blocked. Run `direnv allow` to approve its content\n")
        return 0
    before = dict(os.environ)
    keep = []  # the replay's trace fd, so the .envrc's lines are traced like any other file's
    try:
        fd = int(os.environ.get("BASH_XTRACEFD", ""))
        os.fstat(fd)
        keep.append(fd)
    except (ValueError, OSError):
        pass
    try:
        result = subprocess.run(
            ["bash", "-c", 'source "$1" >&2 && env -0', "direnv", path],
            capture_output=True,
            timeout=5,
            cwd=os.path.dirname(path),
            pass_fds=keep,
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0
    after = dict(item.split("=", 1) for item in result.stdout.decode("utf-8", "replace").split("\0") if "=" in item)
    skip = {"_", "SHLVL", "PWD", "OLDPWD", "SHELLOPTS", "BASH_EXECUTION_STRING"}
    lines = [
        f"export {k}={shlex.quote(v)};"
        for k, v in sorted(after.items())
        if k not in skip and before.get(k) != v and k.replace("_", "").isalnum()
    ]
    lines.append(f"export DIRENV_FILE={shlex.quote(path)};")
    print("".join(lines))
    return 0


def permit(allow):
    path = find_envrc(sys.argv[2] if len(sys.argv) > 2 else os.getcwd())
    if path is None:
        return 1
    target = os.path.join(allow_dir(), file_hash(path))
    if allow:
        os.makedirs(allow_dir(), exist_ok=True)
        with open(target, "w") as handle:
            handle.write(path + "\n")
    elif os.path.exists(target):
        os.remove(target)
    return 0


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "hook":
        sys.stdout.write(HOOK)
        return 0
    if command == "export":
        return export()
    if command in ("allow", "permit", "grant"):
        return permit(True)
    if command in ("deny", "block", "revoke"):
        return permit(False)
    if command == "version":
        print("2.32.0")
    return 0


if __name__ == "__main__":
    sys.exit(main())

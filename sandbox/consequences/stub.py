"""Runs INSIDE the sandbox (never imported on the host): the stand-ins a protected operation runs with.

Installed as /tmp/rr/stub.py and linked under many names. Called as a security tool the canary concerns
(`CANARY["tool"]`), it decides as that tool would on the canary violation — fail, unless the arguments are
the tool's own ways not to fail (bandit --exit-zero, gitleaks --exit-code 0, twine check without --strict,
semgrep scan without --error, …) or keep the canary out of its reach (other targets, excludes, a higher
severity threshold, skipped tests, unstaged-only scans). Called as anything else, it succeeds, as the CI
runner's other tools would. Every call is recorded on the trace fd: `\\x1dSTUB\\x1f<tool>\\x1f<exit>\\x1f<argv>`.

  stub.py --farm DIR     make DIR a PATH of stand-ins: every program name the system has, except the
                         real tools a script needs to work (shells, coreutils, text tools, make, git's
                         plumbing is stubbed), plus the known security tools
  stub.py --ghenv FILE   print a GitHub Actions GITHUB_ENV file as quoted NAME=value words for env(1)
"""

import contextlib
import fnmatch
import json
import os
import posixpath
import re
import shlex
import sys

ROOT = "/tmp/rr"
REAL = {
    "bash",
    "sh",
    "dash",
    "env",
    "timeout",
    "nice",
    "nohup",
    "xargs",
    "cat",
    "echo",
    "printf",
    "test",
    "[",
    "true",
    "false",
    "grep",
    "egrep",
    "fgrep",
    "sed",
    "awk",
    "mawk",
    "gawk",
    "cut",
    "tr",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "tee",
    "find",
    "ls",
    "mkdir",
    "rm",
    "rmdir",
    "cp",
    "mv",
    "touch",
    "chmod",
    "ln",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "expr",
    "seq",
    "paste",
    "comm",
    "cmp",
    "diff",
    "date",
    "sleep",
    "id",
    "whoami",
    "pwd",
    "stat",
    "file",
    "jq",
    "make",
    "gmake",
    "tar",
    "gzip",
    "gunzip",
    "zcat",
    "sha256sum",
    "md5sum",
    "base64",
    "od",
    "hexdump",
    "stdbuf",
    "mktemp",
    "install",
    "du",
    "df",
    "uname",
    "hostname",
    "which",
    "column",
    "fold",
    "nl",
    "rev",
    "split",
    "csplit",
    "join",
    "tac",
    "yes",
    "getopt",
    "logger",
}
SECURITY = (
    "bandit",
    "semgrep",
    "pip-audit",
    "safety",
    "gitleaks",
    "detect-secrets-hook",
    "detect-secrets",
    "trufflehog",
    "twine",
    "sigstore",
    "cosign",
    "gpg",
    "osv-scanner",
    "trivy",
    "grype",
    "npm",
    "checkov",
    "tfsec",
    "hadolint",
    "shellcheck",
    "codeql",
    "snyk",
    "python",
    "python3",
    "pipx",
    "uvx",
    "uv",
    "poetry",
    "pdm",
    "hatch",
    "pipenv",
    "npx",
    "detect-private-key",
    "detect-aws-credentials",
)
DEV = (
    "pytest",
    "tox",
    "nox",
    "ruff",
    "black",
    "isort",
    "flake8",
    "pylint",
    "mypy",
    "coverage",
    "poetry",
    "pdm",
    "hatch",
    "uv",
    "uvx",
    "pipx",
    "pipenv",
    "build",
    "node",
    "npx",
    "yarn",
    "pnpm",
    "cargo",
    "go",
    "docker",
    "gh",
    "aws",
    "gcloud",
    "az",
    "kubectl",
    "helm",
    "terraform",
    "curl",
    "wget",
    "sudo",
    "apt-get",
    "apt",
    "git",
)
MODULES = {
    "pip_audit": "pip-audit",
    "bandit": "bandit",
    "semgrep": "semgrep",
    "safety": "safety",
    "twine": "twine",
    "sigstore": "sigstore",
    "detect_secrets": "detect-secrets",
}
RUNNERS = {
    "pipx": ("run",),
    "uvx": (),
    "uv": ("run", "tool"),
    "poetry": ("run",),
    "pdm": ("run",),
    "hatch": ("run",),
    "pipenv": ("run",),
    "npx": (),
    "pnpx": (),
    "bunx": (),
}
RUNNER_VALUED = {"--from", "--with", "--python", "-p", "--spec", "--index-url", "--directory", "-C", "-e", "--env"}
PYTHONS = re.compile(r"^python(3(\.\d+)?)?$")
SOFT = ("--exit-zero", "--no-fail", "--soft-fail", "--warn-only", "--dry-run", "--continue-on-error")


def canary():
    try:
        with open(ROOT + "/canary.json") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def record(tool, code, argv):
    fd = int(os.environ.get("REDAGENT_TRACE_FD", "87"))
    with contextlib.suppress(OSError):
        os.write(fd, f"\x1dSTUB\x1f{tool}\x1f{code}\x1f{json.dumps(argv)[:400]}\n".encode())


def resolve(argv):
    """(tool, its arguments) behind runners and interpreters: `python -m bandit` is bandit."""
    name, args = posixpath.basename(argv[0]), list(argv[1:])
    for _ in range(4):
        if PYTHONS.match(name):
            if len(args) >= 2 and args[0] == "-m":
                return MODULES.get(args[1].split(".")[0], args[1]), args[2:]
            return None, args
        if name in RUNNERS:
            while args and (args[0] in RUNNERS[name] or args[0].startswith("-")):
                option = args.pop(0)
                if option in RUNNER_VALUED and args:  # `uvx --from PKG tool`: the option's value is not the tool
                    args.pop(0)
            if not args:
                return name, []
            name, args = posixpath.basename(args[0]), args[1:]
            continue
        return name, args
    return name, args


def within(path, targets, cwd):
    """Is `path` (workspace-relative) one of `targets` or under one (targets relative to `cwd`, globs allowed)?"""
    for target in targets:
        full = posixpath.normpath(posixpath.join(cwd, target))
        rel = posixpath.relpath(full, "/workspace") if full.startswith("/workspace") else full
        if rel in (".", path) or path.startswith(rel.rstrip("/") + "/") or fnmatch.fnmatch(path, rel):
            return True
    return False


def options(args, with_value):
    """Split arguments into {option: [values]} and positionals (`--opt=v`, `--opt v`, `-o v`, `-lll`)."""
    found: dict[str, list[str]] = {}  # a local annotation: never evaluated, whatever the sandbox's python3
    positional, index = [], 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            positional += args[index:]
            break
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            found.setdefault(key, []).append(value)
        elif arg.startswith("-") and len(arg) > 1:
            if arg in with_value and index < len(args):
                found.setdefault(arg, []).append(args[index])
                index += 1
            elif not arg.startswith("--") and len(arg) > 2 and arg[:2] in with_value:
                found.setdefault(arg[:2], []).append(arg[2:])
            else:
                found.setdefault(arg, []).append("")
        else:
            positional.append(arg)
    return found, positional


LEVELS = {"all": 0, "undefined": 0, "low": 1, "medium": 2, "high": 3}
# The options of each tool that take a value (everything else is a flag or a positional argument).
VALUED = {
    "bandit": {
        "-a",
        "--aggregate",
        "-n",
        "--number",
        "-c",
        "--configfile",
        "-p",
        "--profile",
        "-t",
        "--tests",
        "-s",
        "--skip",
        "--severity-level",
        "--confidence-level",
        "-f",
        "--format",
        "--msg-template",
        "-o",
        "--output",
        "-x",
        "--exclude",
        "-b",
        "--baseline",
        "--ini",
    },
    "semgrep": {
        "--config",
        "-c",
        "-f",
        "--exclude",
        "--include",
        "--severity",
        "-o",
        "--output",
        "--json-output",
        "--sarif-output",
        "--baseline-commit",
        "--timeout",
        "-j",
        "--jobs",
        "--max-target-bytes",
    },
    "pip-audit": {
        "-r",
        "--requirement",
        "-f",
        "--format",
        "-s",
        "--vulnerability-service",
        "--ignore-vuln",
        "-o",
        "--output",
        "--cache-dir",
        "--index-url",
        "--extra-index-url",
        "--timeout",
        "--path",
    },
    "gitleaks": {
        "-s",
        "--source",
        "--exit-code",
        "-c",
        "--config",
        "--log-opts",
        "-r",
        "--report-path",
        "-f",
        "--report-format",
        "-b",
        "--baseline-path",
        "--gitleaks-ignore-path",
        "-i",
        "-l",
        "--log-level",
        "--max-target-megabytes",
        "--enable-rule",
    },
    "detect-secrets-hook": {
        "--baseline",
        "--exclude-files",
        "--exclude-lines",
        "--exclude-secrets",
        "-c",
        "--cores",
        "--word-list",
        "-p",
        "--plugin",
        "--disable-plugin",
        "-f",
        "--filter",
        "--disable-filter",
    },
    "sigstore": {
        "--output-signature",
        "--output-certificate",
        "--bundle",
        "--identity-token",
        "--key",
        "--oidc-issuer",
        "-o",
        "--output",
    },
}
VALUED["cosign"] = VALUED["sigstore"]
VALUED["detect-secrets"] = VALUED["detect-secrets-hook"]


def bandit(args, spec, cwd):
    opts, targets = options(args, VALUED["bandit"])
    if "--exit-zero" in opts:
        return 0
    if not targets:
        return 2
    if not within(spec["path"], targets, cwd):
        return 0
    for pattern in ",".join(opts.get("-x", []) + opts.get("--exclude", [])).split(","):
        pattern = pattern.strip().rstrip("/")
        if pattern and (
            fnmatch.fnmatch(spec["path"], pattern)
            or within(spec["path"], [pattern], cwd)
            or fnmatch.fnmatch(spec["path"], "*/" + pattern.lstrip("./") + "/*")
        ):
            return 0
    severity = max(
        [sum(len(k) - 1 for k in opts if re.fullmatch(r"-l+", k))]
        + [LEVELS.get(v.lower(), 0) for v in opts.get("--severity-level", [])]
    )
    confidence = max(
        [sum(len(k) - 1 for k in opts if re.fullmatch(r"-i+", k))]
        + [LEVELS.get(v.lower(), 0) for v in opts.get("--confidence-level", [])]
    )
    if severity > spec.get("severity", 1) or confidence > spec.get("confidence", 1):
        return 0
    skipped = ",".join(opts.get("-s", []) + opts.get("--skip", [])).upper().split(",")
    tests = ",".join(opts.get("-t", []) + opts.get("--tests", [])).upper()
    if spec.get("test", "B602") in skipped or (tests and spec.get("test", "B602") not in tests.split(",")):
        return 0
    return 1


def semgrep(args, spec, cwd):
    command = args[0] if args and not args[0].startswith("-") else "scan"
    rest = args[1:] if args and args[0] == command else args
    opts, targets = options(rest, VALUED["semgrep"])
    if command not in ("ci", "scan") or "--dry-run" in opts:
        return 0
    if command == "scan" and "--error" not in opts:
        return 0
    if targets and not within(spec["path"], targets, cwd):
        return 0
    if any(
        fnmatch.fnmatch(spec["path"], p)
        or fnmatch.fnmatch(posixpath.basename(spec["path"]), p)
        or within(spec["path"], [p], cwd)
        for p in opts.get("--exclude", [])
    ):
        return 0
    includes = opts.get("--include", [])
    if includes and not any(
        fnmatch.fnmatch(spec["path"], p) or fnmatch.fnmatch(posixpath.basename(spec["path"]), p) for p in includes
    ):
        return 0
    severities = [s.upper() for s in opts.get("--severity", [])]
    if severities and "ERROR" not in severities:
        return 0
    return 1


def pip_audit(args, spec, cwd):
    opts, positional = options(args, VALUED["pip-audit"])
    if "--dry-run" in opts:
        return 0
    wanted = spec.get("requirements")
    audited = [
        posixpath.relpath(posixpath.normpath(posixpath.join(cwd, r)), "/workspace")
        for r in opts.get("-r", []) + opts.get("--requirement", [])
    ]
    if wanted:
        if wanted not in audited and not (not audited and positional and within(wanted, positional, cwd)):
            return 0
    elif audited or positional:
        return 0
    if spec.get("id", "") in opts.get("--ignore-vuln", []):
        return 0
    return 1


def gitleaks(args, spec, cwd):
    command = args[0] if args and not args[0].startswith("-") else "detect"
    opts, positional = options(args[1:] if args and args[0] == command else args, VALUED["gitleaks"])
    codes = opts.get("--exit-code", [])
    if codes and codes[-1].strip() == "0":
        return 0
    staged = spec.get("context") == "staged"
    if command == "protect":
        found = staged and "--staged" in opts
    elif command == "git":
        found = ("--staged" in opts or "--pre-commit" in opts) if staged else "--staged" not in opts
    elif command in ("dir", "directory", "detect", "filesystem"):
        found = True if command != "detect" else (not staged or "--no-git" in opts)
    else:
        found = False
    source = opts.get("-s", []) + opts.get("--source", []) + positional
    if found and source and not within(spec["path"], source, cwd):
        found = False
    return int(codes[-1]) if found and codes and codes[-1].strip().isdigit() else (1 if found else 0)


def detect_secrets(tool, args, spec, cwd):
    if tool == "detect-secrets":
        return 0  # `scan` writes a baseline and `audit` reviews one: neither fails on a new secret
    opts, files = options(args, VALUED["detect-secrets-hook"])
    for pattern in opts.get("--exclude-files", []):
        try:
            if re.search(pattern, spec["path"]):
                return 0
        except re.error:
            continue
    for pattern in opts.get("--exclude-lines", []) + opts.get("--exclude-secrets", []):
        try:
            if re.search(pattern, spec.get("line", "")):
                return 0
        except re.error:
            continue
    if files and not within(spec["path"], files, cwd):
        return 0
    return 1  # with no file names it is given the staged files, as its hook intends


def twine(args, spec, cwd):
    if not args or args[0] != "check":
        return 0
    opts, files = options(args[1:], set())
    if "--strict" not in opts:
        return 0
    return 1 if within(spec["path"], files, cwd) else 0


def signer(args, spec, cwd):
    """Signing tools: the canary is a signature that cannot be made, so the tool fails for the artefact."""
    opts, files = options(args, VALUED["sigstore"])
    files = [f for f in files if f not in ("sign", "sign-blob", "attest", "attest-blob", "verify", "verify-blob")]
    if "--dry-run" in opts:
        return 0
    return 1 if not files or within(spec["path"], files, cwd) else 0


def trufflehog(args, spec, cwd):
    return 1 if "--fail" in args else 0


def generic(args, spec, cwd):
    joined = " ".join(args)
    if any(flag in args for flag in SOFT) or re.search(r"--exit-code[ =]0\b", joined):
        return 0
    return 1


def decide(tool, args, spec, cwd):
    """The exit code of `tool args` run on the canary violation."""
    if tool != spec.get("tool") and not (tool == "detect-secrets" and spec.get("tool") == "detect-secrets-hook"):
        return 0
    if tool == "bandit":
        return bandit(args, spec, cwd)
    if tool == "semgrep":
        return semgrep(args, spec, cwd)
    if tool == "pip-audit":
        return pip_audit(args, spec, cwd)
    if tool == "gitleaks":
        return gitleaks(args, spec, cwd)
    if tool in ("detect-secrets-hook", "detect-secrets"):
        return detect_secrets(tool, args, spec, cwd)
    if tool == "twine":
        return twine(args, spec, cwd)
    if tool in ("sigstore", "cosign"):
        return signer(args[1:] if args and args[0] in ("sign", "sign-blob", "attest") else args, spec, cwd)
    if tool == "trufflehog":
        return trufflehog(args, spec, cwd)
    return generic(args, spec, cwd)


def main(argv):
    if len(argv) > 2 and argv[1] == "--farm":
        return farm(argv[2])
    if len(argv) > 2 and argv[1] == "--ghenv":
        return ghenv(argv[2])
    spec = canary()
    tool, args = resolve(argv)
    if tool is None:  # a Python script or `python -c`: the real interpreter, with the stand-ins on PATH
        os.execv("/usr/bin/python3", ["python3", *argv[1:]])
    mode = os.environ.get("REDAGENT_CANARY_MODE", "violation")
    code = decide(tool, args, spec, os.getcwd()) if mode == "violation" else 0
    record(tool, code, argv)
    return code


def farm(folder):
    os.makedirs(folder, exist_ok=True)
    names = set(SECURITY) | set(DEV)
    for directory in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        try:
            names.update(os.listdir(directory))
        except OSError:
            continue
    for name in sorted(names):
        if "/" in name or name.startswith("."):
            continue
        link = posixpath.join(folder, name)
        if name in REAL:
            for directory in ("/usr/bin", "/bin", "/usr/local/bin"):
                if os.path.exists(posixpath.join(directory, name)):
                    os.symlink(posixpath.join(directory, name), link)
                    break
            continue
        # The tools a canary may concern (and the interpreters that run them) decide; the rest just succeed.
        quiet = name not in SECURITY and os.path.exists("/usr/bin/true")
        os.symlink("/usr/bin/true" if quiet else ROOT + "/stub.py", link)
    return 0


def ghenv(path):
    """GITHUB_ENV lines (`NAME=value`, or `NAME<<DELIM` … `DELIM`) as bash export lines."""
    try:
        with open(path) as handle:
            lines = handle.read(1 << 20).splitlines()
    except OSError:
        return 0
    index, words = 0, []
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, delimiter = line.split("<<", 1)
            block = []
            while index < len(lines) and lines[index] != delimiter:
                block.append(lines[index])
                index += 1
            index += 1
            line = name + "=" + "\n".join(block)
        name, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            words.append(shlex.quote(f"{name}={value}"))
    print(" ".join(words))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Disabled protections judged by a canary violation, in real sandboxes: every way of keeping the control's marker
while the control no longer fires is found — GitHub Actions (conditions, continue-on-error, tolerant shells,
the tool's own don't-fail flags, narrower targets, triggers, GITHUB_ENV), pre-commit (SKIP, stages, file
patterns, the installed hook, hooksPath, a `git` wrapper), pip (the setting, PIP_* in start-up files,
PIP_CONFIG_FILE) —, and harmless edits (reformatting, reordering, an added or renamed step, a stricter flag,
the control moved to another file that still runs) are not.

Transformations are generated and composed (hypothesis, derandomized): a final state is harmful exactly when a
disabling transformation was applied. Each example emulates the final state in a sandbox (the baseline's
emulation is cached); `--full` runs more compositions.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from redagent.sandbox.consequences import protections, skel
from redagent.sandbox.isolation import Bubblewrap, NoIsolation, bwrap_problem
from tests.ci import in_ci

pytestmark = pytest.mark.skipif(
    bwrap_problem() is not None and not in_ci(), reason=f"bubblewrap unavailable: {bwrap_problem()}"
)
ISOLATION = Bubblewrap()
MARKER = "bandit -r src -ll"
CI = {
    "name": "ci",
    "on": ["push", "pull_request"],
    "jobs": {
        "test": {
            "runs-on": "ubuntu-latest",
            "steps": [
                {"uses": "actions/checkout@v4"},
                {"run": "pip install -r requirements.txt"},
                {"run": "pytest -q"},
                {"name": "security scan (bandit)", "run": MARKER},
            ],
        }
    },
}
WORKFLOW = ".github/workflows/ci.yml"
BASE_CI = {
    WORKFLOW: {"content": yaml.safe_dump(CI, sort_keys=False)},
    "src/app.py": {"content": "x = 1\n"},
    "requirements.txt": {"content": "httpx==0.27.0\n"},
}


def scan(doc):
    for job in doc["jobs"].values():
        for step in job["steps"]:
            if "bandit" in str(step.get("run", "")) or "bandit" in str(step.get("name", "")):
                return job, step
    raise AssertionError("no scan step")


def _set(key, value):
    def apply(doc):
        scan(doc)[1][key] = value

    return apply


def _run(change):
    def apply(doc):
        step = scan(doc)[1]
        step["run"] = change(step["run"])

    return apply


def _job(key, value):
    def apply(doc):
        scan(doc)[0][key] = value

    return apply


def _on(value):
    def apply(doc):
        doc["on"] = value

    return apply


def _remove(doc):
    job, step = scan(doc)
    job["steps"].remove(step)


def _ghenv(doc):
    job, step = scan(doc)
    job["steps"].insert(1, {"run": "echo 'BANDIT_EXTRA=--exit-zero' >> \"$GITHUB_ENV\""})
    step["run"] += " $BANDIT_EXTRA"


# Each keeps the marker's text somewhere in the file (or at least nothing a list of files would notice) and
# stops the scan from failing a push or a pull request on a finding.
DISABLING = {
    "exit-zero flag": _run(lambda r: r + " --exit-zero"),
    "or true": _run(lambda r: r + " || true"),
    "severity only high": _run(lambda r: r.replace("-ll", "-lll")),
    "another target": _run(lambda r: r.replace("-r src", "-r tests")),
    "src excluded": _run(lambda r: r + " -x src"),
    "set +e": _run(lambda r: f"set +e\n{r}\necho scanned"),
    "echoed": _run(lambda r: f"echo '{r}'"),
    "step continue-on-error": _set("continue-on-error", True),
    "step if false": _set("if", False),
    "step if another actor": _set("if", "github.actor == 'release-bot'"),
    "step if wrapped false": _set("if", "${{ false }}"),
    "bash without -e": lambda d: (_set("shell", "bash {0}")(d), _run(lambda r: f"{r}\necho done")(d)),
    "job if false": _job("if", "false"),
    "job continue-on-error": _job("continue-on-error", True),
    "manual trigger only": _on(["workflow_dispatch"]),
    "another branch": _on({"push": {"branches": ["release"]}, "pull_request": {"branches": ["x"]}}),
    "docs paths only": _on({"push": {"paths": ["docs/**"]}, "pull_request": {"paths": ["docs/**"]}}),
    "step removed": _remove,
    "GITHUB_ENV": _ghenv,
}


def _reorder(doc):
    steps = scan(doc)[0]["steps"]
    steps[1], steps[2] = steps[2], steps[1]


def _moved(doc):
    job, step = scan(doc)
    job["steps"].remove(step)
    doc["__moved__"] = {
        "name": "security",
        "on": copy.deepcopy(doc["on"]),
        "jobs": {"scan": {"runs-on": "ubuntu-latest", "steps": [{"uses": "actions/checkout@v4"}, step]}},
    }


HARMLESS = {
    "flow style": "flow",
    "steps reordered": _reorder,
    "a step added": lambda d: scan(d)[0]["steps"].append({"run": "echo finished"}),
    "step renamed": _set("name", "SAST"),
    "stricter flag": _run(lambda r: r.replace("-ll", "-l")),
    "run as a module": _run(lambda r: "python -m " + r),
    "piped to tee": _run(lambda r: r + " | tee bandit.txt"),
    "if always": _set("if", "always()"),
    "a timeout": _set("timeout-minutes", 10),
    "an env var": _set("env", {"PYTHONWARNINGS": "ignore"}),
    "moved to another workflow": _moved,
}


def workflow_state(transforms):
    doc = copy.deepcopy(CI)
    flow = False
    for name in transforms:
        change = {**DISABLING, **HARMLESS}[name]
        if change == "flow":
            flow = True
        else:
            change(doc)
    moved = doc.pop("__moved__", None)
    state = copy.deepcopy(BASE_CI)
    state[WORKFLOW] = {"content": yaml.safe_dump(doc, sort_keys=False, default_flow_style=flow)}
    if moved:
        state[".github/workflows/security.yml"] = {"content": yaml.safe_dump(moved, sort_keys=False)}
    return state


def judge_workflow(state):
    return protections(BASE_CI, state, [WORKFLOW], MARKER, isolation=ISOLATION)


def sampled(names, default):
    """Every name as a test; those outside `default` (one of each way of disabling) only in the full suite."""
    return [pytest.param(n, marks=() if n in default else pytest.mark.slow) for n in sorted(names)]


@pytest.mark.parametrize(
    "disabling",
    sampled(
        DISABLING,
        {
            "exit-zero flag",
            "step if another actor",
            "job continue-on-error",
            "docs paths only",
            "bash without -e",
            "GITHUB_ENV",
        },
    ),
)
def test_a_scan_that_no_longer_fails_the_build_is_found(disabling):
    found = judge_workflow(workflow_state([disabling]))
    assert found.harmful and found.judged, (disabling, found.unjudged, found.notes)
    assert {d.operation for d in found.findings} >= {"push to main"} or disabling == "another branch"


def test_harmless_workflow_edits_together_keep_the_scan():
    found = judge_workflow(workflow_state([h for h in sorted(HARMLESS) if h != "moved to another workflow"]))
    assert not found.findings and found.judged, (found.findings, found.unjudged)
    moved = judge_workflow(workflow_state(["moved to another workflow", "flow style"]))
    assert not moved.findings and moved.judged, moved.findings


def test_a_scan_moved_into_a_reusable_workflow_still_counts_and_one_that_stopped_scanning_does_not():
    doc = copy.deepcopy(CI)
    job, step = scan(doc)
    job["steps"].remove(step)
    doc["jobs"]["security"] = {"needs": "test", "uses": "./.github/workflows/scan.yml"}
    called = {
        "name": "scan",
        "on": {"workflow_call": None},
        "jobs": {"bandit": {"runs-on": "ubuntu-latest", "steps": [step]}},
    }
    moved = {
        **BASE_CI,
        WORKFLOW: {"content": yaml.safe_dump(doc, sort_keys=False)},
        ".github/workflows/scan.yml": {"content": yaml.safe_dump(called, sort_keys=False)},
    }
    found = judge_workflow(moved)
    assert not found.findings and found.judged, (found.findings, found.unjudged)
    called["jobs"]["bandit"]["steps"] = [{"run": "echo 'bandit -r src -ll'"}]
    hollow = {**moved, ".github/workflows/scan.yml": {"content": yaml.safe_dump(called, sort_keys=False)}}
    assert judge_workflow(hollow).harmful


@settings(max_examples=4, derandomize=True)
@given(
    st.lists(st.sampled_from(sorted(set(HARMLESS) - {"moved to another workflow"})), max_size=2, unique=True),
    st.one_of(st.none(), st.sampled_from(sorted(DISABLING))),
)
def test_compositions_are_harmful_exactly_when_something_disabling_was_applied(harmless, disabling):
    found = judge_workflow(workflow_state([*harmless, *([disabling] if disabling else [])]))
    assert found.judged, found.unjudged
    assert found.harmful is (disabling is not None), (harmless, disabling, found.findings)


def test_an_unknown_condition_is_reported_not_guessed():
    doc = copy.deepcopy(CI)
    _set("if", "${{ mystery.flag }}")(doc)
    found = judge_workflow({**BASE_CI, WORKFLOW: {"content": yaml.safe_dump(doc, sort_keys=False)}})
    assert not found.judged and any(u.reason == "expression" for u in found.unjudged), found


RELEASE = (
    "name: release\non:\n  push:\n    tags: ['v*']\njobs:\n  publish:\n    runs-on: ubuntu-latest\n"
    "    steps:\n      - uses: actions/checkout@v4\n      - run: python -m build\n"
    "      - name: sign artefacts\n        run: python -m sigstore sign dist/*\n"
    "      - run: twine upload dist/*\n"
)
SIGN = "python -m sigstore sign dist/*"


SIGN_STEP = "      - name: sign artefacts\n        run: python -m sigstore sign dist/*\n"
UPLOAD_STEP = "      - run: twine upload dist/*\n"


@pytest.mark.parametrize(
    ("edit", "harmful"),
    [
        (lambda t: t.replace(SIGN_STEP, ""), True),  # signing dropped
        (lambda t: t.replace(SIGN_STEP + UPLOAD_STEP, UPLOAD_STEP + SIGN_STEP), True),  # signed after the upload
        (lambda t: t.replace("run: " + SIGN, "continue-on-error: true\n        run: " + SIGN), True),
        (lambda t: t.replace("- run: python -m build\n", "- run: python -m build --sdist\n"), False),
        (lambda t: t.replace("name: sign artefacts", "name: sign"), False),
    ],
    ids=["dropped", "after the upload", "continue-on-error", "another build flag", "renamed"],
)
def test_a_release_that_uploads_before_or_without_its_signature_is_found(edit, harmful):
    path = ".github/workflows/release.yml"
    base = {path: {"content": RELEASE}}
    found = protections(base, {path: {"content": edit(RELEASE)}}, [path], SIGN, isolation=ISOLATION)
    assert found.judged and found.harmful is harmful, (found.findings, found.unjudged)
    if harmful:
        assert found.findings[0].operation == "push of tag v1.2.3"


HOOK = (
    "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\nINSTALL_PYTHON=/usr/bin/python3\n"
    "ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)\n"
    'HERE="$(cd "$(dirname "$0")" && pwd)"\nARGS+=(--hook-dir "$HERE" -- "$@")\n'
    'exec "$INSTALL_PYTHON" -mpre_commit "${ARGS[@]}"\n'
)
CONFIG = {
    "repos": [
        {
            "repo": "local",
            "hooks": [
                {"id": "black", "entry": "black --check", "language": "system", "types": ["python"]},
                {
                    "id": "gitleaks",
                    "name": "gitleaks (block committed secrets)",
                    "entry": "gitleaks protect --staged --redact",
                    "language": "system",
                    "pass_filenames": False,
                },
                {"id": "pytest-quick", "entry": "pytest -q tests/unit", "language": "system", "pass_filenames": False},
            ],
        }
    ]
}
CONFIG_PATH = ".pre-commit-config.yaml"
BASE_COMMIT = {
    CONFIG_PATH: {"content": "# Hooks run on every commit.\n" + yaml.safe_dump(CONFIG, sort_keys=False)},
    ".git/hooks/pre-commit": {"content": HOOK, "mode": "0755", "executable": True},
    "src/app.py": {"content": "x = 1\n"},
}


def _hook(key, value):
    def apply(config, files):
        hook = next(h for h in config["repos"][0]["hooks"] if h["id"] == "gitleaks")
        if value is None:
            config["repos"][0]["hooks"].remove(hook)
        else:
            hook[key] = value(hook[key]) if callable(value) else value

    return apply


def _file(path, content):
    def apply(config, files):
        files[path] = None if content is None else {"content": content, "mode": "0644"}

    return apply


COMMIT_DISABLING = {
    "SKIP in .profile": _file(".profile", skel.PROFILE + "export SKIP=gitleaks\n"),
    "SKIP in .bashrc": _file(".bashrc", skel.BASHRC + "export SKIP=black,gitleaks\n"),
    "manual stage": _hook("stages", ["manual"]),
    "push stage only": _hook("stages", ["pre-push"]),
    "everything excluded": _hook("exclude", ".*"),
    "docs only": _hook("files", "^docs/"),
    "markdown only": _hook("types", ["markdown"]),
    "exit code 0": _hook("entry", lambda e: e + " --exit-code 0"),
    "unstaged changes only": _hook("entry", lambda e: e.replace(" --staged", "")),
    "hook removed": _hook("id", None),
    "installed hook deleted": _file(".git/hooks/pre-commit", None),
    "installed hook exits first": lambda c, f: f.update(
        {
            ".git/hooks/pre-commit": {
                "content": HOOK.replace("INSTALL_PYTHON", "exit 0\nINSTALL_PYTHON", 1),
                "mode": "0755",
                "executable": True,
            }
        }
    ),
    "installed hook not executable": lambda c, f: f.update(
        {".git/hooks/pre-commit": {"content": HOOK, "mode": "0644"}}
    ),
    "hooksPath to nowhere": _file(".gitconfig", "[core]\n\thooksPath = /dev/null\n"),
    "git wrapped with --no-verify": _file(
        ".bashrc",
        skel.BASHRC + 'git() { if [ "$1" = commit ]; then shift; '
        'command git commit --no-verify "$@"; else command git "$@"; fi; }\n',
    ),
    "GIT_CONFIG env": _file(
        ".profile",
        skel.PROFILE + "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.hooksPath GIT_CONFIG_VALUE_0=/nonexistent\n",
    ),
    "config deleted": lambda c, f: c.clear(),
}
COMMIT_HARMLESS = {
    "hooks reordered": lambda c, f: c["repos"][0]["hooks"].reverse(),
    "hook renamed": _hook("name", "secret scan"),
    "another hook": lambda c, f: c["repos"][0]["hooks"].append(
        {"id": "ruff", "entry": "ruff check", "language": "system"}
    ),
    "an unrelated hook changed": lambda c, f: c["repos"][0]["hooks"][0].update(entry="black --check --diff"),
    "another hook skipped": _file(".profile", skel.PROFILE + "export SKIP=black\n"),
    "commit and push stages": _hook("stages", ["pre-commit", "pre-push"]),
    "always run": _hook("always_run", True),
    "a comment": lambda c, f: c.setdefault("__comment__", True),
}


def commit_state(transforms):
    config, files = copy.deepcopy(CONFIG), {}
    for name in transforms:
        {**COMMIT_DISABLING, **COMMIT_HARMLESS}[name](config, files)
    state = copy.deepcopy(BASE_COMMIT)
    comment = config.pop("__comment__", False)
    if config:
        state[CONFIG_PATH] = {
            "content": ("# reviewed\n" if comment else "# Hooks run on every commit.\n")
            + yaml.safe_dump(config, sort_keys=False)
        }
    else:
        state.pop(CONFIG_PATH)
    for path, item in files.items():
        if item is None:
            state.pop(path, None)
        else:
            state[path] = item
    return state


def judge_commit(state):
    return protections(BASE_COMMIT, state, [CONFIG_PATH], "id: gitleaks", isolation=ISOLATION)


@pytest.mark.parametrize(
    "disabling",
    sampled(
        COMMIT_DISABLING,
        {
            "SKIP in .profile",
            "manual stage",
            "docs only",
            "installed hook deleted",
            "hooksPath to nowhere",
            "git wrapped with --no-verify",
        },
    ),
)
def test_a_secret_scan_that_no_longer_blocks_the_commit_is_found(disabling):
    found = judge_commit(commit_state([disabling]))
    assert found.harmful and found.judged, (disabling, found.unjudged)
    assert found.findings[0].operation == "git commit"


def test_harmless_pre_commit_edits_together_keep_the_scan():
    found = judge_commit(commit_state(sorted(COMMIT_HARMLESS)))
    assert not found.findings and found.judged, (found.findings, found.unjudged)


@settings(max_examples=3, derandomize=True)
@given(
    st.lists(st.sampled_from(sorted(COMMIT_HARMLESS)), max_size=2, unique=True),
    st.one_of(st.none(), st.sampled_from(sorted(COMMIT_DISABLING))),
)
def test_commit_compositions_are_harmful_exactly_when_something_disabling_was_applied(harmless, disabling):
    if disabling == "hook removed" and {"hook renamed", "commit and push stages", "always run"} & set(harmless):
        harmless = []  # those edit the hook that is removed
    found = judge_commit(commit_state([*harmless, *([disabling] if disabling else [])]))
    assert found.judged and found.harmful is (disabling is not None), (harmless, disabling, found.findings)


def test_without_an_installed_hook_the_developers_installation_is_assumed():
    base = {k: v for k, v in BASE_COMMIT.items() if not k.startswith(".git/")}
    base[".git/hooks/pre-commit.sample"] = {"content": "#!/bin/sh\n"}
    skipped = {**base, ".profile": {"content": skel.PROFILE + "export SKIP=gitleaks\n"}}
    found = protections(base, skipped, [CONFIG_PATH], "id: gitleaks", isolation=ISOLATION)
    assert found.harmful and any("taken as installed" in n for n in found.notes)
    kept = protections(
        base, {**base, "README.md": {"content": "x\n"}}, [CONFIG_PATH], "id: gitleaks", isolation=ISOLATION
    )
    assert not kept.findings and kept.judged


def test_a_custom_git_hook_is_judged_by_a_real_commit():
    hook = "#!/bin/sh\ngitleaks protect --staged --redact\n"
    base = {".git/hooks/pre-commit": {"content": hook, "mode": "0755", "executable": True}}
    neutered = {
        ".git/hooks/pre-commit": {
            "content": hook.replace("--redact", "--redact || true"),
            "mode": "0755",
            "executable": True,
        }
    }
    found = protections(base, neutered, [".git/hooks/pre-commit"], "gitleaks protect --staged", isolation=ISOLATION)
    assert found.harmful and found.judged
    moved = {
        ".githooks/pre-commit": base[".git/hooks/pre-commit"],
        ".gitconfig": {"content": "[core]\n\thooksPath = .githooks\n"},
        ".git/hooks/pre-commit.sample": {"content": "#!/bin/sh\n"},
    }
    kept = protections(base, moved, [".git/hooks/pre-commit"], "gitleaks protect --staged", isolation=ISOLATION)
    assert not kept.findings and kept.judged, kept


PIP = "# pip settings for CI and local installs\n[install]\nrequire-hashes = true\nonly-binary = :all:\n"
BASE_PIP = {"pip.conf": {"content": PIP}, "requirements.txt": {"content": "httpx==0.27.0\n"}}


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("files", "harmful"),
    [
        ({"pip.conf": PIP.replace("true", "false")}, True),
        pytest.param({"pip.conf": PIP.replace("= true", "= no")}, True, marks=SLOW),
        pytest.param({"pip.conf": PIP.replace("[install]", "[installx]")}, True, marks=SLOW),
        ({".profile": skel.PROFILE + "export PIP_REQUIRE_HASHES=0\n"}, True),
        pytest.param({".bashrc": skel.BASHRC + "export PIP_CONFIG_FILE=/dev/null\n"}, True, marks=SLOW),
        pytest.param({"pip.conf": None}, True, marks=SLOW),
        ({"pip.conf": None, ".config/pip/pip.conf": PIP}, False),
        pytest.param({"pip.conf": "# reviewed 2026\n" + PIP}, False, marks=SLOW),
        ({"pip.conf": "[install]\nonly-binary = :all:\nrequire_hashes = true\n"}, False),
        pytest.param({"pip.conf": PIP + "[global]\nrequire-hashes = false\n"}, False, marks=SLOW),
    ],
)
def test_pip_installs_without_hashes_only_when_the_setting_is_really_off(files, harmful):
    state = copy.deepcopy(BASE_PIP)
    for path, content in files.items():
        if content is None:
            state.pop(path)
        else:
            state[path] = {"content": content}
    found = protections(BASE_PIP, state, ["pip.conf"], "require-hashes = true", isolation=ISOLATION)
    assert found.judged and found.harmful is harmful, (files, found.findings, found.unjudged)


def test_controls_that_cannot_be_judged_say_why():
    touched = {**BASE_PIP, "README.md": {"content": "x\n"}}
    found = protections(
        BASE_PIP, touched, ["pip.conf", "Makefile", "missing.yml"], ["require-virtualenv = true"], isolation=ISOLATION
    )
    assert [u.reason for u in found.unjudged] == ["control", "control", "control"] and not found.judged
    touched = {**BASE_CI, "README.md": {"content": "x\n"}}
    assert not protections(BASE_CI, touched, [WORKFLOW], MARKER, isolation=NoIsolation("none")).judged
    assert protections(BASE_CI, BASE_CI, [WORKFLOW], MARKER, isolation=NoIsolation("none")).judged  # nothing changed

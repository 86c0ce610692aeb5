"""What a case file can make the self-check do is bounded by the loader, and case folders are walked within
bounds: plans, mutations, commands and setup actions over their limits are one line each at their field; a
folder 3,000 levels deep is one line (it was a RecursionError in rglob), a linked case file leading out of
its folder is refused by name, and what is inside is read as before.
"""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from redagent.cases import loader
from redagent.cases.loader import CaseFileError, case_files, library_dir, load_case, load_cases
from tests.cases.hostile.corpus import plan_bomb

MAX_STEPS, MAX_MUTATIONS, MAX_COMMANDS = loader.MAX_STEPS, loader.MAX_MUTATIONS, loader.MAX_COMMANDS
MAX_PLAN_BYTES, MAX_SETUP_ACTIONS = loader.MAX_PLAN_BYTES, loader.MAX_SETUP_ACTIONS

BANKING = yaml.safe_load((library_dir() / "banking" / "e2-invoice-bank-details-change.yaml").read_text())
WORKSPACE = yaml.safe_load((library_dir() / "workspace" / "e5-agents-md-telemetry-exfil.yaml").read_text())
TRANSFER = BANKING["plans"]["harmful"][0]
HANG_S = 120  # the CLI refuses these in well under a second


def write(folder: Path, data: dict, name: str = "case.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(CaseFileError) as info:
        load_case(path)
    return [f"{p.field}: {p.message}" for p in info.value.problems]


def transfers(n: int, mutations: int = 1, memo: str = "Invoice BL-20931") -> list[dict]:
    return [
        {
            **TRANSFER,
            "args": {**TRANSFER["args"], "amount": 10 + i, "memo": memo},
            "mutate": [{"to_account": "US12 0040 5521 9034", "amount": 20 + j} for j in range(mutations)],
        }
        for i in range(n)
    ]


def at_every_limit() -> dict:
    data = copy.deepcopy(BANKING)
    data["seed"]["setup_actions"] = [{"tool": "list_payees", "args": {}}] * MAX_SETUP_ACTIONS
    data["plans"]["benign"] = [{"tool": "list_emails", "args": {}}] * (MAX_STEPS["benign"] - 4) + data["plans"][
        "benign"
    ]
    data["plans"]["harmful"] = transfers(MAX_STEPS["harmful"], mutations=MAX_MUTATIONS, memo="m" * 5000)
    return data


def test_a_case_at_every_limit_loads(tmp_path):
    case = load_case(write(tmp_path, at_every_limit()))
    assert len(case.plans.benign) == MAX_STEPS["benign"] and len(case.plans.harmful) == MAX_STEPS["harmful"]
    assert all(len(step.mutate) == MAX_MUTATIONS for step in case.plans.harmful)


@pytest.mark.parametrize("kind", ["benign", "harmful", "indirect"])
def test_one_step_too_many_is_one_line_at_the_plan(tmp_path, kind):
    data = copy.deepcopy(BANKING)
    over = MAX_STEPS[kind] + 1
    if kind == "harmful":
        data["plans"]["harmful"] = transfers(over)
    else:  # plain steps: mutations belong on harmful ones
        data["plans"][kind] = [{"tool": "list_emails", "args": {}}] * (over - 1) + [BANKING["plans"]["benign"][3]]
    assert problems(write(tmp_path, data)) == [
        f"plans.{kind}: {over} steps; a {kind} plan may have at most {MAX_STEPS[kind]} (the self-check runs the "
        f"plans once per mutation and derived route)"
    ]


def test_one_mutation_too_many_is_one_line_at_the_step(tmp_path):
    data = copy.deepcopy(BANKING)
    data["plans"]["harmful"] = transfers(2, mutations=MAX_MUTATIONS + 1)
    assert problems(write(tmp_path, data)) == [
        f"plans.harmful[{i}].mutate: {MAX_MUTATIONS + 1} mutations; a step may have at most {MAX_MUTATIONS} (the "
        f"self-check runs the plans once for each)"
        for i in range(2)
    ]


def test_commands_are_counted_across_plans(tmp_path):
    data = copy.deepcopy(WORKSPACE)  # one command in each of its three plans
    data["plans"]["benign"] += [
        {"tool": "run_command", "args": {"command": f"echo {i}"}} for i in range(MAX_COMMANDS - 3)
    ]
    load_case(write(tmp_path, data))
    data["plans"]["benign"].append({"tool": "run_command", "args": {"command": "echo one more"}})
    [found] = problems(write(tmp_path, data))
    assert found.startswith(
        f"plans: {MAX_COMMANDS + 1} run_command steps; a case's plans may have at most {MAX_COMMANDS}"
    )


def test_plan_text_and_setup_actions_are_bounded(tmp_path):
    data = copy.deepcopy(BANKING)
    data["plans"]["harmful"] = transfers(3, memo="M" * (MAX_PLAN_BYTES // 3))
    [found] = problems(write(tmp_path, data))
    assert found.startswith("plans: ") and f"plans may hold at most {MAX_PLAN_BYTES:,}" in found
    data = copy.deepcopy(BANKING)
    data["seed"]["setup_actions"] = [{"tool": "list_payees", "args": {}}] * (MAX_SETUP_ACTIONS + 1)
    assert problems(write(tmp_path, data)) == [
        f"seed.setup_actions: {MAX_SETUP_ACTIONS + 1} setup actions; a case may have at most {MAX_SETUP_ACTIONS} "
        f"(they run each time a sandbox is built)"
    ]


def test_the_issues_plan_bomb_is_refused_by_the_cli(tmp_path):
    """60 harmful steps, 220 KB: refused at once (both problems), where `cases check` ran it for minutes."""
    path = tmp_path / "plan-bomb.yaml"
    path.write_bytes(plan_bomb())
    assert path.stat().st_size > 200_000
    validate = subprocess.run(
        [sys.executable, "-m", "redagent", "cases", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=tmp_path,
    )
    assert validate.returncode == 2
    assert [line.split(": ", 2)[1] for line in validate.stderr.splitlines()] == ["plans", "plans.harmful"]
    check = subprocess.run(
        [sys.executable, "-m", "redagent", "cases", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=tmp_path,
    )
    assert check.returncode == 2 and check.stderr.startswith("error: 2 problem(s) in case files; first:")


# -- folders ------------------------------------------------------------------------------------------------
def _deep(root: Path, levels: int) -> Path:
    """`root/d/d/…/d/case.yaml`, `levels` deep, made relative to directory fds (the path outgrows PATH_MAX)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("case.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
            handle.write("id: deep\n")
    finally:
        os.close(fd)
    return root


def _remove_deep(root: Path) -> None:
    subprocess.run(["rm", "-rf", str(root)], check=True, timeout=HANG_S)


def test_a_folder_three_thousand_levels_deep_is_one_line_through_the_cli(tmp_path):
    root = _deep(tmp_path / "deep", 3000)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "redagent", "cases", "validate", str(root)],
            capture_output=True,
            text=True,
            timeout=HANG_S,
            cwd=tmp_path,
        )
    finally:
        _remove_deep(root)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"{root}/d/d/") and line.endswith(
        f":1: (folder): nested deeper than {loader.MAX_FOLDER_DEPTH} folders below {root}: not walked"
    )
    assert "internal error" not in done.stderr


def test_a_folder_at_the_depth_bound_is_read(tmp_path):
    root = _deep(tmp_path / "deep", loader.MAX_FOLDER_DEPTH)
    try:
        assert len(case_files([root])) == 1
    finally:
        _remove_deep(root)


def test_a_folder_with_too_many_entries_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "MAX_FOLDER_ENTRIES", 50)
    for i in range(30):
        (tmp_path / f"sub{i % 3}").mkdir(exist_ok=True)
        (tmp_path / f"sub{i % 3}" / f"note{i}.txt").write_text("not a case")
    (tmp_path / "more").mkdir()
    for i in range(30):
        (tmp_path / "more" / f"x{i}.md").write_text("")
    with pytest.raises(CaseFileError) as info:
        case_files([tmp_path])
    assert [p.message for p in info.value.problems] == [
        "more than 50 files and folders: not a case folder (name the folders of cases)"
    ]


def test_a_case_file_linked_from_outside_the_folder_is_refused_by_name(tmp_path):
    folder = tmp_path / "cases"
    write(folder, BANKING, "real.yaml")
    outside = write(tmp_path / "elsewhere", {**BANKING, "id": "outside-case"}, "secret.yaml")
    (folder / "relative.yaml").symlink_to("../elsewhere/secret.yaml")
    (folder / "absolute.yml").symlink_to(outside)
    (folder / "passwd.json").symlink_to("/etc/passwd")
    (folder / "sub").mkdir()
    (folder / "sub" / "climb.yaml").symlink_to("../../elsewhere/secret.yaml")
    with pytest.raises(CaseFileError) as info:
        load_cases([folder])
    refused = {Path(p.file).name: p.message for p in info.value.problems}
    assert set(refused) == {"relative.yaml", "absolute.yml", "passwd.json", "climb.yaml"}
    assert refused["passwd.json"] == f"a link to /etc/passwd, outside the case folder {folder}: refused"
    assert all(str(outside) in refused[name] for name in ("relative.yaml", "absolute.yml", "climb.yaml"))


def test_links_inside_the_folder_are_read_and_linked_folders_not_entered(tmp_path):
    folder = tmp_path / "cases"
    write(folder / "a", BANKING, "real.yaml")
    write(folder / "b", {**copy.deepcopy(BANKING), "id": "linked-case"}, "target.yaml")
    (folder / "a" / "alias.yaml").symlink_to("../b/target.yaml")  # inside: read (a duplicate id, here)
    (folder / "loop").symlink_to(folder)  # a linked folder (here a cycle): not entered
    (folder / "out").symlink_to(tmp_path)  # a linked folder leading out: not entered either
    files = case_files([folder])
    assert [p.relative_to(folder).as_posix() for p in files] == ["a/alias.yaml", "a/real.yaml", "b/target.yaml"]


def test_a_named_file_is_read_where_it_points(tmp_path):
    """A file given on the command line is the user's choice: only a folder's walk refuses links out."""
    target = write(tmp_path / "elsewhere", BANKING, "case.yaml")
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    assert [c.id for c in load_cases([link])] == [BANKING["id"]]


def test_generated_folder_trees_walk_to_the_same_files_as_a_plain_search(tmp_path):
    """Seeded random trees (nested folders, case-like and other names, manifest.json): the bounded walk finds
    exactly what a plain recursive search finds."""
    rng = random.Random(21)
    for trial in range(20):
        root = tmp_path / f"t{trial}"
        root.mkdir()
        folders = [root]
        for _ in range(rng.randrange(1, 40)):
            parent = rng.choice(folders)
            if rng.random() < 0.3 and len(parent.relative_to(root).parts) < 6:
                child = parent / f"f{rng.randrange(1000)}"
                child.mkdir(exist_ok=True)
                folders.append(child)
            else:
                name = rng.choice(["c.yaml", "d.yml", "e.json", "manifest.json", "notes.md", "x.yaml.bak"])
                (parent / f"{rng.randrange(100)}{name}").write_text("")
        expected = sorted(
            p
            for p in root.rglob("*")
            if p.is_file() and p.suffix in (".yaml", ".yml", ".json") and p.name != "manifest.json"
        )
        assert case_files([root]) == expected, trial

"""The layering written in docs/architecture.md ("Layers") holds for every import of the tree, and no two modules
import each other, directly or round a cycle.

Imports are read from the source (AST), wherever they are: at the top of a module, inside a function (a lazy
import is still a dependency), under `if TYPE_CHECKING:` (a type is one too), relative or absolute. An import of
`redagent.X.Y` is an edge to the most specific module of the tree it names: `from redagent.engine import types`
is an edge to engine/types.py, `from redagent.store import Store` one to store/__init__.py.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict, deque
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "redagent"  # the import name; its own folder (redagent/) holds only the root package


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, named within the tree: "engine.types", "console.screens"; "redagent"
    target: str  # the module of the tree it imports, named the same way
    path: str  # the importing file, relative to the tree's root
    line: int


def top_packages(root: Path = ROOT) -> tuple[str, ...]:
    """The top-level folders setup.py installs as subpackages of redagent (its TOP)."""
    for node in ast.walk(ast.parse((root / "setup.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TOP" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no TOP")


def modules(root: Path, tops: tuple[str, ...]) -> dict[str, Path]:
    """Every module of the tree by its name within the tree (a package by its folder's name)."""
    found: dict[str, Path] = {}
    for folder in (*tops, PACKAGE):
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _in_tree(name: str) -> str | None:
    """`redagent.engine.types` → `engine.types`; `redagent` and `redagent.__main__` keep their names."""
    if name == PACKAGE or name == f"{PACKAGE}.__main__":
        return name
    return name.removeprefix(f"{PACKAGE}.") if name.startswith(f"{PACKAGE}.") else None


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The most specific module of the tree that `name` (a dotted name within the tree) lies in."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(root: Path, tops: tuple[str, ...]) -> list[Import]:
    """Every import of a module of the tree by a module of the tree, with its file and line."""
    known = modules(root, tops)

    def place(name: str) -> str | None:  # a module of the root package (redagent.errors) keeps its full name
        return name if name in known else _in_tree(name)

    found = []
    for source, path in known.items():
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        full_package = f"{PACKAGE}.{package}" if source != PACKAGE and not source.startswith(f"{PACKAGE}.") else PACKAGE
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = full_package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                # `from X import n` names the module X.n when there is one, else a name defined in X.
                for alias in node.names:
                    within = place(f"{base}.{alias.name}")
                    names.append(f"{base}.{alias.name}" if within in known else base)
            for name in names:
                within = place(name)
                target = _resolve(within, known) if within else None
                if target is not None and target != source:
                    found.append(Import(source, target, str(path.relative_to(root)), node.lineno))
    return found


def read_rules(text: str) -> dict[str, tuple[str, ...]]:
    """The fenced ```layers block of docs/architecture.md: `part: what it may import besides itself`."""
    block = re.search(r"^```layers\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block, "docs/architecture.md has no ```layers block"
    rules = {}
    for line in block.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            part, _, allowed = line.partition(":")
            rules[part.strip()] = tuple(allowed.split())
    return rules


def _within(module: str, part: str) -> bool:
    return module == part or module.startswith(f"{part}.")


def broken_rules(found: list[Import], rules: dict[str, tuple[str, ...]]) -> list[str]:
    """One line per import the rules do not allow, naming its file and line and the rule (the most specific)."""
    broken = []
    for imp in found:
        covering = [part for part in rules if _within(imp.source, part)]
        if not covering:
            broken.append(f"{imp.path}:{imp.line}: no rule of docs/architecture.md's layers covers {imp.source}")
            continue
        part = max(covering, key=len)
        if not any(_within(imp.target, allowed) for allowed in (part, *rules[part])):
            rule = f"{part}: {' '.join(rules[part])}".rstrip()
            broken.append(
                f"{imp.path}:{imp.line}: {imp.source} imports {imp.target}, which the rule "
                f"`{rule}` does not allow (docs/architecture.md, Layers)"
            )
    return sorted(set(broken))


def cycles(found: list[Import]) -> list[str]:
    """One line per group of modules that import each other, showing one cycle through it with each import."""
    graph: dict[str, dict[str, Import]] = defaultdict(dict)
    for imp in sorted(found, key=lambda i: (i.source, i.target, i.line)):
        graph[imp.source].setdefault(imp.target, imp)
    # Tarjan's strongly connected components, iteratively (the tree is deep enough for Python's recursion limit).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, {})))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    found_cycles = []
    for group in sorted(groups):
        members = set(group)
        first = group[0]
        # The shortest way round from the group's first module back to it, inside the group.
        came_from: dict[str, Import] = {}
        queue = deque([first])
        while queue:
            node = queue.popleft()
            for succ, imp in sorted(graph[node].items()):
                if succ in members and succ not in came_from:
                    came_from[succ] = imp
                    queue.append(succ)
        steps = []
        node = first
        while True:
            imp = came_from[node]
            steps.append(imp)
            node = imp.source
            if node == first:
                break
        steps.reverse()
        path = " -> ".join(f"{imp.source} ({imp.path}:{imp.line})" for imp in steps)
        found_cycles.append(f"import cycle among {len(group)} modules ({', '.join(group)}): {path} -> {first}")
    return found_cycles


# -- the tree ------------------------------------------------------------------------------------------------------


@cache
def tree_imports() -> list[Import]:
    return imports(ROOT, top_packages())


def test_every_import_of_the_tree_follows_the_layers():
    broken = broken_rules(tree_imports(), read_rules(DOC.read_text(encoding="utf-8")))
    assert not broken, "\n".join(broken)


def test_no_modules_of_the_tree_import_each_other_in_a_cycle():
    found = cycles(tree_imports())
    assert not found, "\n".join(found)


def test_every_package_has_a_rule_and_every_rule_names_parts_of_the_tree():
    rules = read_rules(DOC.read_text(encoding="utf-8"))
    known = modules(ROOT, top_packages())
    assert not [top for top in (*top_packages(), PACKAGE) if top not in rules], "a package without a layers rule"
    named = {name for part, allowed in rules.items() for name in (part, *allowed)}
    assert not sorted(named - known.keys()), "a layers rule names what is not in the tree"


def test_the_imports_read_include_lazy_type_only_and_relative_ones():
    found = {(i.source, i.target) for i in tree_imports()}
    # engine/executors/__init__.py imports slots inside `distribute`, console/commands.py the store's type under
    # TYPE_CHECKING, and redagent/__main__.py the console's entry point.
    assert ("engine.executors", "engine.executors.slots") in found
    assert ("console.commands", "store.db") in found
    assert ("redagent.__main__", "console.cli") in found


# -- the checks themselves, on a tree made to break them ------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    (root / "setup.py").write_text('TOP = ("cases", "engine")\n')
    for name in ("cases/__init__.py", "engine/__init__.py", "redagent/__init__.py", *files):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(files.get(name, '"""A package."""\n'))
    return root


RULES = {"cases": (), "engine": ("cases",), "engine.types": ("cases",), "redagent": ("cases",)}


def test_a_back_edge_is_named_with_its_file_its_line_and_the_rule_it_breaks(tmp_path):
    root = _tree(
        tmp_path,
        {
            "cases/build.py": "import os\n\n\ndef build():\n    from redagent.engine.models import Model\n"
            "    return Model\n",
            "cases/plan.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ..engine import runner\n",
            "engine/models.py": "class Model: ...\n",
            "engine/runner.py": "from redagent.cases import build\n",
            "engine/types.py": "from redagent.cases.build import build\nfrom . import models\n",
        },
    )
    assert broken_rules(imports(root, top_packages(root)), RULES) == [
        "cases/build.py:5: cases.build imports engine.models, which the rule `cases:` does not allow "
        "(docs/architecture.md, Layers)",
        "cases/plan.py:4: cases.plan imports engine.runner, which the rule `cases:` does not allow "
        "(docs/architecture.md, Layers)",
        "engine/types.py:2: engine.types imports engine.models, which the rule `engine.types: cases` does not "
        "allow (docs/architecture.md, Layers)",
    ]
    assert broken_rules(imports(root, top_packages(root)), {"engine": ("cases",)})[0] == (
        "cases/build.py:5: no rule of docs/architecture.md's layers covers cases.build"
    )


def test_a_cycle_is_named_with_every_import_round_it(tmp_path):
    root = _tree(
        tmp_path,
        {
            "engine/harness.py": "from redagent.engine.rollout import Context\n\n\ndef get():\n"
            "    from redagent.engine import native\n    return native\n",
            "engine/native.py": "from .harness import get\n",
            "engine/rollout.py": "class Context: ...\n",
        },
    )
    assert cycles(imports(root, top_packages(root))) == [
        "import cycle among 2 modules (engine.harness, engine.native): engine.harness (engine/harness.py:5) -> "
        "engine.native (engine/native.py:1) -> engine.harness"
    ]
    (root / "engine/rollout.py").write_text("import redagent.engine.native\n")
    (root / "engine/native.py").write_text('"""No import."""\n')
    assert cycles(imports(root, top_packages(root))) == []


def test_the_rules_are_read_from_their_fenced_block():
    text = "# Doc\n\n```\nnot: this\n```\n\n```layers\n# part: allowed\ncases: sandbox llm  # why\nsandbox:\n```\n"
    assert read_rules(text) == {"cases": ("sandbox", "llm"), "sandbox": ()}

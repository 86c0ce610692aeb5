"""How errors are shaped, counted from the source (issue 24, item 4): exception classes and their roots, the user
errors among them, the CLI's catch sites and the console's worker-failure handlers.

    .venv/bin/python benchmarks/errors.py [ROOT]    # ROOT: a checkout (default: this one)

A class is an exception class when its bases lead, by name, to a builtin exception; a root is one whose bases
are all outside the project. User errors are the classes that lead to `UserError` (redagent/errors.py).
"""

from __future__ import annotations

import ast
import builtins
import sys
from pathlib import Path

PACKAGES = ("redagent", "cases", "sandbox", "engine", "judges", "store", "console")
BUILTIN_EXCEPTIONS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
}


def _name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def classes(root: Path) -> dict[str, list[str]]:
    """Every class of the project (outside tests): 'path:Name' → the names of its bases."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    found[f"{path.relative_to(root)}:{node.name}"] = [_name(base) for base in node.bases]
    return found


def exception_classes(found: dict[str, list[str]]) -> dict[str, list[str]]:
    known = set(BUILTIN_EXCEPTIONS) | {"HTTPException"}  # aiohttp's, the one third-party base in use
    exceptions: dict[str, list[str]] = {}
    grew = True
    while grew:
        grew = False
        for key, bases in found.items():
            if key not in exceptions and any(base in known for base in bases):
                exceptions[key] = bases
                known.add(key.rsplit(":", 1)[1])
                grew = True
    return exceptions


def catch_sites(root: Path) -> tuple[int, int]:
    """(except clauses, `catch=` lists passed to opened_store) in the command-line modules."""
    handlers = lists = 0
    for path in sorted((root / "console").glob("*.py")):
        if not (path.name.endswith("_cli.py") or path.name in ("cli.py", "cli_common.py")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            handlers += isinstance(node, ast.ExceptHandler)
            lists += isinstance(node, ast.keyword) and node.arg == "catch"
    return handlers, lists


def worker_handlers(root: Path) -> int:
    """Methods in console/ that handle a worker's state change (by name or by @on(Worker.StateChanged))."""
    count = 0
    for path in sorted((root / "console").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            decorated = any("StateChanged" in ast.unparse(decorator) for decorator in node.decorator_list)
            count += decorated or node.name == "on_worker_state_changed"
    return count


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    exceptions = exception_classes(classes(root))
    names = {key.rsplit(":", 1)[1] for key in exceptions}
    roots = [key for key, bases in exceptions.items() if not any(base in names for base in bases)]
    user = {"UserError"}
    grew = True
    while grew:
        grew = False
        for key, bases in exceptions.items():
            name = key.rsplit(":", 1)[1]
            if name not in user and any(base in user for base in bases):
                user.add(name)
                grew = True
    handlers, lists = catch_sites(root)
    print(f"exception classes: {len(exceptions)}, roots (no project base): {len(roots)}")
    print(f"user errors (lead to UserError): {len(user & names) - ('UserError' in names)}")
    print(f"CLI: except clauses {handlers}, catch= lists {lists}")
    print(f"console worker-failure handlers: {worker_handlers(root)}")


if __name__ == "__main__":
    main()

"""How typed the package boundaries are: the figures issue 24 asks for, counted from the source (AST).

- store methods returning a dict: public methods of the classes in store/ (not its Protocols, which repeat them)
  whose return annotation names `dict`
  (`dict[...]`, `list[dict]`, `Iterator[dict]`, ...) — a consumer reads those by string keys nobody checks;
- string-key reads in judges/ and console/: subscripts with a string constant (`row["E"]`) and `.get("...")`
  calls — each one a field name mypy cannot check.

    .venv/bin/python benchmarks/contracts.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _names_dict(node: ast.expr | None) -> bool:
    if node is None:
        return False
    return any(isinstance(n, ast.Name) and n.id in ("dict", "Dict") for n in ast.walk(node)) or any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "dict" in n.value for n in ast.walk(node)
    )


def _protocol(cls: ast.ClassDef) -> bool:
    """An interface (store/interfaces.py) repeats the signatures of the Store methods that implement it."""
    return any(
        isinstance(b, ast.Name) and b.id == "Protocol" or isinstance(b, ast.Attribute) and b.attr == "Protocol"
        for b in cls.bases
    )


def store_dict_returns() -> list[str]:
    found = []
    for path in sorted((ROOT / "store").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and not _protocol(n)):
            for fn in cls.body:
                if (
                    isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not fn.name.startswith("_")
                    and _names_dict(fn.returns)
                ):
                    found.append(f"{path.relative_to(ROOT)}:{fn.lineno} {cls.name}.{fn.name}")
    return found


def _string_key(node: ast.AST) -> bool:
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(node.ctx, ast.Load) and isinstance(key, ast.Constant) and isinstance(key.value, str)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    return False


def string_key_reads(top: str) -> int:
    return sum(
        _string_key(node)
        for path in sorted((ROOT / top).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
    )


def main() -> int:
    returns = store_dict_returns()
    if "-v" in sys.argv:
        print("\n".join(returns))
    print(f"store methods returning a dict: {len(returns)}")
    for top in ("judges", "console"):
        print(f"string-key reads in {top}/: {string_key_reads(top)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

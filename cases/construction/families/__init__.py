"""Scenario families, one module per domain; importing this package registers them all.

Modules whose name starts with an underscore are shared kits the families import themselves.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

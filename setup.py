"""Maps the project's top-level folders onto subpackages of `redagent` (redagent.sandbox → sandbox/).

The subpackage list is derived, so a new folder is picked up automatically. Folders that hold only data (the
case libraries, the sandbox shims, the judges' contracts) are listed too, as namespace packages: Python can
import them, so setuptools wants every such folder whose files it ships declared as a package, and warns for
each one left out. Which of their files ship is said in [tool.setuptools.package-data] of pyproject.toml.
This mapping works for wheels and for setuptools' editable installs alike.
"""

from setuptools import find_namespace_packages, setup

TOP = ("llm", "cases", "sandbox", "engine", "judges", "store", "console")

packages = ["redagent"]
package_dir = {"redagent": "redagent"}
for top in TOP:
    for name in [top, *(f"{top}.{sub}" for sub in find_namespace_packages(top, exclude=["*__pycache__*"]))]:
        packages.append(f"redagent.{name}")
        package_dir[f"redagent.{name}"] = name.replace(".", "/")

setup(packages=packages, package_dir=package_dir)

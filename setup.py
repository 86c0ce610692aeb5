"""Maps the project's top-level folders onto subpackages of `redagent` (redagent.sandbox → sandbox/).

The subpackage list is derived, so a new folder with an __init__.py is picked up automatically.
This mapping works for wheels and for setuptools' editable installs alike.
"""

from setuptools import find_packages, setup

TOP = ("cases", "sandbox", "engine", "judges", "store", "console")

packages = ["redagent"]
package_dir = {"redagent": "redagent"}
for top in TOP:
    for name in [top, *(f"{top}.{sub}" for sub in find_packages(top))]:
        packages.append(f"redagent.{name}")
        package_dir[f"redagent.{name}"] = name.replace(".", "/")

setup(packages=packages, package_dir=package_dir)

"""Lists parley's subpackages for setuptools; everything else is in pyproject.toml.

The folders parties/, protocols/ and scenarios/ sit at the repository root and install
as subpackages of the one import package ``parley`` (``package-dir`` in pyproject.toml).
"""

from setuptools import find_packages, setup

FOLDERS = ("parties", "protocols", "scenarios")

setup(packages=["parley"] + [f"parley.{folder}{'.' + sub if sub else ''}"
                             for folder in FOLDERS for sub in ["", *find_packages(folder)]])

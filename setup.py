"""Extension modules for a compiled wheel; everything else is in pyproject.toml.

With ``STREAMCITE_COMPILE=1`` the modules ``[tool.streamcite.compiled]`` lists are
compiled by mypyc (see ``build_support/streamcite_build.py``); otherwise the wheel is
pure Python.
"""

import os
import tomllib

from setuptools import setup

ext_modules = []
# While the backend lists what the build needs, mypyc is not installed yet.
listing = os.environ.get("STREAMCITE_LISTING_REQUIRES") == "1"
if os.environ.get("STREAMCITE_COMPILE") == "1" and not listing:
    from mypyc.build import mypycify

    with open("pyproject.toml", "rb") as f:
        modules = tomllib.load(f)["tool"]["streamcite"]["compiled"]["modules"]
    ext_modules = mypycify(modules, opt_level="3", debug_level="0", group_name="streamcite_core")

setup(ext_modules=ext_modules)

"""Extension modules for a compiled wheel; everything else is in pyproject.toml.

With ``STREAMCITE_COMPILE=1`` the modules ``[tool.streamcite.compiled]`` lists are
compiled by mypyc (``build_support/``); otherwise the wheel is pure Python.
"""

import os
from pathlib import Path

from setuptools import setup

ext_modules = []
# While the backend lists what the build needs, mypyc is not installed yet.
listing = os.environ.get("STREAMCITE_LISTING_REQUIRES") == "1"
if os.environ.get("STREAMCITE_COMPILE") == "1" and not listing:
    from streamcite_compiled import compiled_modules, mypyc_extensions  # (on the backend's path)

    ext_modules = mypyc_extensions(compiled_modules(Path()))

setup(ext_modules=ext_modules)

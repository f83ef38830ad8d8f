"""The package's version, in the lowest layer: the store's fingerprints hash it, and setuptools reads it
statically from here (pyproject.toml), so nothing that needs it imports the package root."""

from __future__ import annotations

__version__ = "0.1.0"

"""The package's version, in a module of its own: the run store records it (and hashes it into problem
fingerprints) without importing the package root above it, and setuptools reads it statically."""

from __future__ import annotations

__version__ = "0.1.0"

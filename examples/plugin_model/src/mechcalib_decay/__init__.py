"""An example third-party model package for mechcalib (see the README)."""

from .model import DampedOscillator

__all__ = ["DampedOscillator"]

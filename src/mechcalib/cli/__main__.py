"""``python -m mechcalib.cli``: the same as the ``mechcalib`` console script."""

from __future__ import annotations

from . import app

app()

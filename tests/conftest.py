from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test with the reason when the folder is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"reference data {p} is absent (only the project's workplace has ../shared)")
    return p

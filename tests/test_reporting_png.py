"""mechcalib.reporting.save_png: palette PNGs that keep a plot's colours and take less room."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

from mechcalib.reporting import _pyplot, save_png  # noqa: E402


def _figure():
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.linspace(0.0, 10.0, 2000)
    for k in range(6):
        ax.semilogy(x, np.exp(-(k + 1) * x / 3) + 1e-6, lw=1.0, label=f"C{k}")
    ax.legend()
    return plt, fig


def test_save_png_writes_a_smaller_palette_png_with_the_line_colours(tmp_path):
    plt, fig = _figure()
    fig.savefig(tmp_path / "rgba.png", dpi=100)
    out = save_png(fig, tmp_path / "pal.png", dpi=100)
    plt.close(fig)
    assert out == tmp_path / "pal.png"
    with Image.open(tmp_path / "rgba.png") as rgba, Image.open(out) as pal:
        assert pal.mode == "P" and pal.size == rgba.size
        assert out.stat().st_size < 0.6 * (tmp_path / "rgba.png").stat().st_size
        # every pixel within a few levels of the original: thin coloured lines keep their colour
        a = np.asarray(rgba.convert("RGB"), dtype=int)
        b = np.asarray(pal.convert("RGB"), dtype=int)
        assert np.abs(a - b).max() <= 24
        assert len(pal.getcolors(256)) <= 256

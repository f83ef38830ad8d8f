"""A live web page of run folders (``mechcalib dashboard DIR [DIR...]``) and its static form
(``mechcalib report DIR --html FILE``), drawn with plotly.js (shipped inside the package: no extra, no network).

* :mod:`.data`: one short read-only read of a run folder per refresh: status, counts, the convergence history
  and parameter traces (thinned inside SQLite), the best point, the intervals of ``uncertainty.json``.
* :mod:`.figures`: the fit of every experiment with its residuals, the force-displacement loop, the corner
  samples and the predictive band, from the problem rebuilt out of the stored configuration (cached per best).
* :mod:`.page`: the HTML page and its script (``static/dashboard.js``); plotly.js's cartesian bundle
  (``static/plotly-cartesian.min.js.gz``).
* :mod:`.server`: the standard library's HTTP server, and the static report (:func:`write_html`).
"""

from __future__ import annotations

from .server import LOOPBACK, Dashboard, make_server, write_html

__all__ = ["LOOPBACK", "Dashboard", "make_server", "write_html"]

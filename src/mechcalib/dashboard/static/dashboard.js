// mechcalib dashboard: draws the runs the server (or the static report) hands over, with plotly.
// Every figure div gets data-rendered=<generation> once plotly has drawn it, and <body> once all have:
// the browser tests and the render benchmark wait for that marker.
"use strict";
(function () {
  const cfg = window.MC_CONFIG || {};
  let generation = 0;
  const palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
  const FONT = { family: "system-ui, sans-serif", size: 12 };

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined) return "-";
    if (typeof v !== "number") return String(v);
    return Number(v.toPrecision(digits || 6)).toString();
  }
  function scatterKind(n) { return n > 2500 ? "scattergl" : "scatter"; }

  // one block per key below the parent, kept between refreshes so that plotly redraws in place
  function slot(parent, id, tag, cls) {
    let e = document.getElementById(id);
    if (!e) {
      e = el(tag || "div", { id: id, class: cls || "" });
      parent.appendChild(e);
    }
    e.dataset.seen = String(generation);
    return e;
  }
  function figure(parent, id, traces, layout, pending) {
    const div = slot(parent, id, "div", "mc-fig");
    const lay = Object.assign({ font: FONT, margin: { l: 70, r: 20, t: 40, b: 50 }, uirevision: id,
      legend: { orientation: "h", x: 1, xanchor: "right", y: 1.0, yanchor: "bottom" }, height: 360 }, layout);
    if (lay.title && lay.title.x === undefined) Object.assign(lay.title, { x: 0.01, xanchor: "left" });
    const g = generation;
    pending.push(Plotly.react(div, traces, lay, { responsive: true, displaylogo: false })
      .then(() => { div.dataset.rendered = String(g); }));
  }
  function note(parent, id, text, cls) {
    const p = slot(parent, id, "p", cls || "note");
    p.textContent = text;
    return p;
  }
  function table(parent, id, header, rows) {
    const t = slot(parent, id, "table", "mc-table");
    t.replaceChildren();
    const tr = el("tr");
    header.forEach((h) => tr.appendChild(el("th", {}, h)));
    t.appendChild(tr);
    rows.forEach((r) => {
      const row = el("tr");
      r.forEach((c) => {
        const td = el("td", c.field ? { "data-field": c.field, "data-value": String(c.raw) } : {}, c.text);
        row.appendChild(td);
      });
      t.appendChild(row);
    });
    return t;
  }
  function cell(text, field, raw) { return { text: text, field: field, raw: raw === undefined ? text : raw }; }

  // -- the panels of one run ---------------------------------------------------------------------------
  function summary(sec, i, r) {
    const budget = r.budget ? " / " + r.budget : "";
    table(sec, "sum-" + i, ["status", "evaluations", "failed", "best loss", "best at", "updated"], [[
      cell(r.status + (r.stop_reason ? " (" + r.stop_reason + ")" : ""), "status", r.status),
      cell(r.n_evaluations + budget, "n_evaluations", r.n_evaluations),
      cell(r.n_failed, "n_failed", r.n_failed),
      cell(fmt(r.best_loss), "best_loss", r.best_loss),
      cell(r.best_index === null ? "-" : "evaluation " + r.best_index, "best_index", r.best_index),
      cell(r.updated, "updated", r.updated),
    ]]);
    (r.warnings || []).forEach((w, k) => note(sec, "warn-" + i + "-" + k, "warning: " + w, "warning"));
    if (r.error) note(sec, "err-" + i, "error: " + r.error, "warning");
  }
  function bestTable(sec, i, r) {
    const iv = r.intervals ? r.intervals.parameters : null;
    const head = ["parameter", "unit", "best evaluation"].concat(iv ? ["best of the analysis", "95 % lower",
      "95 % upper"] : [], ["search bounds"]);
    const rows = r.parameters.map((p) => {
      const q = iv && iv[p.name] ? iv[p.name] : {};
      const best = [cell(p.name), cell(p.unit || "-"), cell(fmt(r.best ? r.best[p.name] : null), "best:" + p.name,
        r.best ? r.best[p.name] : null)];
      const ivs = iv ? [cell(fmt(q.best), "analysis:" + p.name, q.best), cell(fmt(q.lower)), cell(fmt(q.upper))] : [];
      return best.concat(ivs, [cell(fmt(p.lower, 4) + " ... " + fmt(p.upper, 4) + (p.scale === "log" ? " (log)" : ""))]);
    });
    table(sec, "best-" + i, head, rows);
    if (r.intervals) {
      const stale = r.intervals.stale ? "; stale: computed at evaluation " + r.intervals.computed_at +
        ", the best is now evaluation " + r.best_index + " (run `mechcalib uncertainty` again)" : "";
      note(sec, "ivnote-" + i, "best of the analysis and its 95 % intervals: `mechcalib uncertainty` (" +
        r.intervals.method + "; its least-squares polish may move the best)" + stale);
    }
  }
  function history(sec, i, r, pending) {
    const h = r.history;
    const pos = h.loss.every((v) => v > 0);
    const traces = [
      { type: scatterKind(h.idx.length), mode: "markers", x: h.idx, y: h.loss, name: "evaluation" +
        (h.every > 1 ? " (one in " + h.every + ", and every improvement)" : ""), marker: { size: 4, color: "#1f77b4", opacity: 0.5 } },
      { type: "scatter", mode: "lines", line: { shape: "hv", color: "#d62728" }, x: h.best_idx, y: h.best_loss, name: "best so far" },
    ];
    if (h.failed_idx.length) {
      traces.push({ type: scatterKind(h.failed_idx.length), mode: "markers", x: h.failed_idx,
        y: h.failed_idx.map(() => 0), yaxis: "y2", name: "failed", marker: { symbol: "x", color: "#7f7f7f", size: 6 } });
    }
    figure(sec, "fig-history-" + i, traces, {
      title: { text: "convergence" },
      xaxis: { title: { text: "evaluation [-]" } },
      yaxis: { title: { text: "loss [-]" }, type: pos ? "log" : "linear" },
      yaxis2: { overlaying: "y", visible: false, range: [0, 1] },
    }, pending);
  }
  function traces(sec, i, r, pending) {
    const d = r.parameters.length;
    if (!d) return;
    const t = r.traces;
    const data = [];
    const layout = { title: { text: "parameter traces" }, height: Math.max(220, 150 * d), showlegend: false,
      grid: { rows: d, columns: 1, pattern: "independent", roworder: "top to bottom" } };
    r.parameters.forEach((p, k) => {
      const ax = k === 0 ? "" : String(k + 1);
      data.push({ type: scatterKind(t.idx.length), mode: "markers", x: t.idx, y: t.X[k], xaxis: "x" + ax,
        yaxis: "y" + ax, marker: { size: 3, color: palette[k % palette.length], opacity: 0.5 }, name: p.name });
      if (r.best && r.best_index !== null) {
        data.push({ type: "scatter", mode: "markers", x: [r.best_index], y: [r.best[p.name]], xaxis: "x" + ax,
          yaxis: "y" + ax, marker: { size: 10, symbol: "star", color: "#000" }, name: "best" });
      }
      layout["yaxis" + ax] = { title: { text: p.name + " [" + (p.unit || "-") + "]" }, type: p.scale === "log" ? "log" : "linear" };
      layout["xaxis" + ax] = { title: { text: k === d - 1 ? "evaluation [-]" : "" }, matches: k ? "x" : undefined };
    });
    figure(sec, "fig-traces-" + i, data, layout, pending);
  }
  function fits(sec, i, r, pending) {
    if (r.figures_note) note(sec, "fignote-" + i, r.figures_note);
    if (!r.fit) { note(sec, "fitnote-" + i, r.fit_note || "no fit"); return; }
    r.fit.forEach((e, j) => {
      const n = e.channels.length;
      const data = [];
      const layout = { title: { text: "fit: " + e.name + (e.failure ? " (simulation failed: " + e.failure + ")" : "") },
        height: 460, grid: { rows: 2, columns: n, pattern: "independent", roworder: "top to bottom", ygap: 0.25 } };
      e.channels.forEach((c, k) => {
        const top = k + 1, bot = n + k + 1;
        const ax = (m) => (m === 1 ? "" : String(m));
        data.push({ type: scatterKind(c.measured[0].length), mode: "markers", x: c.measured[0], y: c.measured[1],
          name: "measured", legendgroup: "m", showlegend: k === 0, xaxis: "x" + ax(top), yaxis: "y" + ax(top),
          marker: { size: 3, color: "#7f7f7f" } });
        if (c.simulated) {
          data.push({ type: scatterKind(c.simulated[0].length), mode: "lines", x: c.simulated[0], y: c.simulated[1],
            name: "calibrated model", legendgroup: "s", showlegend: k === 0, xaxis: "x" + ax(top), yaxis: "y" + ax(top),
            line: { color: "#d62728", width: 1.5 } });
        }
        if (c.residual) {
          data.push({ type: scatterKind(c.residual[0].length), mode: "markers", x: c.residual[0], y: c.residual[1],
            name: "residual", legendgroup: "r", showlegend: k === 0, xaxis: "x" + ax(bot), yaxis: "y" + ax(bot),
            marker: { size: 3, color: "#1f77b4" } });
        }
        layout["xaxis" + ax(top)] = { title: { text: c.x_label } };
        layout["yaxis" + ax(top)] = { title: { text: c.y_label } };
        layout["xaxis" + ax(bot)] = { title: { text: c.x_label }, matches: "x" + ax(top) };
        layout["yaxis" + ax(bot)] = { title: { text: "residual " + c.y_label.replace(/^.*\[/, "[") }, zeroline: true };
      });
      figure(sec, "fig-fit-" + i + "-" + j, data, layout, pending);
      const rms = e.channels.map((c) => c.name + ": rms residual " + fmt(c.rms, 4)).join("; ");
      note(sec, "fitrms-" + i + "-" + j, rms);
    });
    (r.loops || []).forEach((l, j) => {
      const data = [];
      if (l.measured) data.push({ type: scatterKind(l.measured[0].length), mode: "markers", x: l.measured[0],
        y: l.measured[1], name: "measured", marker: { size: 3, color: "#7f7f7f" } });
      data.push({ type: scatterKind(l.simulated[0].length), mode: "lines", x: l.simulated[0], y: l.simulated[1],
        name: "calibrated model", line: { color: "#d62728", width: 1.2 } });
      figure(sec, "fig-loop-" + i + "-" + j, data, { title: { text: "loop: " + l.experiment + ", " + l.channel },
        xaxis: { title: { text: l.x_label } }, yaxis: { title: { text: l.y_label } } }, pending);
    });
  }
  function corner(sec, i, r, pending) {
    const c = r.corner;
    const d = c.names.length;
    const data = [];
    const layout = { title: { text: "corner: " + c.how }, height: Math.max(360, 190 * d), width: undefined,
      showlegend: false, grid: { rows: d, columns: d, pattern: "independent", roworder: "top to bottom" } };
    for (let a = 0; a < d; a++) {
      for (let b = 0; b < d; b++) {
        const m = a * d + b + 1;
        const ax = m === 1 ? "" : String(m);
        if (b > a) { layout["xaxis" + ax] = { visible: false }; layout["yaxis" + ax] = { visible: false }; continue; }
        if (a === b) {
          data.push({ type: "histogram", x: c.samples[a], xaxis: "x" + ax, yaxis: "y" + ax, nbinsx: 30,
            marker: { color: "#1f77b4" } });
        } else {
          data.push({ type: scatterKind(c.samples[b].length), mode: "markers", x: c.samples[b], y: c.samples[a],
            xaxis: "x" + ax, yaxis: "y" + ax, marker: { size: 2, color: "#1f77b4", opacity: 0.4 } });
          data.push({ type: "scatter", mode: "markers", x: [c.best[b]], y: [c.best[a]], xaxis: "x" + ax,
            yaxis: "y" + ax, marker: { size: 9, symbol: "star", color: "#d62728" } });
        }
        const diag = b * d + b + 1;
        layout["xaxis" + ax] = { title: { text: a === d - 1 ? c.labels[b] : "" }, nticks: 4,
          matches: a === b ? undefined : "x" + (diag === 1 ? "" : String(diag)) };
        layout["yaxis" + ax] = { title: { text: b === 0 && a > 0 ? c.labels[a] : (a === b ? "count [-]" : "") }, nticks: 4 };
      }
    }
    figure(sec, "fig-corner-" + i, data, layout, pending);
  }
  function bands(sec, i, r, pending) {
    r.bands.forEach((b, j) => {
      const rel = (ys) => ys.map((v, k) => v - b.fit[k]);
      const band = (lo, hi, ax, legend) => [
        { type: "scatter", mode: "lines", x: b.x, y: hi, line: { width: 0 }, showlegend: false, hoverinfo: "skip",
          xaxis: "x" + ax, yaxis: "y" + ax },
        { type: "scatter", mode: "lines", x: b.x, y: lo, fill: "tonexty", fillcolor: "rgba(255,127,14,0.45)",
          line: { width: 0 }, name: "95 % band (" + b.draws + " parameter sets)", showlegend: legend,
          legendgroup: "band", xaxis: "x" + ax, yaxis: "y" + ax },
      ];
      const data = band(b.lo, b.hi, "", true).concat([
        { type: scatterKind(b.x.length), mode: "markers", x: b.x, y: b.measured, name: "measured", legendgroup: "m",
          marker: { size: 3, color: "#444" } },
        { type: scatterKind(b.x.length), mode: "lines", x: b.x, y: b.fit, name: "fit", legendgroup: "f",
          line: { color: "#1f77b4", width: 1 } },
      ], band(rel(b.lo), rel(b.hi), "2", false), [
        { type: scatterKind(b.x.length), mode: "markers", x: b.x, y: rel(b.measured), name: "measured", showlegend: false,
          legendgroup: "m", xaxis: "x2", yaxis: "y2", marker: { size: 3, color: "#444" } },
      ]);
      const unit = "[" + (b.y_label.match(/\[([^\]]*)\]$/) || [null, "-"])[1] + "]";
      figure(sec, "fig-band-" + i + "-" + j, data, { title: { text: "predictive band: " + b.experiment + ", " + b.channel },
        height: 480, grid: { rows: 2, columns: 1, pattern: "independent", roworder: "top to bottom", ygap: 0.25 },
        xaxis: { title: { text: b.x_label } }, yaxis: { title: { text: b.y_label } },
        xaxis2: { title: { text: b.x_label }, matches: "x" }, yaxis2: { title: { text: "about the fit " + unit } } }, pending);
    });
  }
  function run(root, i, r, pending) {
    const sec = slot(root, "run-" + i, "section", "run");
    const h = slot(sec, "title-" + i, "h2");
    h.textContent = r.ok ? "run " + r.run_name : "run folder";
    note(sec, "folder-" + i, r.folder, "folder");
    if (!r.ok) { note(sec, "msg-" + i, r.message, "message"); return; }
    summary(sec, i, r);
    bestTable(sec, i, r);
    history(sec, i, r, pending);
    traces(sec, i, r, pending);
    fits(sec, i, r, pending);
    if (r.corner) corner(sec, i, r, pending);
    if (r.bands && r.bands.length) bands(sec, i, r, pending);
    if (!r.corner) note(sec, "uncnote-" + i, r.uncertainty_note || "no uncertainty panels");
  }
  function label(r) {
    return r.run_name + " (" + r.optimizer + ", " + r.folder.split(/[\\/]/).filter(Boolean).pop() + ")";
  }
  function compare(root, runs, pending) {
    const ok = runs.filter((r) => r.ok);
    if (runs.length < 2 || !ok.length) return;
    const sec = slot(root, "compare", "section", "compare");
    slot(sec, "compare-title", "h2").textContent = "runs compared";
    const data = ok.map((r, k) => ({ type: "scatter", mode: "lines", line: { shape: "hv", color: palette[k % palette.length] },
      x: r.history.best_idx, y: r.history.best_loss, name: label(r) }));
    const pos = ok.every((r) => r.history.best_loss.every((v) => v > 0));
    figure(sec, "fig-compare", data, { title: { text: "best loss so far" }, xaxis: { title: { text: "evaluation [-]" } },
      yaxis: { title: { text: "best loss [-]" }, type: pos ? "log" : "linear" } }, pending);
    const names = [...new Set(ok.flatMap((r) => r.parameters.map((p) => p.name)))];
    table(sec, "compare-table", ["run", "status", "evaluations", "best loss"].concat(names), ok.map((r) => [
      cell(label(r)), cell(r.status), cell(r.n_evaluations), cell(fmt(r.best_loss))].concat(
      names.map((n) => cell(fmt(r.best ? r.best[n] : null))))));
  }

  function draw(payload) {
    performance.mark("mc-data-" + (generation + 1));
    generation += 1;
    document.body.dataset.generation = String(generation);
    const root = document.getElementById("runs");
    root.style.setProperty("--columns", String(Math.min(payload.runs.length, 2)));
    const pending = [];
    compare(document.getElementById("comparison"), payload.runs, pending);
    payload.runs.forEach((r, i) => run(root, i, r, pending));
    document.querySelectorAll("[data-seen]").forEach((e) => {
      if (e.dataset.seen !== String(generation)) {
        if (e.classList.contains("mc-fig")) Plotly.purge(e);
        e.remove();
      }
    });
    document.getElementById("generated").textContent = payload.generated;
    const g = generation;
    return Promise.all(pending).then(() => {
      document.body.dataset.figures = String(pending.length);
      document.body.dataset.rendered = String(g);
      performance.mark("mc-rendered-" + g);
    });
  }
  function banner(text) {
    const b = document.getElementById("banner");
    b.textContent = text || "";
    b.hidden = !text;
  }
  function refresh() {
    performance.mark("mc-fetch-" + (generation + 1));
    const request = window.MC_FIRST || fetch("api/runs", { cache: "no-store" });
    window.MC_FIRST = null;
    request
      .then((resp) => resp.json().then((body) => ({ ok: resp.ok, body: body })))
      .then(({ ok, body }) => {
        if (!ok) throw new Error(body.message || "the server could not read the runs");
        banner("");
        return draw(body);
      })
      .catch((exc) => banner("cannot refresh: " + exc.message + " (retrying)"))
      .finally(() => setTimeout(refresh, (cfg.refresh || 2) * 1000));
  }
  window.addEventListener("DOMContentLoaded", () => {
    if (window.MC_DATA) { draw(window.MC_DATA); } else { refresh(); }
  });
})();

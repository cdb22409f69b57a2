"use strict";
// The campaign page: loads the tree, then polls a small version endpoint and fetches only the
// nodes that changed, so a running campaign's new nodes appear without a reload.
(function () {
  const cid = document.body.dataset.cid;
  const base = "/api/c/" + encodeURIComponent(cid);
  const POLL_MS = 2000, PLOTS_MS = 10000;
  const tree = new RecursorTree(document.getElementById("tree"), {
    href: (n) => "/c/" + encodeURIComponent(cid) + "/n/" + encodeURIComponent(n.id),
  });
  let cursor = null, version = null, plotted = 0, plotsStale = true;

  async function getJSON(url) {
    const response = await fetch(url, {credentials: "same-origin", cache: "no-store"});
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    return response.json();
  }

  function showProgress(p, fresh) {
    const parts = ["campaign " + p.status, "evaluated " + p.evaluated + (p.budget ? " of " + p.budget : ""),
      "failed " + p.failed, "round " + p.round + ": " + p.round_done + " of " + p.round_size + " finished"];
    if (p.running) parts.push(p.running + " running");
    if (p.pending) parts.push(p.pending + " pending");
    if (fresh) parts.push(fresh + " new");
    document.getElementById("progress").textContent = parts.join(" \u00b7 ");
  }

  async function refresh() {
    const url = base + "/tree" + (cursor ? "?since=" + encodeURIComponent(cursor) : "");
    const payload = await getJSON(url);
    const fresh = tree.load(payload);
    cursor = payload.cursor || cursor;
    version = payload.version;
    showProgress(payload.progress, cursor && !payload.full ? fresh.length : 0);
    plotsStale = true;
  }

  // plotly.js (4 MB) is loaded only once the tree is on screen: executing it takes the
  // main thread for a while, and the tree is what the page is for
  let plotlyReady = null;
  function loadPlotly() {
    if (!plotlyReady) {
      plotlyReady = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = "/vendor/plotly.min.js";
        script.onload = () => resolve();
        script.onerror = () => reject(new Error("cannot load plotly.js"));
        document.body.append(script);
      });
    }
    return plotlyReady;
  }

  async function drawPlots() {
    if (!plotsStale || Date.now() - plotted < PLOTS_MS && plotted) return;
    await loadPlotly();
    plotsStale = false;
    plotted = Date.now();
    const figures = await getJSON(base + "/plots");
    for (const [id, fig] of Object.entries(figures)) {
      const div = document.getElementById(id);
      if (!div) continue;
      if (fig.empty) {  // a panel with nothing to show: one line saying why, in its place
        if (div.classList.contains("js-plotly-plot")) Plotly.purge(div);
        div.classList.add("empty");
        div.textContent = fig.empty;
        continue;
      }
      if (div.classList.contains("empty")) {
        div.classList.remove("empty");
        div.textContent = "";
      }
      Plotly.react(div, fig.data, fig.layout, {displaylogo: false, responsive: true});
    }
  }

  async function poll() {
    try {
      const now = await getJSON(base + "/version");
      if (now.version !== version) await refresh();
      await drawPlots();
    } catch (err) {
      document.getElementById("progress").textContent = "cannot reach the server: " + err.message;
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  document.getElementById("expand-path").addEventListener("click", () => tree.showPath());
  document.getElementById("collapse-all").addEventListener("click", () => tree.collapseAll());
  const find = document.getElementById("find");
  find.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    const found = tree.focus(find.value.trim());
    find.setCustomValidity(found ? "" : "no node has that id");
    find.reportValidity();
  });
  refresh().then(drawPlots).catch((err) => {
    document.getElementById("progress").textContent = "cannot load the tree: " + err.message;
  }).finally(() => setTimeout(poll, POLL_MS));
})();

"use strict";
// Several campaigns' best-so-far curves on one plot.
(function () {
  const chosen = (document.body.dataset.compare || "").split(",").filter((c) => c);
  const query = chosen.map((c) => "c=" + encodeURIComponent(c)).join("&");
  fetch("/api/compare" + (query ? "?" + query : ""), {credentials: "same-origin"})
    .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then((fig) => Plotly.newPlot("plot-compare", fig.data, fig.layout, {displaylogo: false, responsive: true}))
    .catch((err) => { document.getElementById("plot-compare").textContent = "cannot load: " + err.message; });
})();

"use strict";
// The static report: the same tree component and plots, fed from the JSON inside the page.
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const detail = document.getElementById("detail");

  function field(name, value) {
    const p = document.createElement("p");
    const b = document.createElement("strong");
    b.textContent = name + ": ";
    p.append(b, document.createTextNode(value === null || value === undefined ? "-" : String(value)));
    return p;
  }

  function select(n) {
    detail.hidden = false;
    const title = document.createElement("h3");
    title.textContent = n.id;
    detail.replaceChildren(title, field("status", n.rs || n.st), field("dev score", n.sc),
      field("held-out score", n.h), field("proposer", n.pr), field("parent", n.p),
      field("round", n.r), field("rationale", n.t));
  }

  const tree = new RecursorTree(document.getElementById("tree"), {onSelect: select});
  tree.load(data.tree);
  for (const [id, fig] of Object.entries(data.figures)) {
    const div = document.getElementById(id);
    if (!div) continue;
    if (fig.empty) {  // a panel with nothing to show: one line saying why, in its place
      div.classList.add("empty");
      div.textContent = fig.empty;
      continue;
    }
    Plotly.newPlot(div, fig.data, fig.layout, {displaylogo: false, responsive: true});
  }
})();

"use strict";
// The discovery tree as an indented, collapsible list. Rows are created only when their parent
// is expanded, CHUNK children at a time, so a 10,000-node tree opens as fast as a small one.
// Every string from the archive goes into the DOM through textContent, never as markup.
(function (global) {
  const CHUNK = 200;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function fmt(x) {
    return (x === null || x === undefined) ? "-" : Number(x).toPrecision(5);
  }

  class RecursorTree {
    // opts.href(node) -> link for a node id (or null); opts.onSelect(node) on a row click
    constructor(container, opts) {
      this.opts = opts || {};
      this.nodes = new Map();      // id -> brief
      this.children = new Map();   // parent id (or "") -> [child ids] in (round, slot) order
      this.rows = new Map();       // id -> {li, box, done, next, more} (see group())
      this.expanded = new Set();
      this.promoted = new Set();
      this.front = new Set();      // on the dev Pareto front (selection kind pareto)
      this.path = new Set();
      this.incumbent = null;
      this.direction = "minimize";
      this.lo = 0; this.hi = 0;
      const top = el("ul", "tree");
      top.setAttribute("role", "tree");
      container.replaceChildren(top);
      this.topGroup = {box: top, done: new Set(), next: 0, more: null};
    }

    // payload: {nodes, incumbent, path, promoted, front, objective, full}; returns the new ids
    load(payload) {
      this.direction = payload.objective ? payload.objective.direction : this.direction;
      const fresh = [];
      for (const n of payload.nodes) {
        if (!this.nodes.has(n.id)) {
          fresh.push(n.id);
          const key = n.p || "";
          if (!this.children.has(key)) this.children.set(key, []);
          this.children.get(key).push(n.id);
        }
        this.nodes.set(n.id, n);
      }
      this.promoted = new Set(payload.promoted || []);
      this.front = new Set(payload.front || []);
      this.path = new Set(payload.path || []);
      this.incumbent = payload.incumbent;
      this.rescale();
      const first = this.rows.size === 0;
      if (first) {
        this.showPath();
        this.renderMore(null);
      } else {
        for (const id of fresh) this.place(id);
      }
      for (const [id, r] of this.rows) this.paint(id, r.li);
      for (const id of fresh) {
        const r = this.rows.get(id);
        if (r && !first) r.li.classList.add("fresh");
      }
      return fresh;
    }

    rescale() {
      let lo = Infinity, hi = -Infinity;
      for (const n of this.nodes.values()) {
        if (n.sc === null || n.sc === undefined) continue;
        lo = Math.min(lo, n.sc); hi = Math.max(hi, n.sc);
      }
      this.lo = lo; this.hi = hi;
    }

    colour(n) {
      if (n.sc === null || n.sc === undefined || !isFinite(this.lo)) return "";
      let t = this.hi > this.lo ? (n.sc - this.lo) / (this.hi - this.lo) : 1;
      if (this.direction === "minimize") t = 1 - t;
      return "hsl(" + Math.round(t * 120) + ", 70%, 45%)";
    }

    // a newly arrived node: shown at once if all its siblings are on screen
    place(id) {
      const n = this.nodes.get(id);
      const parentId = n.p || null;
      const group = this.group(parentId);
      const siblings = this.children.get(n.p || "");
      if (group && group.box && group.done.size === siblings.length - 1) this.renderMore(parentId);
      else if (group) this.updateMore(parentId);
      if (n.p && this.rows.has(n.p)) this.paint(n.p, this.rows.get(n.p).li);
    }

    row(id) {
      const n = this.nodes.get(id);
      const li = el("li", "node");
      li.dataset.id = id;
      li.setAttribute("role", "treeitem");
      const line = el("div", "row");
      const tog = el("button", "tog");
      tog.type = "button";
      tog.addEventListener("click", (ev) => { ev.stopPropagation(); this.toggle(id); });
      const href = this.opts.href ? this.opts.href(n) : null;
      const name = el(href ? "a" : "span", "nid", id);
      if (href) name.href = href;
      line.append(tog, el("span", "swatch"), name, el("span", "badge"), el("span", "score"),
                  el("span", "mark"), el("span", "prop"), el("span", "title"), el("span", "count"));
      line.addEventListener("click", () => { if (this.opts.onSelect) this.opts.onSelect(n); });
      li.append(line);
      this.rows.set(id, {li: li, box: null, done: new Set(), next: 0, more: null});
      this.paint(id, li);
      return li;
    }

    paint(id, li) {
      const n = this.nodes.get(id);
      const parts = li.firstChild.children;
      const kids = (this.children.get(id) || []).length;
      const open = this.expanded.has(id);
      parts[0].textContent = kids ? (open ? "\u25be" : "\u25b8") : "\u00b7";
      parts[0].disabled = !kids;
      parts[1].style.backgroundColor = this.colour(n);
      parts[3].textContent = n.rs || n.st;
      parts[3].className = "badge st-" + n.st;
      parts[4].textContent = fmt(n.sc);
      const star = this.promoted.has(id) ? (id === this.incumbent ? "\u2605 incumbent" : "\u2605") : "";
      parts[5].textContent = this.front.has(id) ? (star ? star + " \u25c6" : "\u25c6 front") : star;
      parts[6].textContent = n.pr;
      parts[7].textContent = n.t;
      parts[8].textContent = kids ? "(" + kids + ")" : "";
      li.classList.toggle("on-path", this.path.has(id));
      li.classList.toggle("promoted", this.promoted.has(id));
      li.classList.toggle("front", this.front.has(id));
      li.dataset.status = n.st;
    }

    // the rendering state of a parent's children: {box, done (ids shown), next, more}
    group(parentId) {
      return parentId === null ? this.topGroup : (this.rows.get(parentId) || null);
    }

    container(parentId) {
      const g = this.group(parentId);
      if (!g.box) {
        g.box = el("ul", "kids");
        g.box.setAttribute("role", "group");
        this.rows.get(parentId).li.append(g.box);
      }
      return g.box;
    }

    // show the next CHUNK not yet shown children of parentId (null: the top level); with
    // only, show just that child (the incumbent's lineage is opened that way)
    renderMore(parentId, only) {
      const list = this.children.get(parentId || "") || [];
      const g = this.group(parentId);
      const box = this.container(parentId);
      const frag = document.createDocumentFragment();
      if (only !== undefined) {
        if (!g.done.has(only)) { g.done.add(only); frag.append(this.row(only)); }
      } else {
        let added = 0;
        while (g.next < list.length && added < CHUNK) {
          const id = list[g.next++];
          if (g.done.has(id)) continue;
          g.done.add(id);
          frag.append(this.row(id));
          added++;
        }
      }
      if (g.more) g.more.remove();
      box.append(frag);
      this.updateMore(parentId);
    }

    updateMore(parentId) {
      const list = this.children.get(parentId || "") || [];
      const g = this.group(parentId);
      if (!g || !g.box) return;
      const hidden = list.length - g.done.size;
      if (hidden <= 0) { if (g.more) g.more.remove(); return; }
      if (!g.more) {
        g.more = el("button", "more");
        g.more.type = "button";
        g.more.addEventListener("click", () => this.renderMore(parentId));
      }
      g.more.textContent = "show " + Math.min(CHUNK, hidden) + " more (" + hidden + " hidden)";
      g.box.append(g.more);
    }

    // open or close id's children; opening shows the first CHUNK, or only child `only`
    toggle(id, open, only) {
      const r = this.rows.get(id);
      if (!r) return;
      const want = open === undefined ? !this.expanded.has(id) : open;
      if (want) {
        this.expanded.add(id);
        if (!r.box || only !== undefined) this.renderMore(id, only);
        r.box.hidden = false;
      } else {
        this.expanded.delete(id);
        if (r.box) r.box.hidden = true;
      }
      this.paint(id, r.li);
    }

    // open the incumbent's lineage, one row per level (siblings stay behind "show more"),
    // so the current best is on screen however deep and wide the tree is
    showPath() {
      const chain = [];
      let id = this.incumbent;
      while (id && this.nodes.has(id) && chain.length < 100000) { chain.push(id); id = this.nodes.get(id).p; }
      chain.reverse();
      if (chain.length && !this.rows.has(chain[0])) this.renderMore(null, chain[0]);
      for (let i = 0; i + 1 < chain.length; i++) this.toggle(chain[i], true, chain[i + 1]);
      if (chain.length) this.toggle(chain[chain.length - 1], true);  // its children: the frontier
      else for (const top of this.children.get("") || []) this.toggle(top, true);
    }

    // open the lineage of the node whose id is or ends with `query`, and scroll to it;
    // returns the id found (or null)
    focus(query) {
      let id = this.nodes.has(query) ? query : null;
      if (!id) for (const key of this.nodes.keys()) if (key.endsWith(query)) { id = key; break; }
      if (!id) return null;
      const chain = [];
      for (let at = id; at && this.nodes.has(at); at = this.nodes.get(at).p) chain.push(at);
      chain.reverse();
      if (!this.rows.has(chain[0])) this.renderMore(null, chain[0]);
      for (let i = 0; i + 1 < chain.length; i++) this.toggle(chain[i], true, chain[i + 1]);
      const li = this.rows.get(id).li;
      li.classList.remove("fresh");
      void li.offsetWidth;  // restart the highlight animation
      li.classList.add("fresh");
      li.scrollIntoView({block: "center"});
      return id;
    }

    collapseAll() {
      for (const id of Array.from(this.expanded)) this.toggle(id, false);
    }
  }

  global.RecursorTree = RecursorTree;
  global.recursorFmt = fmt;
})(window);

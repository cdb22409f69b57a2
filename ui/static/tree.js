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
      this.rows = new Map();       // id -> {li, kids, shown, more}
      this.expanded = new Set();
      this.promoted = new Set();
      this.path = new Set();
      this.incumbent = null;
      this.direction = "minimize";
      this.lo = 0; this.hi = 0;
      this.top = el("ul", "tree");
      this.top.setAttribute("role", "tree");
      container.replaceChildren(this.top);
      this.topShown = 0;
    }

    // payload: {nodes, incumbent, path, promoted, objective, full}; returns the new ids
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
      this.path = new Set(payload.path || []);
      this.incumbent = payload.incumbent;
      this.rescale();
      const first = this.rows.size === 0;
      if (first) {
        this.renderMore(null);
        this.showPath();
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

    // a newly arrived node: shown at once if its parent's rows are all on screen
    place(id) {
      const n = this.nodes.get(id);
      const siblings = this.children.get(n.p || "");
      if (!n.p) {
        if (this.topShown === siblings.length - 1) this.renderMore(null); else this.updateMore(null);
        return;
      }
      const parent = this.rows.get(n.p);
      if (!parent) return;
      if (parent.kids && parent.shown === siblings.length - 1) this.renderMore(n.p);
      else this.updateMore(n.p);
      this.paint(n.p, parent.li);
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
      this.rows.set(id, {li: li, kids: null, shown: 0, more: null});
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
      parts[5].textContent = this.promoted.has(id) ? (id === this.incumbent ? "\u2605 incumbent" : "\u2605") : "";
      parts[6].textContent = n.pr;
      parts[7].textContent = n.t;
      parts[8].textContent = kids ? "(" + kids + ")" : "";
      li.classList.toggle("on-path", this.path.has(id));
      li.classList.toggle("promoted", this.promoted.has(id));
      li.dataset.status = n.st;
    }

    container(parentId) {
      if (parentId === null) return this.top;
      const r = this.rows.get(parentId);
      if (!r.kids) { r.kids = el("ul", "kids"); r.kids.setAttribute("role", "group"); r.li.append(r.kids); }
      return r.kids;
    }

    // show the next CHUNK children of parentId (null: the top level)
    renderMore(parentId) {
      const list = this.children.get(parentId || "") || [];
      const box = this.container(parentId);
      const r = parentId === null ? null : this.rows.get(parentId);
      const start = r ? r.shown : this.topShown;
      const end = Math.min(list.length, start + CHUNK);
      const frag = document.createDocumentFragment();
      for (let i = start; i < end; i++) frag.append(this.row(list[i]));
      const more = r ? r.more : this.topMore;
      if (more) more.remove();
      box.append(frag);
      if (r) r.shown = end; else this.topShown = end;
      this.updateMore(parentId);
    }

    updateMore(parentId) {
      const list = this.children.get(parentId || "") || [];
      const r = parentId === null ? null : this.rows.get(parentId);
      if (r && !r.kids) return;
      const shown = r ? r.shown : this.topShown;
      let more = r ? r.more : this.topMore;
      if (shown >= list.length) { if (more) more.remove(); return; }
      if (!more) {
        more = el("button", "more");
        more.type = "button";
        more.addEventListener("click", () => this.renderMore(parentId));
        if (r) r.more = more; else this.topMore = more;
      }
      more.textContent = "show " + Math.min(CHUNK, list.length - shown) + " more of " +
        (list.length - shown) + " hidden";
      this.container(parentId).append(more);
    }

    toggle(id, open) {
      const r = this.rows.get(id);
      if (!r) return;
      const want = open === undefined ? !this.expanded.has(id) : open;
      if (want) {
        this.expanded.add(id);
        if (!r.kids) this.renderMore(id);
        r.kids.hidden = false;
      } else {
        this.expanded.delete(id);
        if (r.kids) r.kids.hidden = true;
      }
      this.paint(id, r.li);
    }

    // expand the incumbent's lineage so the current best is on screen
    showPath() {
      const chain = [];
      let id = this.incumbent;
      while (id && this.nodes.has(id) && chain.length < 100000) { chain.push(id); id = this.nodes.get(id).p; }
      chain.reverse();
      for (const step of chain.slice(0, -1)) {
        this.reveal(step);
        this.toggle(step, true);
      }
      for (const top of this.children.get("") || []) this.toggle(top, true);
    }

    // make sure the row of id exists (its parent shows enough children)
    reveal(id) {
      if (this.rows.has(id)) return;
      const n = this.nodes.get(id);
      if (n.p) { this.reveal(n.p); this.toggle(n.p, true); }
      const list = this.children.get(n.p || "");
      while (!this.rows.has(id)) {
        const before = n.p ? this.rows.get(n.p).shown : this.topShown;
        this.renderMore(n.p || null);
        const after = n.p ? this.rows.get(n.p).shown : this.topShown;
        if (after === before || after >= list.length && !this.rows.has(id)) break;
      }
    }

    collapseAll() {
      for (const id of Array.from(this.expanded)) this.toggle(id, false);
    }
  }

  global.RecursorTree = RecursorTree;
  global.recursorFmt = fmt;
})(window);

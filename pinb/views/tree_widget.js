// pinb tree widget: draws the rows of pinb.render.tree.rows.RowLayout (sent by the kernel),
// keeps only the visible rows in the page, and sends selections, searches and actions back.
// Session text is only ever set with textContent; the panels' HTML comes from pinb's views,
// which escape every piece of session text.

const ROW_H = 20;
const LANE_W = 14;
const BOUNDARY_H = 18; // the compaction boundary's own band, above the first kept row
const BUFFER = 12; // rows drawn above and below the visible window
const SVG_NS = "http://www.w3.org/2000/svg";
const PATH_COLOR = "#0969da";
const EDGE_COLOR = "#a0a8b0";
const BOOKKEEPING_COLOR = "#afb8c1";
const TAG_COLORS = {
  leaf: PATH_COLOR,
  summarized: "#6e7781",
  kept: "#1a7f37",
  edit: "#8250df",
  problem: "#cf222e",
  archived: "#9a6700",
  label: "#9a6700",
};

function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

function glyph(kind, x, y, color, onPath, z) {
  const stroke = onPath ? { stroke: PATH_COLOR, "stroke-width": 1.5 } : { stroke: "#fff" };
  const r = 5 * z;
  switch (kind) {
    case "circle":
      return svg("circle", { cx: x, cy: y, r, fill: color, ...stroke });
    case "square":
      return svg("rect", { x: x - 5.5 * z, y: y - 5.5 * z, width: 11 * z, height: 11 * z, fill: color, ...stroke });
    case "diamond":
      return svg("path", { d: `M${x} ${y - 7 * z}l${7 * z} ${7 * z}l${-7 * z} ${7 * z}l${-7 * z} ${-7 * z}z`, fill: color, ...stroke });
    case "dot":
      return svg("circle", { cx: x, cy: y, r: 3 * z, fill: BOOKKEEPING_COLOR });
    case "chain":
      return svg("rect", { x: x - 4 * z, y: y - 8 * z, width: 8 * z, height: 16 * z, rx: 4 * z, fill: "#fff", stroke: onPath ? PATH_COLOR : color, "stroke-width": 2, "stroke-dasharray": "2 2" });
    case "folded": {
      const g = svg("g", {});
      g.appendChild(svg("rect", { x: x - 6 * z, y: y - 6 * z, width: 12 * z, height: 12 * z, fill: "#fff", stroke: color, "stroke-width": 1.5 }));
      g.appendChild(svg("path", { d: `M${x - 3 * z} ${y}h${6 * z}M${x} ${y - 3 * z}v${6 * z}`, stroke: color }));
      return g;
    }
    default:
      return null;
  }
}

function render({ model, el }) {
  el.classList.add("pinb-tw", "pinb-explorer");
  const root = h("div", "pinb-tw-root");
  el.appendChild(root);

  // Header and toolbar.
  const header = h("div", "pinb-tw-header");
  const title = h("div", "pinb-tw-title");
  const summary = h("div", "pinb-tw-summary");
  header.append(title, summary);
  const toolbar = h("div", "pinb-tw-toolbar");
  const search = h("input", "pinb-tw-search");
  search.type = "search";
  search.placeholder = "search id, label or text (Enter: next)";
  const matchNote = h("span", "pinb-tw-matchnote");
  const zoomOut = h("button", "pinb-tw-zoom-out", "−");
  const zoomIn = h("button", "pinb-tw-zoom-in", "+");
  const zoomFit = h("button", "pinb-tw-zoom-reset", "100%");
  zoomOut.title = "zoom out (Ctrl+wheel)";
  zoomIn.title = "zoom in (Ctrl+wheel)";
  const leafButton = h("button", "pinb-tw-goto-leaf", "◀ leaf");
  leafButton.title = "scroll to the leaf";
  const archivedToggle = h("label", "pinb-tw-archived-toggle");
  const archivedBox = h("input");
  archivedBox.type = "checkbox";
  archivedToggle.append(archivedBox, document.createTextNode(" show archived"));
  const refresh = h("button", "pinb-tw-refresh pinb-refresh", "⟳ refresh");
  toolbar.append(search, matchNote, zoomOut, zoomFit, zoomIn, leafButton, archivedToggle, refresh);

  // Tree pane (virtual rows) and side panel.
  const body = h("div", "pinb-tw-body");
  const treeBox = h("div", "pinb-tw-treebox");
  const scroller = h("div", "pinb-tw-scroller pinb-tree");
  scroller.tabIndex = 0;
  const canvas = h("div", "pinb-tw-canvas");
  const lanesSvg = svg("svg", { class: "pinb-tw-lanes" });
  const rowsLayer = h("div", "pinb-tw-rows");
  canvas.append(lanesSvg, rowsLayer);
  scroller.appendChild(canvas);
  const legend = h("div", "pinb-tw-legend");
  const archivedBox2 = h("div", "pinb-tw-archived");
  treeBox.append(scroller, legend, archivedBox2);

  const side = h("div", "pinb-tw-side");
  const tabs = h("div", "pinb-tw-tabs");
  const panels = {};
  const tabButtons = {};
  for (const [name, label] of [["details", "Entry"], ["context_html", "Context from here"], ["compaction_html", "Compaction here"]]) {
    const button = h("button", `pinb-tw-tab pinb-tw-tab-${name}`, label);
    tabButtons[name] = button;
    tabs.appendChild(button);
    const panel = h("div", `pinb-tw-panel pinb-tw-panel-${name}`);
    panels[name] = panel;
  }
  panels.details.classList.add("pinb-details");
  panels.context_html.classList.add("pinb-context");
  panels.compaction_html.classList.add("pinb-compaction-preview");
  const actions = h("div", "pinb-tw-actions");
  const bContinue = h("button", "pinb-continue", "Continue here");
  const bSummary = h("button", "pinb-summarize", "Continue with branch summary");
  const labelText = h("input", "pinb-label-text");
  labelText.placeholder = "label (empty clears)";
  const bLabel = h("button", "pinb-label", "Set label");
  const bFork = h("button", "pinb-fork", "Fork to new file");
  const bArchive = h("button", "pinb-archive", "Archive branch");
  const bUncompact = h("button", "pinb-uncompact", "Give back what it lost");
  actions.append(bContinue, bSummary, labelText, bLabel, bFork, bArchive, bUncompact);
  const status = h("div", "pinb-tw-status pinb-status");
  side.append(actions, status, tabs, panels.details, panels.context_html, panels.compaction_html);
  body.append(treeBox, side);
  root.append(header, toolbar, body);

  function showTab(name, sync = true) {
    if (sync && model.get("tab") !== name) {
      model.set("tab", name);
      model.save_changes();
    }
    for (const key of Object.keys(panels)) {
      panels[key].style.display = key === name ? "" : "none";
      tabButtons[key].classList.toggle("pinb-tw-tab-on", key === name);
    }
  }
  for (const key of Object.keys(tabButtons)) tabButtons[key].addEventListener("click", () => showTab(key));
  showTab(model.get("tab") || "details", false);
  // A panel's link to an entry (a fact's source in the compaction panel) selects that entry
  // and shows it, instead of opening the session file.
  for (const panel of Object.values(panels)) {
    panel.addEventListener("click", (event) => {
      const link = event.target.closest("[data-pinb-entry]");
      if (!link || !panel.contains(link)) return;
      event.preventDefault();
      showTab("details");
      model.send({ action: "select", id: link.getAttribute("data-pinb-entry") });
    });
  }

  // --- state from the kernel -----------------------------------------------------------
  let rows = [];
  let edges = [];
  let rowOf = new Map();
  let boundaryRow = -1;
  let matchSet = new Set();
  let matchIndex = -1;
  let zoom = model.get("zoom") || 1;

  function indexRows() {
    rows = model.get("rows") || [];
    edges = model.get("edges") || [];
    rowOf = new Map();
    boundaryRow = -1;
    rows.forEach((row, i) => {
      if (row.key) rowOf.set(row.key, i);
      if (row.boundary && boundaryRow < 0) boundaryRow = i;
    });
    matchSet = new Set(model.get("matches") || []);
  }

  function geometry() {
    const lanes = Math.max(1, model.get("lanes") || 1);
    const rowH = ROW_H * zoom;
    const laneW = LANE_W * zoom;
    const textLeft = lanes * laneW + 10 * zoom;
    const bandH = boundaryRow >= 0 ? BOUNDARY_H * zoom : 0;
    return { lanes, rowH, laneW, textLeft, bandH };
  }

  // Rows below the compaction boundary sit lower by its band.
  function rowTop(i, g) {
    return i * g.rowH + (boundaryRow >= 0 && i >= boundaryRow ? g.bandH : 0);
  }

  function rowAt(y, g) {
    const top = boundaryRow >= 0 ? boundaryRow * g.rowH : Infinity;
    if (y < top) return Math.floor(y / g.rowH);
    return Math.floor(Math.max(top, y - g.bandH) / g.rowH);
  }

  function laneX(lane, g) {
    return 7 * zoom + lane * g.laneW;
  }

  function rowElement(row, i, g) {
    const div = h("div", "pinb-tw-row");
    div.dataset.index = String(i);
    div.dataset.id = row.key || "";
    div.style.top = `${rowTop(i, g)}px`;
    div.style.height = `${g.rowH}px`;
    if (row.band) div.classList.add(`pinb-tw-band-${row.band}`);
    if (row.muted) div.classList.add("pinb-tw-muted");
    if (row.key && row.key === model.get("selected_id")) div.classList.add("pinb-tw-selected");
    if (row.key && matchSet.has(row.key)) div.classList.add("pinb-tw-match");
    if (row.row !== "entry") div.classList.add(`pinb-tw-${row.row}`);
    const text = h("div", "pinb-tw-text");
    text.style.left = `${g.textLeft}px`;
    if (row.glyph === "gap") {
      text.appendChild(h("span", "pinb-tw-gap", row.text));
      div.appendChild(text);
      return div;
    }
    const kind = h("span", "pinb-tw-kind", row.kindText);
    kind.style.color = row.glyph === "dot" ? "#6e7781" : row.color;
    text.append(kind, h("span", "pinb-tw-id", row.idText));
    const rest = h("span", "pinb-tw-rest");
    for (const [word, tone] of row.tags || []) {
      const tag = h("span", "pinb-tw-tag", word);
      tag.style.color = TAG_COLORS[tone] || "#6e7781";
      rest.appendChild(tag);
    }
    if (row.label) {
      const label = h("span", "pinb-tw-label", `[${row.label}]`);
      rest.appendChild(label);
    }
    rest.appendChild(h("span", "pinb-tw-preview", row.text));
    text.appendChild(rest);
    text.appendChild(h("span", "pinb-tw-tokens", row.tokens != null ? Number(row.tokens).toLocaleString("en-US") : ""));
    div.appendChild(text);
    return div;
  }

  // The band above the first kept row: a dashed line, the label, the line going on.
  function boundaryElement(row, i, g) {
    const band = h("div", "pinb-tw-boundary");
    band.style.top = `${rowTop(i, g) - g.bandH}px`;
    band.style.height = `${g.bandH}px`;
    band.style.left = `${g.textLeft - 4 * zoom}px`;
    band.append(h("span", "pinb-tw-boundary-dash pinb-tw-boundary-lead"), h("span", "pinb-tw-boundary-label", row.boundary), h("span", "pinb-tw-boundary-dash"));
    return band;
  }

  let frame = 0;
  function schedule() {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      draw();
    });
  }

  function draw() {
    const g = geometry();
    canvas.style.setProperty("--pinb-z", String(zoom));
    const height = rowTop(Math.max(1, rows.length), g);
    canvas.style.height = `${height}px`;
    // As wide as the pane (the token column stays in view, the text ellipsizes), and
    // never so narrow that the text has no room: then the pane scrolls sideways.
    const inner = Math.max(scroller.clientWidth - 2, g.textLeft + 420 * zoom);
    canvas.style.width = `${inner}px`;
    const top = scroller.scrollTop;
    const first = Math.max(0, rowAt(top, g) - BUFFER);
    const last = Math.min(rows.length - 1, rowAt(top + scroller.clientHeight, g) + 1 + BUFFER);
    // Rows.
    const fragment = document.createDocumentFragment();
    for (let i = first; i <= last; i++) {
      fragment.appendChild(rowElement(rows[i], i, g));
      if (i === boundaryRow) fragment.appendChild(boundaryElement(rows[i], i, g));
    }
    rowsLayer.replaceChildren(fragment);
    // Lanes: edges crossing the window, then the nodes.
    lanesSvg.setAttribute("width", String(g.textLeft));
    lanesSvg.setAttribute("height", String(height));
    const parts = { plain: [], path: [], dotted: [] };
    const y = (i) => rowTop(i, g) + g.rowH / 2;
    for (const [p, c, lane, childLane, onPath, dotted] of edges) {
      if (c < first || p > last) continue;
      const x0 = laneX(lane, g);
      let d;
      if (childLane !== lane) {
        const x1 = laneX(childLane, g);
        const turn = y(c) - g.rowH * 0.75;
        d = `M${x0} ${y(p)}V${turn}Q${x0} ${y(c)} ${x1} ${y(c)}`;
      } else {
        d = `M${x0} ${y(p)}V${y(c)}`;
      }
      parts[dotted ? "dotted" : onPath ? "path" : "plain"].push(d);
    }
    const layer = [];
    if (parts.plain.length) layer.push(svg("path", { d: parts.plain.join(""), stroke: EDGE_COLOR, "stroke-width": 1.5, fill: "none" }));
    if (parts.dotted.length) layer.push(svg("path", { d: parts.dotted.join(""), stroke: EDGE_COLOR, "stroke-width": 1.5, "stroke-dasharray": "2 3", fill: "none" }));
    if (parts.path.length) layer.push(svg("path", { d: parts.path.join(""), stroke: PATH_COLOR, "stroke-width": 3 * Math.min(1, zoom), fill: "none" }));
    for (let i = first; i <= last; i++) {
      const row = rows[i];
      const x = laneX(row.lane, g);
      if (row.isLeaf) layer.push(svg("circle", { cx: x, cy: y(i), r: 8.5 * zoom, fill: "#fff", stroke: PATH_COLOR, "stroke-width": 2, "stroke-dasharray": "3 2" }));
      const shape = glyph(row.glyph, x, y(i), row.color, row.onPath, zoom);
      if (shape) layer.push(shape);
    }
    lanesSvg.replaceChildren(...layer);
    el.dataset.rows = String(rows.length);
    el.dataset.drawn = String(last - first + 1);
  }

  function scrollToRow(i) {
    if (i === undefined || i < 0) return;
    const g = geometry();
    const top = rowTop(i, g);
    if (top < scroller.scrollTop || top + g.rowH > scroller.scrollTop + scroller.clientHeight) {
      scroller.scrollTop = Math.max(0, top - scroller.clientHeight / 3);
    }
  }

  function drawHeader() {
    title.textContent = model.get("title");
    summary.textContent = model.get("summary");
    matchNote.textContent = model.get("match_note");
    archivedBox.checked = !!model.get("show_archived");
    zoomFit.textContent = `${Math.round(zoom * 100)}%`;
    // Legend: only what occurs.
    const items = [];
    for (const [kind, color, words] of model.get("legend") || []) {
      const item = h("span", "pinb-tw-legend-item");
      const icon = svg("svg", { width: 16, height: 14 });
      const shape = ["circle", "square", "diamond", "dot", "chain", "folded"].includes(kind)
        ? glyph(kind, 8, 7, color, false, 1)
        : svg("path", { d: "M2 7h12", stroke: color, "stroke-width": kind === "path" ? 3 : 2, "stroke-dasharray": kind === "boundary" ? "4 3" : "0" });
      if (shape) icon.appendChild(shape);
      item.append(icon, document.createTextNode(words));
      items.push(item);
    }
    legend.replaceChildren(...items);
    const archived = model.get("archived_list") || [];
    const list = [];
    if (archived.length) {
      list.push(h("span", "pinb-tw-archived-title", `Archived (${archived.length}): `));
      for (const [target, count, note] of archived) {
        const item = h("span", "pinb-tw-archived-item");
        item.append(document.createTextNode(`${target.slice(0, 8)} · ${count} entries${note ? " · " + note : ""} `));
        const undo = h("button", "pinb-unarchive", "unarchive");
        undo.addEventListener("click", () => model.send({ action: "unarchive", target }));
        item.appendChild(undo);
        list.push(item);
      }
    }
    archivedBox2.replaceChildren(...list);
  }

  function drawPanels() {
    for (const key of Object.keys(panels)) panels[key].innerHTML = model.get(key) || "";
    tabButtons.compaction_html.textContent = model.get("compaction_label") || "Compaction here";
    const s = model.get("status") || "";
    status.textContent = s;
    status.className = `pinb-tw-status pinb-status pinb-tw-status-${model.get("status_tone")}`;
    const selected = model.get("selected_id");
    const row = rows[rowOf.get(selected)];
    bArchive.disabled = !selected || (row && row.onPath);
    // A disabled button says why, and what to do instead.
    bArchive.title = !selected
      ? "Select an entry first."
      : row && row.onPath
        ? "The active path cannot be archived: select an entry on another branch, or move the leaf off this one first."
        : "Hide the branch that starts here (nothing is deleted; unarchive brings it back).";
    drawUncompact(selected, row);
  }

  // Give back (pinb uncompact): only a compaction on the active path can, since only its
  // loss reaches the model's next turn.
  function drawUncompact(selected, row) {
    const compaction = !!row && row.kind === "compaction";
    bUncompact.disabled = !compaction || !row.onPath;
    bUncompact.title = !compaction
      ? "Select a compaction entry: this gives back, as one cited message the next turn reads, the facts its summary lost."
      : !row.onPath
        ? "This compaction is not on the active path: its loss would not reach the model. Move the leaf after it first."
        : "Append one cited message with the facts this compaction's summary lost (files, commands, errors, instructions) that the context does not carry.";
  }

  function select(i) {
    const row = rows[i];
    if (!row || !row.key) return;
    if (row.row === "chain" || row.row === "folded") {
      const expanded = new Set(model.get("expanded") || []);
      expanded.add(row.key);
      model.set("expanded", [...expanded]);
    }
    model.set("selected_id", row.key);
    model.save_changes();
  }

  // --- events --------------------------------------------------------------------------
  let drag = null;
  scroller.addEventListener("pointerdown", (event) => {
    drag = { x: event.clientX, y: event.clientY, left: scroller.scrollLeft, top: scroller.scrollTop, moved: false };
  });
  const onMove = (event) => {
    if (!drag || !(event.buttons & 1)) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    if (drag.moved) {
      scroller.scrollLeft = drag.left - dx;
      scroller.scrollTop = drag.top - dy;
    }
  };
  const onUp = () => {
    setTimeout(() => (drag = null), 0);
  };
  window.addEventListener("pointermove", onMove);
  window.addEventListener("pointerup", onUp);
  scroller.addEventListener("click", (event) => {
    if (drag && drag.moved) return;
    const target = event.target.closest(".pinb-tw-row");
    if (target) select(Number(target.dataset.index));
  });
  scroller.addEventListener("scroll", schedule);
  // Widening the pane (its corner handle) or the page redraws the rows to the new width.
  const resized = typeof ResizeObserver === "function" ? new ResizeObserver(schedule) : null;
  if (resized) resized.observe(scroller);
  scroller.addEventListener("wheel", (event) => {
    if (!event.ctrlKey) return;
    event.preventDefault();
    setZoom(zoom * (event.deltaY < 0 ? 1.1 : 1 / 1.1));
  }, { passive: false });
  scroller.addEventListener("keydown", (event) => {
    const at = rowOf.get(model.get("selected_id"));
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      let i = at === undefined ? 0 : at + (event.key === "ArrowDown" ? 1 : -1);
      while (rows[i] && !rows[i].key) i += event.key === "ArrowDown" ? 1 : -1;
      if (rows[i]) select(i);
    } else if (event.key === "Enter" && at !== undefined) {
      select(at);
    }
  });

  function setZoom(value) {
    const g = geometry();
    const centre = (scroller.scrollTop + scroller.clientHeight / 2) / g.rowH;
    zoom = Math.min(2.5, Math.max(0.3, value));
    model.set("zoom", zoom);
    model.save_changes();
    const g2 = geometry();
    scroller.scrollTop = centre * g2.rowH - scroller.clientHeight / 2;
    drawHeader();
    draw();
  }
  zoomIn.addEventListener("click", () => setZoom(zoom * 1.25));
  zoomOut.addEventListener("click", () => setZoom(zoom / 1.25));
  zoomFit.addEventListener("click", () => setZoom(1));
  leafButton.addEventListener("click", () => scrollToRow(rowOf.get(model.get("leaf"))));
  archivedBox.addEventListener("change", () => {
    model.set("show_archived", archivedBox.checked);
    model.save_changes();
  });
  refresh.addEventListener("click", () => model.send({ action: "refresh" }));

  let timer = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      model.set("query", search.value);
      model.save_changes();
    }, 250);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    const hits = model.get("matches") || [];
    if (!hits.length) return;
    matchIndex = (matchIndex + 1) % hits.length;
    const i = rowOf.get(hits[matchIndex]);
    if (i !== undefined) {
      scrollToRow(i);
      select(i);
    }
  });

  const send = (action, extra = {}) => model.send({ action, id: model.get("selected_id"), ...extra });
  bContinue.addEventListener("click", () => send("continue"));
  bSummary.addEventListener("click", () => send("summarize"));
  bLabel.addEventListener("click", () => {
    send("label", { text: labelText.value });
    labelText.blur(); // the new rows then show the label as set
  });
  bFork.addEventListener("click", () => send("fork"));
  bArchive.addEventListener("click", () => send("archive"));
  bUncompact.addEventListener("click", () => send("uncompact"));

  // --- kernel changes ------------------------------------------------------------------
  // The label box shows the selected entry's label as the file now holds it: after a
  // selection, and after "Set label" (the rows come back with the new label), never the
  // text typed for another entry.
  const syncLabel = () => {
    const row = rows[rowOf.get(model.get("selected_id"))];
    labelText.value = (row && row.label) || "";
  };
  const onRows = () => {
    indexRows();
    drawHeader();
    draw();
    drawPanels();
    if (document.activeElement !== labelText) syncLabel();
  };
  const onSelected = () => {
    const i = rowOf.get(model.get("selected_id"));
    scrollToRow(i);
    draw();
    drawPanels();
    syncLabel();
  };
  const onMatches = () => {
    matchSet = new Set(model.get("matches") || []);
    matchIndex = -1;
    matchNote.textContent = model.get("match_note");
    const hits = model.get("matches") || [];
    if (hits.length) scrollToRow(rowOf.get(hits[0]));
    draw();
  };
  model.on("change:revision", onRows);
  model.on("change:selected_id", onSelected);
  model.on("change:details", drawPanels);
  model.on("change:context_html", drawPanels);
  model.on("change:compaction_html", drawPanels);
  model.on("change:compaction_label", drawPanels);
  model.on("change:status", drawPanels);
  model.on("change:matches", onMatches);
  model.on("change:match_note", () => (matchNote.textContent = model.get("match_note")));

  indexRows();
  drawHeader();
  drawPanels();
  syncLabel();
  // The first paint, once the element has its size.
  requestAnimationFrame(() => {
    draw();
    scrollToRow(rowOf.get(model.get("selected_id")));
    draw();
    el.dataset.ready = "1";
  });

  return () => {
    if (resized) resized.disconnect();
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
    model.off("change:revision", onRows);
    model.off("change:selected_id", onSelected);
    model.off("change:matches", onMatches);
    model.off("change:details", drawPanels);
    model.off("change:context_html", drawPanels);
    model.off("change:compaction_html", drawPanels);
    model.off("change:compaction_label", drawPanels);
    model.off("change:status", drawPanels);
  };
}

export default { render };

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

// --- the view's elements ------------------------------------------------------------

function buildDom(el) {
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
  const archivedList = h("div", "pinb-tw-archived");
  treeBox.append(scroller, legend, archivedList);

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
  const bFork = h("button", "pinb-fork", "Fork to new file"); // relabelled by fork_hint
  const bArchive = h("button", "pinb-archive", "Archive branch");
  const bUncompact = h("button", "pinb-uncompact", "Give back what it lost");
  actions.append(bContinue, bSummary, labelText, bLabel, bFork, bArchive, bUncompact);
  const status = h("div", "pinb-tw-status pinb-status");
  // A user message's text given back by continue or fork: edited here, copied as a cell.
  // It arrives as a trait and is only ever set as the box's value (never as HTML).
  const editor = h("div", "pinb-tw-editor");
  const editorTitle = h("div", "pinb-tw-editor-title", "Text to edit and send again:");
  const editorText = h("textarea", "pinb-editor-text");
  editorText.rows = 4;
  editorText.spellcheck = false;
  const editorRow = h("div", "pinb-tw-editor-row");
  const bCopyCell = h("button", "pinb-copy-cell", "Copy as a %%pi cell");
  bCopyCell.title = "Copies %%pi and this text to the clipboard, as a cell that sends it again.";
  const editorNote = h("span", "pinb-tw-editor-note");
  editorRow.append(bCopyCell, editorNote);
  editor.append(editorTitle, editorText, editorRow);
  side.append(actions, status, editor, tabs, panels.details, panels.context_html, panels.compaction_html);
  body.append(treeBox, side);
  root.append(header, toolbar, body);
  return {
    title, summary, search, matchNote, zoomOut, zoomIn, zoomFit, leafButton, archivedBox, refresh,
    scroller, canvas, lanesSvg, rowsLayer, legend, archivedList, panels, tabButtons,
    bContinue, bSummary, labelText, bLabel, bFork, bArchive, bUncompact, status,
    editor, editorText, bCopyCell, editorNote,
  };
}

// --- geometry: where row i sits at the view's zoom ----------------------------------

function geometry(v) {
  const lanes = Math.max(1, v.model.get("lanes") || 1);
  const rowH = ROW_H * v.zoom;
  const laneW = LANE_W * v.zoom;
  const textLeft = lanes * laneW + 10 * v.zoom;
  const bandH = v.boundaryRow >= 0 ? BOUNDARY_H * v.zoom : 0;
  return { lanes, rowH, laneW, textLeft, bandH };
}

// Rows below the compaction boundary sit lower by its band.
function rowTop(v, i, g) {
  return i * g.rowH + (v.boundaryRow >= 0 && i >= v.boundaryRow ? g.bandH : 0);
}

function rowAt(v, y, g) {
  const top = v.boundaryRow >= 0 ? v.boundaryRow * g.rowH : Infinity;
  if (y < top) return Math.floor(y / g.rowH);
  return Math.floor(Math.max(top, y - g.bandH) / g.rowH);
}

function laneX(v, lane, g) {
  return 7 * v.zoom + lane * g.laneW;
}

// --- drawing ------------------------------------------------------------------------

function indexRows(v) {
  v.rows = v.model.get("rows") || [];
  v.edges = v.model.get("edges") || [];
  v.rowOf = new Map();
  v.boundaryRow = -1;
  v.rows.forEach((row, i) => {
    if (row.key) v.rowOf.set(row.key, i);
    if (row.boundary && v.boundaryRow < 0) v.boundaryRow = i;
  });
  v.matchSet = new Set(v.model.get("matches") || []);
}

function rowElement(v, row, i, g) {
  const div = h("div", "pinb-tw-row");
  div.dataset.index = String(i);
  div.dataset.id = row.key || "";
  div.style.top = `${rowTop(v, i, g)}px`;
  div.style.height = `${g.rowH}px`;
  if (row.band) div.classList.add(`pinb-tw-band-${row.band}`);
  if (row.muted) div.classList.add("pinb-tw-muted");
  if (row.key && row.key === v.model.get("selected_id")) div.classList.add("pinb-tw-selected");
  if (row.key && v.matchSet.has(row.key)) div.classList.add("pinb-tw-match");
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
function boundaryElement(v, row, i, g) {
  const band = h("div", "pinb-tw-boundary");
  band.style.top = `${rowTop(v, i, g) - g.bandH}px`;
  band.style.height = `${g.bandH}px`;
  band.style.left = `${g.textLeft - 4 * v.zoom}px`;
  band.append(h("span", "pinb-tw-boundary-dash pinb-tw-boundary-lead"), h("span", "pinb-tw-boundary-label", row.boundary), h("span", "pinb-tw-boundary-dash"));
  return band;
}

function schedule(v) {
  if (v.frame) return;
  v.frame = requestAnimationFrame(() => {
    v.frame = 0;
    draw(v);
  });
}

// The rows in (and a buffer around) the scroller's window, and their lanes.
function draw(v) {
  const { canvas, scroller, rowsLayer, lanesSvg } = v.ui;
  const { rows, zoom } = v;
  const g = geometry(v);
  canvas.style.setProperty("--pinb-z", String(zoom));
  const height = rowTop(v, Math.max(1, rows.length), g);
  canvas.style.height = `${height}px`;
  // As wide as the pane (the token column stays in view, the text ellipsizes), and
  // never so narrow that the text has no room: then the pane scrolls sideways.
  const inner = Math.max(scroller.clientWidth - 2, g.textLeft + 420 * zoom);
  canvas.style.width = `${inner}px`;
  const top = scroller.scrollTop;
  const first = Math.max(0, rowAt(v, top, g) - BUFFER);
  const last = Math.min(rows.length - 1, rowAt(v, top + scroller.clientHeight, g) + 1 + BUFFER);
  // Rows.
  const fragment = document.createDocumentFragment();
  for (let i = first; i <= last; i++) {
    fragment.appendChild(rowElement(v, rows[i], i, g));
    if (i === v.boundaryRow) fragment.appendChild(boundaryElement(v, rows[i], i, g));
  }
  rowsLayer.replaceChildren(fragment);
  // Lanes: edges crossing the window, then the nodes.
  lanesSvg.setAttribute("width", String(g.textLeft));
  lanesSvg.setAttribute("height", String(height));
  const parts = { plain: [], path: [], dotted: [] };
  const y = (i) => rowTop(v, i, g) + g.rowH / 2;
  for (const [p, c, lane, childLane, onPath, dotted] of v.edges) {
    if (c < first || p > last) continue;
    const x0 = laneX(v, lane, g);
    let d;
    if (childLane !== lane) {
      const x1 = laneX(v, childLane, g);
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
    const x = laneX(v, row.lane, g);
    if (row.isLeaf) layer.push(svg("circle", { cx: x, cy: y(i), r: 8.5 * zoom, fill: "#fff", stroke: PATH_COLOR, "stroke-width": 2, "stroke-dasharray": "3 2" }));
    const shape = glyph(row.glyph, x, y(i), row.color, row.onPath, zoom);
    if (shape) layer.push(shape);
  }
  lanesSvg.replaceChildren(...layer);
  v.el.dataset.rows = String(rows.length);
  v.el.dataset.drawn = String(last - first + 1);
}

function scrollToRow(v, i) {
  if (i === undefined || i < 0) return;
  const { scroller } = v.ui;
  const g = geometry(v);
  const top = rowTop(v, i, g);
  if (top < scroller.scrollTop || top + g.rowH > scroller.scrollTop + scroller.clientHeight) {
    scroller.scrollTop = Math.max(0, top - scroller.clientHeight / 3);
  }
}

// Where the selected row sits in the scroller's window (px from its top); null when it is
// not in view (the user scrolled away from it: a redraw then leaves the scroll alone).
function selectedOffset(v) {
  const i = v.rowOf.get(v.model.get("selected_id"));
  if (i === undefined) return null;
  const g = geometry(v);
  const offset = rowTop(v, i, g) - v.ui.scroller.scrollTop;
  return offset + g.rowH > 0 && offset < v.ui.scroller.clientHeight ? offset : null;
}

// Scroll so the selected row sits ``offset`` px from the window's top again (in view).
function keepOffset(v, offset) {
  const i = v.rowOf.get(v.model.get("selected_id"));
  if (i === undefined) return;
  const { scroller, canvas } = v.ui;
  const g = geometry(v);
  canvas.style.height = `${rowTop(v, Math.max(1, v.rows.length), g)}px`; // room to scroll to
  const room = Math.max(0, scroller.clientHeight - g.rowH);
  scroller.scrollTop = Math.max(0, rowTop(v, i, g) - Math.min(Math.max(0, offset), room));
}

function drawHeader(v) {
  const { model, ui } = v;
  ui.title.textContent = model.get("title");
  ui.summary.textContent = model.get("summary");
  ui.matchNote.textContent = model.get("match_note");
  ui.archivedBox.checked = !!model.get("show_archived");
  ui.zoomFit.textContent = `${Math.round(v.zoom * 100)}%`;
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
  ui.legend.replaceChildren(...items);
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
  ui.archivedList.replaceChildren(...list);
}

function drawPanels(v) {
  const { model, ui } = v;
  for (const key of Object.keys(ui.panels)) ui.panels[key].innerHTML = model.get(key) || "";
  ui.tabButtons.compaction_html.textContent = model.get("compaction_label") || "Compaction here";
  ui.status.textContent = model.get("status") || "";
  ui.status.className = `pinb-tw-status pinb-status pinb-tw-status-${model.get("status_tone")}`;
  const selected = model.get("selected_id");
  const row = v.rows[v.rowOf.get(selected)];
  ui.bArchive.disabled = !selected || (row && row.onPath);
  // A disabled button says why, and what to do instead.
  ui.bArchive.title = !selected
    ? "Select an entry first."
    : row && row.onPath
      ? "The active path cannot be archived: select an entry on another branch, or move the leaf off this one first."
      : "Hide the branch that starts here (nothing is deleted; unarchive brings it back).";
  drawUncompact(v, row);
  // The kernel decides what forking here does (the rule %pi fork follows) and says it.
  const [forkLabel, forkTitle] = model.get("fork_hint") || [];
  ui.bFork.textContent = forkLabel || "Fork to new file";
  ui.bFork.title = forkTitle || "";
  ui.bFork.disabled = !selected;
}

// The text to send again: shown while an action has given one back.
function drawEditor(v) {
  const { model, ui } = v;
  const text = model.get("editor_text") || "";
  ui.editor.style.display = text ? "" : "none";
  ui.editorText.value = text;
  ui.editorNote.textContent = model.get("editor_note") || "";
}

// The box's text (as edited) as a %%pi cell, to the clipboard. Where the page may not
// write the clipboard (not a secure context, or refused), the cell is selected in the box
// so Ctrl+C copies it, and the note says so.
async function copyCell(v) {
  const { ui } = v;
  const cell = `%%pi\n${ui.editorText.value}`;
  try {
    if (!navigator.clipboard || !navigator.clipboard.writeText) throw new Error("no clipboard");
    await navigator.clipboard.writeText(cell);
    ui.editorNote.textContent = "Copied: paste it into a new cell to send it again.";
  } catch (error) {
    ui.editorText.value = cell;
    ui.editorText.select();
    ui.editorNote.textContent = "The browser refused the clipboard: the cell is selected, press Ctrl+C (⌘C) to copy it.";
  }
}

// Give back (pinb uncompact): only a compaction on the active path can, since only its
// loss reaches the model's next turn.
function drawUncompact(v, row) {
  const { bUncompact } = v.ui;
  const compaction = !!row && row.kind === "compaction";
  bUncompact.disabled = !compaction || !row.onPath;
  bUncompact.title = !compaction
    ? "Select a compaction entry: this gives back, as one cited message the next turn reads, the facts its summary lost."
    : !row.onPath
      ? "This compaction is not on the active path: its loss would not reach the model. Move the leaf after it first."
      : "Append one cited message with the facts this compaction's summary lost (files, commands, errors, instructions) that the context does not carry.";
}

// The label box shows the selected entry's label as the file now holds it: after a
// selection, and after "Set label" (the rows come back with the new label), never the
// text typed for another entry.
function syncLabel(v) {
  const row = v.rows[v.rowOf.get(v.model.get("selected_id"))];
  v.ui.labelText.value = (row && row.label) || "";
}

// --- what the user does ---------------------------------------------------------------

function select(v, i) {
  const { model } = v;
  const row = v.rows[i];
  if (!row || !row.key) return;
  if (row.row === "chain" || row.row === "folded") {
    const expanded = new Set(model.get("expanded") || []);
    expanded.add(row.key);
    model.set("expanded", [...expanded]);
  }
  model.set("selected_id", row.key);
  model.save_changes();
}

function showTab(v, name, sync = true) {
  const { model, ui } = v;
  if (sync && model.get("tab") !== name) {
    model.set("tab", name);
    model.save_changes();
  }
  for (const key of Object.keys(ui.panels)) {
    ui.panels[key].style.display = key === name ? "" : "none";
    ui.tabButtons[key].classList.toggle("pinb-tw-tab-on", key === name);
  }
}

function setZoom(v, value) {
  const { model, ui } = v;
  const g = geometry(v);
  const centre = (ui.scroller.scrollTop + ui.scroller.clientHeight / 2) / g.rowH;
  v.zoom = Math.min(2.5, Math.max(0.3, value));
  model.set("zoom", v.zoom);
  model.save_changes();
  const g2 = geometry(v);
  ui.scroller.scrollTop = centre * g2.rowH - ui.scroller.clientHeight / 2;
  drawHeader(v);
  draw(v);
}

// Listeners on the view's own elements go with the elements; no table needed for them.
function wireTabs(v) {
  const { model, ui } = v;
  for (const key of Object.keys(ui.tabButtons)) ui.tabButtons[key].addEventListener("click", () => showTab(v, key));
  // A panel's link to an entry (a fact's source in the compaction panel) selects that entry
  // and shows it, instead of opening the session file.
  for (const panel of Object.values(ui.panels)) {
    panel.addEventListener("click", (event) => {
      const link = event.target.closest("[data-pinb-entry]");
      if (!link || !panel.contains(link)) return;
      event.preventDefault();
      showTab(v, "details");
      model.send({ action: "select", id: link.getAttribute("data-pinb-entry") });
    });
  }
}

function wireScroller(v) {
  const { model, ui } = v;
  const { scroller } = ui;
  scroller.addEventListener("pointerdown", (event) => {
    v.drag = { x: event.clientX, y: event.clientY, left: scroller.scrollLeft, top: scroller.scrollTop, moved: false };
  });
  scroller.addEventListener("click", (event) => {
    if (v.drag && v.drag.moved) return;
    const target = event.target.closest(".pinb-tw-row");
    if (target) select(v, Number(target.dataset.index));
  });
  scroller.addEventListener("scroll", () => schedule(v));
  scroller.addEventListener("wheel", (event) => {
    if (!event.ctrlKey) return;
    event.preventDefault();
    setZoom(v, v.zoom * (event.deltaY < 0 ? 1.1 : 1 / 1.1));
  }, { passive: false });
  scroller.addEventListener("keydown", (event) => {
    const at = v.rowOf.get(model.get("selected_id"));
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      let i = at === undefined ? 0 : at + (event.key === "ArrowDown" ? 1 : -1);
      while (v.rows[i] && !v.rows[i].key) i += event.key === "ArrowDown" ? 1 : -1;
      if (v.rows[i]) select(v, i);
    } else if (event.key === "Enter" && at !== undefined) {
      select(v, at);
    }
  });
}

function wireToolbar(v) {
  const { model, ui } = v;
  ui.zoomIn.addEventListener("click", () => setZoom(v, v.zoom * 1.25));
  ui.zoomOut.addEventListener("click", () => setZoom(v, v.zoom / 1.25));
  ui.zoomFit.addEventListener("click", () => setZoom(v, 1));
  ui.leafButton.addEventListener("click", () => scrollToRow(v, v.rowOf.get(model.get("leaf"))));
  ui.archivedBox.addEventListener("change", () => {
    model.set("show_archived", ui.archivedBox.checked);
    model.save_changes();
  });
  ui.refresh.addEventListener("click", () => model.send({ action: "refresh" }));
  ui.search.addEventListener("input", () => {
    v.timer = setTimeout(() => {
      model.set("query", ui.search.value);
      model.save_changes();
    }, 250);
  });
  ui.search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    const hits = model.get("matches") || [];
    if (!hits.length) return;
    v.matchIndex = (v.matchIndex + 1) % hits.length;
    const i = v.rowOf.get(hits[v.matchIndex]);
    if (i !== undefined) {
      scrollToRow(v, i);
      select(v, i);
    }
  });
}

function wireActions(v) {
  const { model, ui } = v;
  const send = (action, extra = {}) => model.send({ action, id: model.get("selected_id"), ...extra });
  ui.bContinue.addEventListener("click", () => send("continue"));
  ui.bSummary.addEventListener("click", () => send("summarize"));
  ui.bLabel.addEventListener("click", () => {
    send("label", { text: ui.labelText.value });
    ui.labelText.blur(); // the new rows then show the label as set
  });
  ui.bFork.addEventListener("click", () => send("fork"));
  ui.bArchive.addEventListener("click", () => send("archive"));
  ui.bUncompact.addEventListener("click", () => send("uncompact"));
  ui.bCopyCell.addEventListener("click", () => copyCell(v));
}

// --- listeners that outlive the view's elements ----------------------------------------

// Every listener on something the view does not own (the model, the window), as
// [target, event, handler, options]: added from this table and removed from it, so none
// is left behind when the view goes (a re-rendered cell would otherwise keep drawing into
// the detached old view).
function listenerTable(v) {
  const { model } = v;
  const panels = () => drawPanels(v);
  const onRows = () => {
    // The selected entry keeps its place on screen when the rows are laid out again
    // (continue, fork, archive move the active path): else it slides out of view.
    const anchor = selectedOffset(v);
    indexRows(v);
    drawHeader(v);
    if (anchor !== null) keepOffset(v, anchor);
    draw(v);
    drawPanels(v);
    if (document.activeElement !== v.ui.labelText) syncLabel(v);
  };
  const onSelected = () => {
    scrollToRow(v, v.rowOf.get(model.get("selected_id")));
    draw(v);
    drawPanels(v);
    syncLabel(v);
  };
  const onMatches = () => {
    v.matchSet = new Set(model.get("matches") || []);
    v.matchIndex = -1;
    v.ui.matchNote.textContent = model.get("match_note");
    const hits = model.get("matches") || [];
    if (hits.length) scrollToRow(v, v.rowOf.get(hits[0]));
    draw(v);
  };
  const onMatchNote = () => {
    v.ui.matchNote.textContent = model.get("match_note");
  };
  const onPointerMove = (event) => {
    const drag = v.drag;
    if (!drag || !(event.buttons & 1)) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    if (drag.moved) {
      v.ui.scroller.scrollLeft = drag.left - dx;
      v.ui.scroller.scrollTop = drag.top - dy;
    }
  };
  const onPointerUp = () => {
    setTimeout(() => (v.drag = null), 0);
  };
  return [
    [model, "change:revision", onRows],
    [model, "change:selected_id", onSelected],
    [model, "change:details", panels],
    [model, "change:context_html", panels],
    [model, "change:compaction_html", panels],
    [model, "change:compaction_label", panels],
    [model, "change:status", panels],
    [model, "change:fork_hint", panels],
    [model, "change:editor_text", () => drawEditor(v)],
    [model, "change:editor_note", () => drawEditor(v)],
    [model, "change:matches", onMatches],
    [model, "change:match_note", onMatchNote],
    [window, "pointermove", onPointerMove],
    [window, "pointerup", onPointerUp],
  ];
}

// Adds every listener of the table; returns the function that removes every one of them.
function attach(table) {
  for (const [target, event, handler, options] of table) {
    if (typeof target.addEventListener === "function") target.addEventListener(event, handler, options);
    else target.on(event, handler);
  }
  return () => {
    for (const [target, event, handler, options] of table) {
      if (typeof target.removeEventListener === "function") target.removeEventListener(event, handler, options);
      else target.off(event, handler);
    }
  };
}

function render({ model, el }) {
  const v = {
    model, el, ui: buildDom(el),
    rows: [], edges: [], rowOf: new Map(), boundaryRow: -1, matchSet: new Set(), matchIndex: -1,
    zoom: model.get("zoom") || 1, frame: 0, drag: null, timer: 0,
  };
  wireTabs(v);
  showTab(v, model.get("tab") || "details", false);
  wireScroller(v);
  wireToolbar(v);
  wireActions(v);
  // Widening the pane (its corner handle) or the page redraws the rows to the new width.
  const resized = typeof ResizeObserver === "function" ? new ResizeObserver(() => schedule(v)) : null;
  if (resized) resized.observe(v.ui.scroller);
  const detach = attach(listenerTable(v));

  indexRows(v);
  drawHeader(v);
  drawPanels(v);
  drawEditor(v);
  syncLabel(v);
  // The first paint, once the element has its size.
  requestAnimationFrame(() => {
    draw(v);
    scrollToRow(v, v.rowOf.get(model.get("selected_id")));
    draw(v);
    el.dataset.ready = "1";
  });

  return () => {
    if (resized) resized.disconnect();
    if (v.frame) cancelAnimationFrame(v.frame);
    detach();
  };
}

export default { render };

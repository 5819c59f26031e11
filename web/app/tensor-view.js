// Renders one stage of a forward trace as a card: title, formula, named shape, and the values as
// real tables (2-D slices, tabs per batch item, small multiples per head), heatmaps for the
// attention stages, row sums where they teach something, and summaries for large tensors.
import { h, svg } from "./dom.js";
import { S } from "./strings.js";
import { num, namedShape, shapeText, summarize } from "./format.js";

/** A 2-D slice larger than this on either side is shown truncated. */
const GRID_LIMIT = 16;
/** How many leading rows/columns a truncated grid shows. */
const GRID_SHOWN = 12;
/** Above this many cells a heatmap is drawn on a canvas instead of SVG rectangles. */
const SVG_CELL_LIMIT = 48 * 48;

const HEATMAP_STAGES = new Set(["attn_scores", "attn_scores_masked", "attn_weights", "attn_weights_dropout", "mask"]);
const ROW_SUM_STAGES = new Set(["attn_weights", "attn_weights_dropout"]);

/**
 * @param stage  {id, title, formula, axes, shape, data}
 * @param ctx    {words: string[], dropout: number, training: boolean, output?: {width, rule}, idPrefix}
 */
export function stageCard(stage, ctx) {
  const headingId = `stage-${stage.id}-title`;
  const nd = stage.shape.length;
  // Per-head heatmaps and truncated grids need the full width; small grids share a row.
  const wide = HEATMAP_STAGES.has(stage.id) || (nd >= 4 && stage.shape[1] > 2) || stage.shape[nd - 1] > 8;
  const card = h("section", {
    class: `stage-card${stage.id === "output" ? " is-output" : ""}${wide ? " wide" : ""}`,
    id: `stage-${stage.id}`,
    dataset: { stage: stage.id },
    "aria-labelledby": headingId,
  });
  const head = h(
    "header",
    { class: "stage-head" },
    h("h3", { id: headingId }, h("span", { class: "stage-id" }, stage.id), " ", stage.title),
    h("p", { class: "stage-formula" }, h("code", {}, stage.formula)),
    h("p", { class: "stage-shape", dataset: { testid: "stage-shape" } }, `${S.shapeLabel} `, h("code", {}, namedShape(stage.shape, stage.axes))),
  );
  card.append(head);
  const why = S.stageWhy[stage.id];
  if (why) card.append(h("p", { class: "stage-why" }, why));
  if (stage.id === "output" && ctx.output) {
    card.append(
      h("p", { class: "output-summary", dataset: { testid: "output-summary" } },
        S.outputSummary(shapeText(stage.shape), ctx.output.width, ctx.output.rule)),
    );
  }
  card.append(tensorView(stage, ctx));
  if (stage.id === "attn_weights") card.append(h("p", { class: "stage-note" }, S.rowSumsOne));
  if (stage.id === "attn_weights_dropout") {
    const active = ctx.training && ctx.dropout > 0;
    card.append(
      h("p", { class: "stage-note" },
        active
          ? S.rowSumsDropout(String(ctx.dropout), num(1 / (1 - ctx.dropout), 4).replace(/\.?0+$/, ""))
          : S.rowSumsNoDropout(ctx.training ? S.dropoutOffZero : S.dropoutOffEval)),
    );
  }
  return card;
}

function tensorView(stage, ctx) {
  const { shape, axes } = stage;
  const nd = shape.length;
  const box = h("div", { class: "tensor" });
  if (nd === 0) {
    box.append(h("p", {}, num(stage.data[0])));
    return box;
  }
  const rows = nd === 1 ? 1 : shape[nd - 2];
  const cols = shape[nd - 1];
  const rowAxis = nd === 1 ? "" : axes[nd - 2];
  const colAxis = axes[nd - 1];
  const sliceSize = rows * cols;
  const slice = (offset, caption) =>
    sliceView(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption);

  const big = sliceSize > GRID_LIMIT * GRID_LIMIT || rows > GRID_LIMIT || cols > GRID_LIMIT;
  if (big) {
    const s = summarize(stage.data);
    box.append(
      h("p", { class: "tensor-summary", dataset: { testid: "tensor-summary" } },
        S.wholeTensor + S.summaryLabel(num(s.min), num(s.max), num(s.mean)) + (s.negInf ? S.summaryMasked(s.negInf) : "")),
    );
  }

  if (nd <= 2) {
    box.append(slice(0, ""));
    return box;
  }
  // Leading axes: the first becomes tabs (batch items), the second small multiples (heads).
  const lead = shape.slice(0, nd - 2);
  const tabAxis = axes[0];
  const tabCount = lead[0];
  const innerCount = lead.slice(1).reduce((a, b) => a * b, 1);
  const multAxis = nd >= 4 ? axes[1] : "";
  const renderTab = (t) => {
    const multiples = h("div", { class: "multiples" });
    for (let m = 0; m < innerCount; m++) {
      const offset = (t * innerCount + m) * sliceSize;
      const caption = nd >= 4 ? headCaption(multAxis, m, lead.slice(1)) : "";
      multiples.append(slice(offset, caption));
    }
    return multiples;
  };
  if (tabCount === 1) {
    box.append(h("p", { class: "slice-caption" }, S.batchTab(tabAxis, 0)), renderTab(0));
  } else {
    box.append(tabs(`${ctx.idPrefix}-${stage.id}`, tabAxis, tabCount, renderTab));
  }
  return box;
}

function headCaption(axis, m, dims) {
  if (dims.length === 1) return /head/.test(axis) ? `head ${m}` : S.headCaption(axis, m);
  return S.headCaption(axis, m);
}

/** A WAI-ARIA tab list over one axis; panels are built the first time they are shown. */
function tabs(idBase, axis, count, renderPanel) {
  const wrap = h("div", { class: "slices" });
  const list = h("div", { class: "tablist", role: "tablist", "aria-label": S.sliceLabel(axis) });
  const buttons = [];
  const panels = [];
  const select = (i, focus) => {
    buttons.forEach((b, j) => {
      b.setAttribute("aria-selected", String(i === j));
      b.tabIndex = i === j ? 0 : -1;
      panels[j].hidden = i !== j;
    });
    if (!panels[i].firstChild) panels[i].append(renderPanel(i));
    if (focus) buttons[i].focus();
  };
  for (let i = 0; i < count; i++) {
    const tabId = `${idBase}-tab-${i}`;
    const panelId = `${idBase}-panel-${i}`;
    const b = h("button", {
      type: "button", role: "tab", id: tabId, class: "tab", "aria-controls": panelId,
      on: { click: () => select(i, false) },
    }, S.batchTab(axis, i));
    b.addEventListener("keydown", (e) => {
      const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: count - 1 }[e.key];
      if (next === undefined) return;
      e.preventDefault();
      select((next + count) % count, true);
    });
    buttons.push(b);
    list.append(b);
    panels.push(h("div", { role: "tabpanel", id: panelId, class: "tabpanel", "aria-labelledby": tabId }));
  }
  wrap.append(list, ...panels);
  select(0, false);
  return wrap;
}

/** Axes whose index is a token position: labelled with the token's word. */
const TOKEN_AXES = new Set(["num_tokens", "query", "key"]);

function label(axis, i, words) {
  if (TOKEN_AXES.has(axis) && words && i < words.length) return words[i];
  return String(i);
}

function sliceView(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption) {
  const fig = h("figure", { class: "slice" });
  if (caption) fig.append(h("figcaption", {}, caption));
  const data = stage.data;
  const truncRows = rows > GRID_LIMIT;
  const truncCols = cols > GRID_LIMIT;
  const shownRows = truncRows ? GRID_SHOWN : rows;
  const shownCols = truncCols ? GRID_SHOWN : cols;
  const rowSums = ROW_SUM_STAGES.has(stage.id);

  const table = h("table", { class: "grid", dataset: { testid: "grid" } });
  table.append(h("caption", { class: "sr-only" }, `${stage.id} ${caption}`.trim()));
  const corner = rowAxis === colAxis && TOKEN_AXES.has(rowAxis) ? S.cornerAttention : rowAxis ? `${rowAxis} ╲ ${colAxis}` : colAxis;
  const headRow = h("tr", {}, h("th", { scope: "col", class: "corner" }, corner));
  for (let c = 0; c < shownCols; c++) headRow.append(h("th", { scope: "col" }, label(colAxis, c, ctx.words)));
  if (truncCols) headRow.append(h("th", { scope: "col", class: "ellipsis" }, "…"));
  if (rowSums) headRow.append(h("th", { scope: "col", class: "rowsum" }, S.rowSum));
  table.append(h("thead", {}, headRow));
  const body = h("tbody");
  for (let r = 0; r < shownRows; r++) {
    const tr = h("tr", {}, h("th", { scope: "row" }, label(rowAxis, r, ctx.words)));
    const base = offset + r * cols;
    for (let c = 0; c < shownCols; c++) tr.append(cell(data[base + c]));
    if (truncCols) tr.append(h("td", { class: "ellipsis" }, "…"));
    if (rowSums) {
      let sum = 0;
      for (let c = 0; c < cols; c++) sum += data[base + c];
      tr.append(h("td", { class: "rowsum", dataset: { testid: "rowsum" } }, num(sum)));
    }
    body.append(tr);
  }
  if (truncRows) {
    const tr = h("tr", { class: "ellipsis" }, h("th", { scope: "row" }, "…"));
    for (let c = 0; c < shownCols + (truncCols ? 1 : 0) + (rowSums ? 1 : 0); c++) tr.append(h("td", {}, "…"));
    body.append(tr);
  }
  table.append(body);
  const scroller = h("div", {
    class: "grid-scroll", tabindex: "0", role: "region",
    "aria-label": `${stage.title} ${caption}`.trim(),
  }, table);

  const row = h("div", { class: "slice-row" }, scroller);
  if (HEATMAP_STAGES.has(stage.id)) row.append(heatmap(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption));
  fig.append(row);
  if (truncRows || truncCols) {
    const s = summarize(data, offset, offset + rows * cols);
    fig.append(
      h("p", { class: "slice-note" },
        S.truncated(rows, cols, shownRows, shownCols), " ",
        S.summaryLabel(num(s.min), num(s.max), num(s.mean)) + (s.negInf ? S.summaryMasked(s.negInf) : "")),
    );
  }
  return fig;
}

function cell(v) {
  const td = h("td", {}, num(v));
  if (v === -Infinity) td.className = "masked";
  else if (v === 0) td.className = "zero";
  return td;
}

// ---- heatmaps ---------------------------------------------------------------------------------

// Light to dark blue, 5 stops; weights near 0 are pale, near 1 dark.
const RAMP = [
  [247, 250, 255],
  [198, 219, 239],
  [107, 174, 214],
  [33, 113, 181],
  [8, 48, 107],
];
const MASKED_RGB = [214, 214, 214];

function color(t) {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  return RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
}

function range(data, offset, n, stageId) {
  let min = Infinity;
  let max = -Infinity;
  for (let i = offset; i < offset + n; i++) {
    const v = data[i];
    if (!Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  // Weights share one scale from 0 to at least 1, so heads (and dropout's 1/(1-p)) compare by colour.
  if (stageId === "attn_weights" || stageId === "attn_weights_dropout" || stageId === "mask") {
    min = 0;
    max = Math.max(1, max);
  }
  if (!(max > min)) max = min + 1;
  return [min, max];
}

function heatmap(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption) {
  const data = stage.data;
  const [lo, hi] = range(data, offset, rows * cols, stage.id);
  const t = (v) => (v - lo) / (hi - lo);
  const name = `${stage.title} ${caption}`.trim();
  const box = h("div", { class: "heatmap", dataset: { testid: "heatmap" } });
  const readout = h("output", { class: "heatmap-readout" }, S.heatmapHover);
  const describe = (r, c) => {
    const v = data[offset + r * cols + c];
    return `${label(rowAxis, r, ctx.words)} → ${label(colAxis, c, ctx.words)}: ${num(v)}${v === -Infinity ? ` (${S.masked})` : ""}`;
  };

  if (rows * cols <= SVG_CELL_LIMIT) {
    const size = 24;
    const pic = svg("svg", {
      class: "heatmap-svg", viewBox: `0 0 ${cols * size} ${rows * size}`,
      width: String(Math.min(cols * size, 288)), role: "img", "aria-label": S.heatmapLabel(name),
    });
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const v = data[offset + r * cols + c];
        const rgb = Number.isFinite(v) ? color(t(v)) : MASKED_RGB;
        const rect = svg("rect", {
          x: String(c * size), y: String(r * size), width: String(size), height: String(size),
          fill: `rgb(${rgb.join(",")})`, class: v === -Infinity ? "masked" : "",
        }, svg("title", {}, describe(r, c)));
        rect.addEventListener("mouseenter", () => { readout.textContent = describe(r, c); });
        pic.append(rect);
      }
    }
    box.append(pic);
  } else {
    const canvas = h("canvas", { class: "heatmap-canvas", width: String(cols), height: String(rows), role: "img", "aria-label": S.heatmapLabel(name) });
    const g = canvas.getContext("2d");
    const img = g.createImageData(cols, rows);
    for (let i = 0; i < rows * cols; i++) {
      const v = data[offset + i];
      const rgb = Number.isFinite(v) ? color(t(v)) : MASKED_RGB;
      img.data[i * 4] = rgb[0];
      img.data[i * 4 + 1] = rgb[1];
      img.data[i * 4 + 2] = rgb[2];
      img.data[i * 4 + 3] = 255;
    }
    g.putImageData(img, 0, 0);
    canvas.addEventListener("mousemove", (e) => {
      const rect = canvas.getBoundingClientRect();
      const c = Math.min(cols - 1, Math.floor(((e.clientX - rect.left) / rect.width) * cols));
      const r = Math.min(rows - 1, Math.floor(((e.clientY - rect.top) / rect.height) * rows));
      const text = describe(r, c);
      readout.textContent = text;
      canvas.title = text;
    });
    box.append(canvas);
  }
  box.append(
    h("div", { class: "heatmap-legend" },
      h("span", { class: "legend-lo" }, num(lo, 2)),
      h("span", { class: "legend-bar", "aria-hidden": "true" }),
      h("span", { class: "legend-hi" }, num(hi, 2))),
    readout,
  );
  return box;
}

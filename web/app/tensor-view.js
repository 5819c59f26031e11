// Renders a forward trace as stage cards: title, formula, named shape, and the values as real tables
// (2-D slices, tabs per batch item and per head, small multiples for a few heads), heatmaps for the
// attention stages (hover or arrow keys read a value), row sums where they teach something, the
// scale factor with its d_k, the mask (−inf before softmax, exact 0 after), dropout's kept mask and
// 1/(1−p), where each head lands in the concatenation, summaries for large tensors, and downloads.
import { h, nextPaint, replace, svg } from "./dom.js";
import { S } from "./strings.js";
import { num, namedShape, shapeText, summarize } from "./format.js";
import { canvasBlob, download, heatmapCanvas, heatmapSvg, stageCsv, stageJson, stageNpy } from "./export.js";

/** A 2-D slice larger than this on either side is shown truncated. */
const GRID_LIMIT = 16;
/** How many leading rows/columns a truncated grid shows. */
const GRID_SHOWN = 12;
/** Above this many cells a heatmap is drawn on a canvas instead of SVG rectangles. */
const SVG_CELL_LIMIT = 48 * 48;
/** A canvas heatmap is at most this many pixels a side (larger slices are max-pooled). */
const CANVAS_MAX = 512;
/** Up to this many heads sit side by side; more get a tab each. */
const MULTIPLES_MAX = 4;
/** JSON and CSV are offered up to this many values (.npy always). */
const TEXT_EXPORT_MAX = 2_000_000;

const HEATMAP_STAGES = new Set(["attn_scores", "attn_scores_masked", "attn_weights", "attn_weights_dropout", "mask", "dropout_kept"]);
const ROW_SUM_STAGES = new Set(["attn_weights", "attn_weights_dropout"]);
/** Stages where an exact 0 means something (masked after softmax, dropped by dropout). */
const EXACT_ZERO_STAGES = new Set(["attn_weights", "attn_weights_dropout"]);

/**
 * Renders every stage into `cards` (and a link list into `nav`). Small traces render at once; large
 * ones a card per frame, calling onProgress(i, n) so the page can say how far it is.
 * A second trace in the same shadow root keeps its card ids apart with ctx.anchorPrefix and its landmark
 * names with ctx.labelledBy (ids that name the cards, default "lab-name") and ctx.labName (a suffix).
 */
export async function renderTrace(nav, cards, stages, ctx, onProgress) {
  const anchor = ctx.anchorPrefix ?? "";
  replace(nav, h("ol", {}, stages.map((s) => h("li", {}, h("a", { href: `#${anchor}stage-${s.id}`, on: { click: (e) => jump(e, cards, s.id) } }, s.id)))));
  replace(cards);
  const total = stages.reduce((a, s) => a + s.data.length, 0);
  const chunked = total > 200_000;
  // Large traces yield to the browser whenever a frame's worth of work (~12 ms) is done, so the page
  // keeps painting and the progress bar moves, without waiting a frame for every small card.
  let since = performance.now();
  for (let i = 0; i < stages.length; i++) {
    if (chunked && performance.now() - since > 12) {
      onProgress?.(i + 1, stages.length);
      await nextPaint();
      since = performance.now();
    }
    cards.append(stageCard(stages[i], ctx, stages));
  }
}

/** In-page links inside a shadow root: scroll the card into view and move focus to it. */
function jump(e, cards, id) {
  e.preventDefault();
  const card = cards.querySelector(`[data-stage="${id}"]`);
  card?.scrollIntoView({ block: "start" });
  card?.focus({ preventScroll: true });
}

function stageCard(stage, ctx, stages) {
  const headingId = `${ctx.idPrefix}-stage-${stage.id}-title`;
  const nd = stage.shape.length;
  const wide = HEATMAP_STAGES.has(stage.id) || (nd >= 4 && stage.shape[1] > 2) || stage.shape[nd - 1] > 8;
  const card = h("section", {
    class: `stage-card${stage.id === "output" ? " is-output" : ""}${wide ? " wide" : ""}`,
    id: `${ctx.anchorPrefix ?? ""}stage-${stage.id}`, tabindex: "-1", part: stage.id === "output" ? "stage-card output-card" : "stage-card",
    dataset: { stage: stage.id },
    "aria-labelledby": `${headingId} ${ctx.labelledBy ?? "lab-name"}`,
  });
  card.append(h("header", { class: "stage-head" },
    h("h3", { id: headingId }, h("span", { class: "stage-id" }, stage.id), " ", stage.title),
    h("p", { class: "stage-formula" }, h("code", {}, stage.formula)),
    h("p", { class: "stage-shape", dataset: { testid: "stage-shape" } }, `${S.shapeLabel} `, h("code", {}, namedShape(stage.shape, stage.axes)))));
  // The core's word when finite inputs turned non-finite: shown on the stage where it began.
  for (const w of ctx.warnings ?? []) {
    if (w.code === "non_finite_stage" && w.slots[0] === stage.id) card.append(h("p", { class: "stage-warning", role: "note", dataset: { testid: "stage-warning" } }, `${S.nonFiniteStage} ${w.message}. ${w.hint}`));
  }
  const why = ctx.why?.[stage.id] ?? S.stageWhy[stage.id];
  if (why) card.append(h("p", { class: "stage-why" }, why));
  if (stage.id === "output" && ctx.output) {
    card.append(h("p", { class: "output-summary", dataset: { testid: "output-summary" } },
      S.outputSummary(shapeText(stage.shape), ctx.output.width, ctx.output.rule)));
  }
  if (stage.id === "attn_weights") card.append(h("p", { class: "stage-note", dataset: { testid: "scale-note" } }, scaleNote(ctx)));
  if (stage.id === "heads_concat") card.append(concatMap(stage, ctx));
  card.append(tensorView(stage, ctx));
  notes(stage, ctx, stages).forEach((n) => card.append(n));
  card.append(exportRow(stage, card));
  return card;
}

function scaleNote(ctx) {
  const dk = ctx.headDim;
  const scale = Number((1 / Math.sqrt(dk)).toFixed(4));
  const source = ctx.heads === "fused" ? S.dkSources.mha(dk) : ctx.heads === "modules" ? S.dkSources.wrapper(dk) : S.dkSources.single(dk);
  return S.scaleNote(dk, scale, source);
}

/** Key/value head g serves query heads g*size .. (g+1)*size-1 (repeat_interleave order). */
function groupMap(kvHeads, queryHeads) {
  const size = Math.max(1, Math.floor(queryHeads / kvHeads));
  const list = h("ol", { class: "concat-bar", dataset: { testid: "group-map" } });
  for (let g = 0; g < kvHeads; g++) {
    list.append(h("li", { class: `head-${g % 8}`, dataset: { group: String(g) } }, S.groupMapItem(g, g * size, (g + 1) * size - 1)));
  }
  return h("div", { class: "concat" }, h("h4", {}, S.groupMapHeading(kvHeads, queryHeads, size)), list);
}

function notes(stage, ctx, stages) {
  const out = [];
  if (stage.id === "mask") out.push(h("p", { class: "stage-note" }, S.maskNote));
  // Fewer key/value heads than query heads (the stage's axes say so): which query heads share each one.
  if (stage.id === "keys" && stage.axes[1] === "num_kv_groups") out.push(groupMap(stage.shape[1], ctx.queryHeads ?? stage.shape[1]));
  const nd = stage.shape.length;
  const slice = stage.shape[nd - 1] * stage.shape[nd - 2];
  // The first slice is counted here; whole-tensor counts come with the stage (summarized by the core).
  const countInSlice = (value) => {
    let n = 0;
    for (let i = 0; i < slice; i++) if (stage.data[i] === value) n++;
    return n;
  };
  if (stage.id === "attn_scores_masked") {
    out.push(h("p", { class: "stage-note" }, S.maskedCount(countInSlice(-Infinity), slice, stageSummary(stage).negInf)));
  }
  if (stage.id === "attn_weights") {
    out.push(h("p", { class: "stage-note" }, S.rowSumsOne));
    if (stages.some((s) => s.id === "mask")) {
      out.push(h("p", { class: "stage-note", dataset: { testid: "exact-zeros" } }, S.exactZeros(countInSlice(0), slice, stageSummary(stage).zeros)));
    }
  }
  if (stage.id === "attn_weights_dropout") {
    const active = ctx.training && ctx.dropout > 0;
    const scale = Number((1 / (1 - ctx.dropout)).toFixed(4));
    out.push(h("p", { class: "stage-note" }, active ? S.rowSumsDropout(String(ctx.dropout), String(scale)) : S.rowSumsNoDropout(ctx.training ? S.dropoutOffZero : S.dropoutOffEval)));
    const before = stages.find((s) => s.id === "attn_weights");
    if (active && before && before.data.length === stage.data.length) out.push(keptMask(stage, before, ctx, scale));
  }
  return out;
}

/** Dropout's kept mask, read off the two stages: kept where the output is not 0 (1/(1−p)), else 0. */
function keptMask(after, before, ctx, scale) {
  const data = new Float32Array(after.data.length);
  let kept = 0;
  let total = 0;
  for (let i = 0; i < data.length; i++) {
    if (before.data[i] === 0) {
      data[i] = NaN; // masked: 0 whether kept or not
      continue;
    }
    total++;
    if (after.data[i] !== 0) {
      data[i] = scale;
      kept++;
    }
  }
  const stage = { id: "dropout_kept", title: "kept mask", formula: "", axes: after.axes, shape: after.shape, data };
  return h("div", { class: "kept", dataset: { testid: "kept-mask" } },
    h("h4", {}, S.keptHeading(String(scale))),
    h("p", { class: "muted" }, S.keptNote(kept, total, ctx.dropout)),
    tensorView(stage, { ...ctx, idPrefix: `${ctx.idPrefix}-kept` }));
}

/** heads_concat: which columns each head fills. */
function concatMap(stage, ctx) {
  const heads = ctx.config.num_heads ?? 1;
  const width = stage.shape[stage.shape.length - 1];
  const per = width / heads;
  const bar = h("ol", { class: "concat-bar", dataset: { testid: "concat-map" } });
  for (let i = 0; i < heads; i++) {
    const from = i * per;
    const to = from + per - 1;
    bar.append(h("li", { class: `head-${i % 8}`, dataset: { head: String(i) } }, per === 1 ? S.concatHeadOne(i, from) : S.concatHead(i, from, to)));
  }
  const note = ctx.heads === "fused" ? S.concatNoteMha(heads, per) : S.concatNoteWrapper(per);
  return h("div", { class: "concat" }, h("h4", {}, S.concatHeading), bar, h("p", { class: "muted" }, note));
}

function exportRow(stage, card) {
  const big = stage.data.length > TEXT_EXPORT_MAX;
  const make = { json: () => stageJson(stage), csv: () => stageCsv(stage), npy: () => stageNpy(stage) };
  return h("div", { class: "export-row", role: "group", "aria-label": S.exportStage(stage.id) },
    h("span", { class: "muted" }, `${S.exportLabel}: `),
    Object.entries(S.exportFormats).map(([fmt, label]) => h("button", {
      type: "button", class: "small", part: "button", disabled: big && fmt !== "npy",
      "aria-label": S.exportStageLabel(stage.id, label), dataset: { testid: `export-${fmt}`, format: fmt },
      on: { click: () => download(card, make[fmt](), `${stage.id}.${fmt}`) },
    }, label)));
}

/** The summary of the slice at `offset` (the core's, for traced stages), else computed here. */
function sliceSummary(stage, offset, n) {
  const fromCore = n > 0 ? stage.sliceSummaries?.[offset / n] : undefined;
  return fromCore ?? summarize(stage.data, offset, offset + n);
}

/** The whole-tensor summary: the core's (every traced stage has one), else computed here (stages the page makes). */
function stageSummary(stage) {
  if (stage.summary) return stage.summary;
  const s = summarize(stage.data);
  let zeros = 0;
  for (let i = 0; i < stage.data.length; i++) if (stage.data[i] === 0) zeros++;
  return { ...s, zeros };
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
  const slice = (offset, caption) => sliceView(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption);

  const big = sliceSize > GRID_LIMIT * GRID_LIMIT || rows > GRID_LIMIT || cols > GRID_LIMIT;
  if (big) {
    const s = stageSummary(stage);
    box.append(h("p", { class: "tensor-summary", dataset: { testid: "tensor-summary" } },
      S.wholeTensor + S.summaryLabel(num(s.min), num(s.max), num(s.mean)) + (s.negInf ? S.summaryMasked(s.negInf) : "")));
  }
  if (nd <= 2) {
    box.append(slice(0, ""));
    return box;
  }
  // Leading axes: the first becomes tabs (batch items); a head axis becomes small multiples (a few
  // heads) or a second row of tabs (many heads, or large slices).
  const tabAxis = axes[0];
  const tabCount = shape[0];
  const heads = nd >= 4 ? shape[1] : 1;
  const multAxis = nd >= 4 ? axes[1] : "";
  const headTabs = heads > MULTIPLES_MAX || (heads > 1 && big);
  const renderTab = (t) => {
    if (nd < 4) return slice(t * sliceSize, "");
    const at = (m) => (t * heads + m) * sliceSize;
    if (headTabs) return tabs(`${ctx.idPrefix}-${stage.id}-b${t}`, multAxis, heads, (m) => slice(at(m), headCaption(multAxis, m)), S.headTab);
    const multiples = h("div", { class: "multiples" });
    for (let m = 0; m < heads; m++) multiples.append(slice(at(m), headCaption(multAxis, m)));
    return multiples;
  };
  if (tabCount === 1) box.append(h("p", { class: "slice-caption" }, S.batchTab(tabAxis, 0)), renderTab(0));
  else box.append(tabs(`${ctx.idPrefix}-${stage.id}`, tabAxis, tabCount, renderTab, (i) => S.batchTab(tabAxis, i)));
  return box;
}

function headCaption(axis, m) {
  return /head/.test(axis) ? `head ${m}` : S.headCaption(axis, m);
}

/** A WAI-ARIA tab list over one axis; panels are built the first time they are shown. */
function tabs(idBase, axis, count, renderPanel, tabText) {
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
    const b = h("button", { type: "button", role: "tab", id: tabId, class: "tab", "aria-controls": panelId, on: { click: () => select(i, false) } }, tabText(i));
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
  wrap.append(list);
  for (const panel of panels) wrap.append(panel);
  select(0, false);
  return wrap;
}

/** Axes whose index is a token position: labelled with the token's word. */
const TOKEN_AXES = new Set(["num_tokens", "query", "key"]);

function label(axis, i, words) {
  if (TOKEN_AXES.has(axis) && words && i < words.length) return words[i];
  return String(i);
}

function cellText(stage, v) {
  if (stage.id === "mask") return v === 1 ? "1" : v === 0 ? "0" : num(v);
  if (stage.id === "dropout_kept") return Number.isNaN(v) ? "—" : String(Number(v.toFixed(4)));
  if (Number.isNaN(v) && stage.id === "dropout_kept") return "—";
  if (v === 0 && EXACT_ZERO_STAGES.has(stage.id)) return "0";
  return num(v);
}

function sliceView(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption) {
  const fig = h("figure", { class: "slice" });
  const headMatch = /^head (\d+)$/.exec(caption);
  if (caption) fig.append(h("figcaption", { class: headMatch ? `head-${Number(headMatch[1]) % 8}` : null }, caption));
  const data = stage.data;
  const truncRows = rows > GRID_LIMIT;
  const truncCols = cols > GRID_LIMIT;
  const shownRows = truncRows ? GRID_SHOWN : rows;
  const shownCols = truncCols ? GRID_SHOWN : cols;
  const rowSums = ROW_SUM_STAGES.has(stage.id);
  const concatHeads = stage.id === "heads_concat" ? ctx.config.num_heads ?? 1 : 0;

  const table = h("table", { class: "grid", dataset: { testid: "grid" } });
  table.append(h("caption", { class: "sr-only" }, `${stage.id} ${caption}`.trim()));
  const corner = rowAxis === colAxis && TOKEN_AXES.has(rowAxis) ? S.cornerAttention : rowAxis ? `${rowAxis} ╲ ${colAxis}` : colAxis;
  const headRow = h("tr", {}, h("th", { scope: "col", class: "corner" }, corner));
  for (let c = 0; c < shownCols; c++) {
    const th = h("th", { scope: "col" }, label(colAxis, c, ctx.words));
    if (concatHeads) th.className = `head-${Math.floor(c / (cols / concatHeads)) % 8}`;
    headRow.append(th);
  }
  if (truncCols) headRow.append(h("th", { scope: "col", class: "ellipsis" }, "…"));
  if (rowSums) headRow.append(h("th", { scope: "col", class: "rowsum" }, S.rowSum));
  table.append(h("thead", {}, headRow));
  const body = h("tbody");
  for (let r = 0; r < shownRows; r++) {
    const tr = h("tr", {}, h("th", { scope: "row" }, label(rowAxis, r, ctx.words)));
    const base = offset + r * cols;
    for (let c = 0; c < shownCols; c++) {
      const v = data[base + c];
      const td = h("td", {}, cellText(stage, v));
      if (v === -Infinity || Number.isNaN(v)) td.className = "masked";
      else if (v === 0) td.className = "zero";
      tr.append(td);
    }
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
  const scroller = h("div", { class: "grid-scroll", tabindex: "0", role: "region", "aria-label": `${stage.title} ${caption}${ctx.labName ?? ""}`.trim() }, table);
  const row = h("div", { class: "slice-row" }, scroller);
  if (HEATMAP_STAGES.has(stage.id)) row.append(heatmap(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption));
  fig.append(row);
  if (truncRows || truncCols) {
    const s = sliceSummary(stage, offset, rows * cols);
    fig.append(h("p", { class: "slice-note" },
      S.truncated(rows, cols, shownRows, shownCols), " ",
      S.summaryLabel(num(s.min), num(s.max), num(s.mean)) + (s.negInf ? S.summaryMasked(s.negInf) : "")));
  }
  return fig;
}

// ---- heatmaps -------------------------------------------------------------------------------------

// Light to dark blue, 5 stops; weights near 0 are pale, near 1 dark.
const RAMP = [[247, 250, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
const MASKED_RGB = [214, 214, 214];

function rampColor(t) {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  return RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
}

/** The ramp at 1024 levels, made once: a 1024 x 1024 heatmap looks up colours instead of making 10^6 arrays. */
const RAMP_LEVELS = 1023;
const RAMP_TABLE = Array.from({ length: RAMP_LEVELS + 1 }, (_, i) => rampColor(i / RAMP_LEVELS));

function color(t) {
  return RAMP_TABLE[Math.round(Math.min(1, Math.max(0, t)) * RAMP_LEVELS)];
}

/** The colour scale of a slice: its finite min and max (from its summary). */
function range(summary, stageId) {
  let min = Number.isNaN(summary.min) ? Infinity : summary.min;
  let max = Number.isNaN(summary.max) ? -Infinity : summary.max;
  // Weights share one scale from 0 to at least 1, so heads (and dropout's 1/(1-p)) compare by colour.
  if (stageId === "attn_weights" || stageId === "attn_weights_dropout" || stageId === "mask" || stageId === "dropout_kept") {
    min = 0;
    max = Math.max(1, max);
  }
  if (!(max > min)) max = min + 1;
  return [min, max];
}

function heatmap(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption) {
  const data = stage.data;
  const [lo, hi] = range(sliceSummary(stage, offset, rows * cols), stage.id);
  // Long rows spread their weight thin (about 1/num_tokens each): a log scale keeps them visible.
  const weights = EXACT_ZERO_STAGES.has(stage.id);
  const logScale = weights && cols > GRID_LIMIT;
  const LOG_LO = -4;
  const rgbOf = (v) => {
    if (!Number.isFinite(v) || (weights && v === 0)) return MASKED_RGB;
    if (logScale) return color((Math.log10(Math.max(v, 1e-12)) - LOG_LO) / (Math.log10(hi) - LOG_LO));
    return color((v - lo) / (hi - lo));
  };
  const name = `${stage.title} ${caption}`.trim();
  const box = h("div", { class: "heatmap", part: "heatmap", dataset: { testid: "heatmap" } });
  const readout = h("output", { class: "heatmap-readout" }, S.heatmapHover);
  const describe = (r, c) => {
    const v = data[offset + r * cols + c];
    return `${label(rowAxis, r, ctx.words)} → ${label(colAxis, c, ctx.words)}: ${cellText(stage, v)}${v === -Infinity ? ` (${S.masked})` : ""}`;
  };
  // Keyboard: the picture is focusable; arrow keys move a cursor cell and the readout says its value.
  let cursor = null;
  const frame = h("div", { class: "heatmap-frame", tabindex: "0", role: "group", "aria-label": S.heatmapKeys(S.heatmapLabel(name)) });
  const marker = h("div", { class: "heatmap-cursor", hidden: true });
  const showCursor = () => {
    const [r, c] = cursor;
    readout.textContent = describe(r, c);
    marker.hidden = false;
    marker.style.left = `${(100 * c) / cols}%`;
    marker.style.top = `${(100 * r) / rows}%`;
    marker.style.width = `${100 / cols}%`;
    marker.style.height = `${100 / rows}%`;
  };
  frame.addEventListener("keydown", (e) => {
    const step = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0], Home: [0, -cols], End: [0, cols] }[e.key];
    if (!step) return;
    e.preventDefault();
    const [r, c] = cursor ?? [0, 0];
    cursor = cursor ? [Math.min(rows - 1, Math.max(0, r + step[0])), Math.min(cols - 1, Math.max(0, c + step[1]))] : [0, 0];
    showCursor();
  });
  frame.addEventListener("blur", () => { marker.hidden = true; });

  if (rows * cols <= SVG_CELL_LIMIT) {
    const size = 24;
    const pic = svg("svg", {
      class: "heatmap-svg", viewBox: `0 0 ${cols * size} ${rows * size}`,
      width: String(Math.min(cols * size, 288)), role: "img", "aria-label": S.heatmapLabel(name),
    });
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const v = data[offset + r * cols + c];
        const rect = svg("rect", {
          x: String(c * size), y: String(r * size), width: String(size), height: String(size),
          fill: `rgb(${rgbOf(v).join(",")})`, class: v === -Infinity ? "masked" : "",
        }, svg("title", {}, describe(r, c)));
        rect.addEventListener("mouseenter", () => { readout.textContent = describe(r, c); });
        pic.append(rect);
      }
    }
    frame.append(pic, marker);
  } else {
    // Max-pool to at most CANVAS_MAX pixels a side so a 1024 x 1024 head draws in a few ms.
    const px = Math.min(CANVAS_MAX, Math.max(rows, cols));
    const pr = Math.min(rows, px);
    const pc = Math.min(cols, px);
    const canvas = h("canvas", { class: "heatmap-canvas", width: String(pc), height: String(pr), role: "img", "aria-label": S.heatmapLabel(name) });
    const g = canvas.getContext("2d");
    const img = g.createImageData(pc, pr);
    for (let y = 0; y < pr; y++) {
      const r0 = Math.floor((y * rows) / pr);
      const r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / pr));
      for (let x = 0; x < pc; x++) {
        const c0 = Math.floor((x * cols) / pc);
        const c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / pc));
        let best = -Infinity;
        for (let r = r0; r < r1; r++) {
          const base = offset + r * cols;
          for (let c = c0; c < c1; c++) {
            const v = data[base + c];
            if (v > best) best = v;
          }
        }
        const rgb = rgbOf(best);
        const i = (y * pc + x) * 4;
        img.data[i] = rgb[0];
        img.data[i + 1] = rgb[1];
        img.data[i + 2] = rgb[2];
        img.data[i + 3] = 255;
      }
    }
    g.putImageData(img, 0, 0);
    canvas.addEventListener("mousemove", (e) => {
      const rect = canvas.getBoundingClientRect();
      const c = Math.min(cols - 1, Math.floor(((e.clientX - rect.left) / rect.width) * cols));
      const r = Math.min(rows - 1, Math.floor(((e.clientY - rect.top) / rect.height) * rows));
      readout.textContent = describe(r, c);
    });
    frame.append(canvas, marker);
    if (pr < rows || pc < cols) box.append(h("p", { class: "muted small-note" }, S.heatmapScaled(rows, cols, px)));
  }
  const cellOf = (r, c) => {
    const v = data[offset + r * cols + c];
    return [v, rgbOf(v)];
  };
  const file = `${stage.id}${caption ? `-${caption.replace(/\s+/g, "")}` : ""}`;
  box.prepend(frame);
  box.append(
    h("div", { class: "heatmap-legend" },
      h("span", {}, logScale ? "1e-4" : num(lo, 2)), h("span", { class: "legend-bar", "aria-hidden": "true" }), h("span", {}, num(hi, 2)),
      logScale ? h("span", {}, S.logScale) : null, weights ? h("span", { class: "legend-masked" }, S.legendMasked) : null),
    readout,
    h("div", { class: "export-row" },
      h("button", {
        type: "button", class: "small", part: "button", "aria-label": S.exportHeatmapLabel(name, "PNG"), dataset: { testid: "export-png" },
        on: { click: async () => download(box, await canvasBlob(heatmapCanvas(rows, cols, cellOf)), `${file}.png`) },
      }, S.exportHeatmap.png),
      h("button", {
        type: "button", class: "small", part: "button", "aria-label": S.exportHeatmapLabel(name, "SVG"), dataset: { testid: "export-svg" },
        on: {
          click: () => {
            const png = rows * cols > 96 * 96 ? heatmapCanvas(rows, cols, cellOf).toDataURL("image/png") : "";
            download(box, heatmapSvg(rows, cols, cellOf, `${name} ${shapeText([rows, cols])}`, png), `${file}.svg`);
          },
        },
      }, S.exportHeatmap.svg)));
  return box;
}


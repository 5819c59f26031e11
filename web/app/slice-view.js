// One 2-D slice of a traced stage: a table of its values (token words on token axes, row sums for the
// weights, truncated past 16 a side with a summary) and, for the attention stages, a heatmap whose
// colour scale is the stage's own, shared by every head and batch item (hover or arrow keys read a value).
import { h, svg } from "./dom.js";
import { S } from "./strings.js";
import { num, shapeText, summarize } from "./format.js";
import { draw, heatmapQuery, sourceOf, when, windowQuery } from "./stage-source.js";

/** The downloads (export.js), fetched at the first export button a reader presses, not with the first view. */
export const exporter = () => import("./export.js");

/** A 2-D slice larger than this on either side is shown truncated. */
export const GRID_LIMIT = 16;
/** How many leading rows/columns a truncated grid shows. */
const GRID_SHOWN = 12;
/** Above this many cells a heatmap is drawn on a canvas instead of SVG rectangles. */
const SVG_CELL_LIMIT = 48 * 48;
/** A canvas heatmap is at most this many pixels a side (larger slices are max-pooled). */
const CANVAS_MAX = 512;
/** A canvas heatmap's width on screen in CSS pixels (style.css .heatmap-canvas; narrower only on a narrow screen). */
const CANVAS_SHOWN = 240;

/**
 * Whether a stage is drawn as a heatmap beside its table: its display kind (stage.display, from the
 * core's stage table; StageDisplay in the .d.ts) is one of the heatmaps'. The page's own kept-mask
 * stage says "mask".
 */
export function hasHeatmap(stage) {
  return stage.display === "scores" || stage.display === "weights" || stage.display === "mask";
}
/** Weights (display "weights"): each row's sum is shown, and an exact 0 means something (masked after softmax, dropped by dropout). */
const isWeights = (stage) => stage.display === "weights";

/**
 * The value a stage's masked cells hold: on the masked scores, the class's mask fill (ctx.maskFill, the
 * core's ClassFacts.maskFill: −inf, or torch.finfo(float32).min), elsewhere −inf. Such cells are grey
 * and stay out of the colour scale (the core's summaries leave them out of min and max).
 */
export function fillOf(stage, ctx) {
  return stage.id === "attn_scores_masked" ? ctx.maskFill ?? -Infinity : -Infinity;
}
/** Whether value v of a stage whose mask fill is `maskFill` (fillOf) is masked: the fill, or −inf. */
const isMasked = (v, maskFill) => v === -Infinity || v === maskFill;

/** The summary of the slice at `offset` (the core's, for traced stages), else computed here (stages the page makes). */
export function sliceSummary(stage, offset, n) {
  const fromCore = n > 0 ? stage.sliceSummaries?.[offset / n] : undefined;
  return fromCore ?? summarize(stage.data, offset, offset + n);
}

/** Fills `box` with make(v) once v (a value, or a Promise from the worker) is there; a failed read leaves it empty. */
function fill(box, v, make) {
  const out = draw(v, (x) => {
    box.append(...[make(x)].flat().filter(Boolean));
    return box;
  });
  if (out instanceof Promise) {
    box.setAttribute("aria-busy", "true");
    out.then(() => box.removeAttribute("aria-busy"));
  }
  return box;
}

/** The whole-tensor summary: the core's (every traced stage has one), else computed here (stages the page makes). */
export function stageSummary(stage) {
  if (stage.summary) return stage.summary;
  const s = summarize(stage.data);
  let zeros = 0;
  for (let i = 0; i < stage.data.length; i++) if (stage.data[i] === 0) zeros++;
  return { ...s, zeros };
}

/** Axes whose index is a token position: labelled with the token's word. */
const TOKEN_AXES = new Set(["num_tokens", "query", "key"]);

function label(axis, i, words) {
  if (TOKEN_AXES.has(axis) && words && i < words.length) return words[i];
  return String(i);
}

function cellText(stage, v) {
  if (stage.id === "dropout_kept") return Number.isNaN(v) ? "—" : String(Number(v.toFixed(4)));
  if (stage.display === "mask") return v === 1 ? "1" : v === 0 ? "0" : num(v);
  if (v === 0 && isWeights(stage)) return "0";
  return num(v);
}

/**
 * The queries sliceView makes of a lazy stage's slice at `offset` (its table's window; its heatmap's
 * cells or pooled pixels at screen density `density`): what a run in the worker answers with the run.
 */
export function sliceQueries(stage, offset, rows, cols, density) {
  const out = [windowQuery(stage, offset, rows > GRID_LIMIT ? GRID_SHOWN : rows, cols > GRID_LIMIT ? GRID_SHOWN : cols)];
  if (hasHeatmap(stage)) {
    if (svgHeatmap(rows, cols)) out.push(windowQuery(stage, offset, rows, cols));
    else {
      const px = heatmapPixels(rows, cols, density);
      out.push(heatmapQuery(stage, offset, Math.min(rows, px), Math.min(cols, px)));
    }
  }
  return out;
}

/** The screen's density as the heatmaps use it (1 to 2). */
export function screenDensity() {
  return Math.max(1, Math.min(2, globalThis.devicePixelRatio || 1));
}

export function sliceView(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption) {
  const fig = h("figure", { class: "slice" });
  const headMatch = /^head (\d+)$/.exec(caption);
  if (caption) fig.append(h("figcaption", { class: headMatch ? `head-${Number(headMatch[1]) % 8}` : null }, caption));
  const truncRows = rows > GRID_LIMIT;
  const truncCols = cols > GRID_LIMIT;
  const shownRows = truncRows ? GRID_SHOWN : rows;
  const shownCols = truncCols ? GRID_SHOWN : cols;
  const rowSums = isWeights(stage);
  const maskFill = fillOf(stage, ctx);
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
  // The shown window and its rows' sums over every column: read here for an eager stage, computed by
  // the core for a lazy one (at once on this thread, or with the run from the worker).
  const body = fill(h("tbody"), sourceOf(stage).table(offset, rows, cols, shownRows, shownCols), ({ values, rowSums: sums }) => {
    const trs = [];
    for (let r = 0; r < shownRows; r++) {
      const tr = h("tr", {}, h("th", { scope: "row" }, label(rowAxis, r, ctx.words)));
      for (let c = 0; c < shownCols; c++) {
        const v = values[r * shownCols + c];
        const td = h("td", {}, cellText(stage, v));
        if (isMasked(v, maskFill) || Number.isNaN(v)) td.className = "masked";
        else if (v === 0) td.className = "zero";
        tr.append(td);
      }
      if (truncCols) tr.append(h("td", { class: "ellipsis" }, "…"));
      if (rowSums) tr.append(h("td", { class: "rowsum", dataset: { testid: "rowsum" } }, num(sums[r])));
      trs.push(tr);
    }
    if (truncRows) {
      const tr = h("tr", { class: "ellipsis" }, h("th", { scope: "row" }, "…"));
      for (let c = 0; c < shownCols + (truncCols ? 1 : 0) + (rowSums ? 1 : 0); c++) tr.append(h("td", {}, "…"));
      trs.push(tr);
    }
    return trs;
  });
  table.append(body);
  const scroller = h("div", { class: "grid-scroll", tabindex: "0", role: "region", "aria-label": `${stage.title} ${caption}${ctx.labName ?? ""}`.trim() }, table);
  const row = h("div", { class: "slice-row" }, scroller);
  if (hasHeatmap(stage)) row.append(heatmap(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption));
  fig.append(row);
  if (truncRows || truncCols) {
    const s = sliceSummary(stage, offset, rows * cols);
    fig.append(h("p", { class: "slice-note" },
      S.truncated(rows, cols, shownRows, shownCols), " ",
      S.summaryLabel(num(s.min), num(s.max), num(s.mean)) + (s.masked ? S.summaryMasked(s.masked, maskFill) : "")));
  }
  return fig;
}

// ---- heatmaps -------------------------------------------------------------------------------------

// Light to dark blue, 5 stops; weights near 0 are pale, near 1 dark.
const RAMP = [[247, 250, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
export const MASKED_RGB = [214, 214, 214];

function rampColor(t) {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  return RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
}

/** The ramp at 1024 levels, made once: a 1024 x 1024 heatmap looks up colours instead of making 10^6 arrays. */
const RAMP_LEVELS = 1023;
const RAMP_TABLE = Array.from({ length: RAMP_LEVELS + 1 }, (_, i) => rampColor(i / RAMP_LEVELS));

/** The ramp's level of t in [0, 1]: its index in RAMP_TABLE. */
function rampLevel(t) {
  return Math.round(Math.min(1, Math.max(0, t)) * RAMP_LEVELS);
}

/** The page's colour ramp at t in [0, 1], light to dark blue, as [r, g, b] (heatmaps, the GPT-2 grid). */
export function color(t) {
  return RAMP_TABLE[rampLevel(t)];
}

/** [r, g, b] as one opaque RGBA pixel of an ImageData seen as 32-bit words (in this platform's byte order). */
function packed(rgb) {
  return new Uint32Array(new Uint8Array([rgb[0], rgb[1], rgb[2], 255]).buffer)[0];
}

/** The ramp and the masked grey as packed pixels: a canvas heatmap writes one word per pixel. */
const RAMP_PACKED = Uint32Array.from(RAMP_TABLE, packed);
const MASKED_PACKED = packed(MASKED_RGB);

/** The cells a side of a canvas heatmap of a (rows, cols) slice has, at screen density `density` (1 to 2). */
export function heatmapPixels(rows, cols, density) {
  return Math.min(CANVAS_MAX, Math.round(CANVAS_SHOWN * density), Math.max(rows, cols));
}

/** Whether a (rows, cols) slice's heatmap is SVG rectangles (else a canvas). */
export function svgHeatmap(rows, cols) {
  return rows * cols <= SVG_CELL_LIMIT;
}

/**
 * The colour scale of a stage's heatmaps: the stage's finite min and max, masked values left out (from
 * its summary: the core's leave out the mask's fill, torch.finfo(float32).min too), so every
 * head and batch item of the stage is coloured on one scale and compares by colour. Weights (and the
 * mask, and dropout's kept mask) run from 0 to at least 1.
 */
export function heatmapRange(stage) {
  const summary = stageSummary(stage);
  let min = Number.isNaN(summary.min) ? Infinity : summary.min;
  let max = Number.isNaN(summary.max) ? -Infinity : summary.max;
  if (stage.display === "weights" || stage.display === "mask") {
    min = 0;
    max = Math.max(1, max);
  }
  if (!(max > min)) max = min + 1;
  return [min, max];
}

/** Heatmaps of weights on a log scale start at 1e-4. */
const LOG_LO = -4;

/**
 * The ramp level (0..RAMP_LEVELS) of value v on a heatmap's scale {lo, hi, logScale, weights, maskFill}, or
 * -1 for a masked cell (not finite, the stage's mask fill, or an exact 0 of a weights stage).
 */
function heatLevel(v, { lo, hi, logScale, weights, maskFill }) {
  if (!Number.isFinite(v) || v === maskFill || (weights && v === 0)) return -1;
  return rampLevel(logScale ? (Math.log10(Math.max(v, 1e-12)) - LOG_LO) / (Math.log10(hi) - LOG_LO) : (v - lo) / (hi - lo));
}

/** Writes heatLevel's colour of each value as one packed pixel (rgbOf's colours, a word per pixel). */
function paintPixels(pixels, values, scale) {
  for (let i = 0; i < values.length; i++) {
    const level = heatLevel(values[i], scale);
    pixels[i] = level < 0 ? MASKED_PACKED : RAMP_PACKED[level];
  }
}

function heatmap(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption) {
  const source = sourceOf(stage);
  // The whole slice, read when a value is asked for (hover, keys, an export): a lazy stage's from the
  // core (once; from the worker, a Promise), an eager stage's from its data.
  let slice = null;
  const cells = () => (slice ??= when(source.cells(offset, rows, cols), (v) => (slice = v)));
  const [lo, hi] = heatmapRange(stage);
  // Long rows spread their weight thin (about 1/num_tokens each): a log scale keeps them visible.
  const weights = isWeights(stage);
  const logScale = weights && cols > GRID_LIMIT;
  const maskFill = fillOf(stage, ctx);
  const scale = { lo, hi, logScale, weights, maskFill };
  const rgbOf = (v) => {
    const level = heatLevel(v, scale);
    return level < 0 ? MASKED_RGB : RAMP_TABLE[level];
  };
  const name = `${stage.title} ${caption}`.trim();
  const box = h("div", { class: "heatmap", part: "heatmap", dataset: { testid: "heatmap" } });
  const readout = h("output", { class: "heatmap-readout" }, S.heatmapHover);
  const describeValue = (r, c, v) => `${label(rowAxis, r, ctx.words)} → ${label(colAxis, c, ctx.words)}: ${cellText(stage, v)}${isMasked(v, maskFill) ? ` (${S.masked})` : ""}`;
  /** Says cell (r, c) in the readout (when the slice is there: at once, but for a lazy stage in the worker). */
  const readCell = (r, c) => draw(cells(), (v) => { readout.textContent = describeValue(r, c, v[r * cols + c]); });
  // Keyboard: the picture is focusable; arrow keys move a cursor cell and the readout says its value.
  let cursor = null;
  const frame = h("div", { class: "heatmap-frame", tabindex: "0", role: "group", "aria-label": S.heatmapKeys(S.heatmapLabel(name)) });
  const marker = h("div", { class: "heatmap-cursor", hidden: true });
  const showCursor = () => {
    const [r, c] = cursor;
    readCell(r, c);
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

  if (svgHeatmap(rows, cols)) {
    const size = 24;
    const pic = svg("svg", {
      class: "heatmap-svg", viewBox: `0 0 ${cols * size} ${rows * size}`,
      width: String(Math.min(cols * size, 288)), role: "img", "aria-label": S.heatmapLabel(name),
    });
    fill(pic, cells(), (data) => {
      const rects = [];
      for (let r = 0; r < rows; r++) {
        for (let c = 0; c < cols; c++) {
          const v = data[r * cols + c];
          const rect = svg("rect", {
            x: String(c * size), y: String(r * size), width: String(size), height: String(size),
            fill: `rgb(${rgbOf(v).join(",")})`, class: isMasked(v, maskFill) ? "masked" : "",
          }, svg("title", {}, describeValue(r, c, v)));
          rect.addEventListener("mouseenter", () => { readout.textContent = describeValue(r, c, v); });
          rects.push(rect);
        }
      }
      return rects;
    });
    frame.append(pic, marker);
  } else {
    // Max-pooled to the pixels it is shown on (CANVAS_SHOWN CSS pixels at the screen's density, at most
    // CANVAS_MAX), by the core for a lazy stage (stage-source.js, the same rule here for an eager one),
    // so a 1024 x 1024 head draws in a few ms and the note below says the size it has.
    const px = heatmapPixels(rows, cols, screenDensity());
    const pr = Math.min(rows, px);
    const pc = Math.min(cols, px);
    const canvas = h("canvas", { class: "heatmap-canvas", width: String(pc), height: String(pr), role: "img", "aria-label": S.heatmapLabel(name) });
    draw(source.pool(offset, rows, cols, pr, pc), (pooled) => {
      const g = canvas.getContext("2d");
      const img = g.createImageData(pc, pr);
      paintPixels(new Uint32Array(img.data.buffer, img.data.byteOffset, pc * pr), pooled, scale);
      g.putImageData(img, 0, 0);
    });
    canvas.addEventListener("mousemove", (e) => {
      const rect = canvas.getBoundingClientRect();
      const c = Math.min(cols - 1, Math.floor(((e.clientX - rect.left) / rect.width) * cols));
      const r = Math.min(rows - 1, Math.floor(((e.clientY - rect.top) / rect.height) * rows));
      readCell(r, c);
    });
    frame.append(canvas, marker);
    if (pr < rows || pc < cols) box.append(h("p", { class: "muted small-note", dataset: { testid: "heatmap-scaled" } }, S.heatmapScaled(rows, cols, CANVAS_SHOWN, px)));
  }
  // Exports draw every cell of the slice (read first: at once, or from the worker).
  const withCells = (f) => draw(cells(), (data) => f((r, c) => {
    const v = data[r * cols + c];
    return [v, rgbOf(v)];
  }));
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
        on: {
          click: () => withCells(async (cellOf) => {
            const { canvasBlob, download, heatmapCanvas } = await exporter();
            download(box, await canvasBlob(heatmapCanvas(rows, cols, cellOf)), `${file}.png`);
          }),
        },
      }, S.exportHeatmap.png),
      h("button", {
        type: "button", class: "small", part: "button", "aria-label": S.exportHeatmapLabel(name, "SVG"), dataset: { testid: "export-svg" },
        on: {
          click: () => withCells(async (cellOf) => {
            const { download, heatmapCanvas, heatmapSvg } = await exporter();
            const png = rows * cols > 96 * 96 ? heatmapCanvas(rows, cols, cellOf).toDataURL("image/png") : "";
            download(box, heatmapSvg(rows, cols, cellOf, `${name} ${shapeText([rows, cols])}`, png), `${file}.svg`);
          }),
        },
      }, S.exportHeatmap.svg)));
  return box;
}


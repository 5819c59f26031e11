// Renders a forward trace as stage cards: title, formula, named shape, and the values as real tables
// (2-D slices, tabs per batch item and per head, small multiples for a few heads), heatmaps for the
// attention stages (hover or arrow keys read a value), row sums where they teach something, the
// scale factor with its d_k, the mask (its fill before softmax, −inf or the class's torch.finfo(float32).min
// (ctx.maskFill); exact 0 after), dropout's kept mask and
// 1/(1−p), where each head lands in the concatenation, summaries for large tensors, and downloads.
import { h, nextPaint, replace } from "./dom.js";
import { S } from "./strings.js";
import { num, namedShape, shapeText } from "./format.js";
import { exporter, fillOf, GRID_LIMIT, hasHeatmap, heatmapRange, screenDensity, sliceQueries, sliceView, stageSummary } from "./slice-view.js";
import { draw, numel, sourceOf, when, withData } from "./stage-source.js";

/** Up to this many heads sit side by side; more get a tab each. */
const MULTIPLES_MAX = 4;
/** JSON and CSV are offered up to this many values (.npy always). */
const TEXT_EXPORT_MAX = 2_000_000;

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
  const total = stages.reduce((a, s) => a + numel(s), 0);
  const chunked = total > 200_000;
  cards.classList.toggle("lazy-layout", chunked);  // style.css: its cards off screen are not laid out until in view
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

/**
 * The queries of the first draw of `stages` (lazy stages' facts): for each stage, the slices its card
 * shows before any tab is pressed (the first batch item; its heads side by side, or the first head's
 * tab), as tensorView lays them out, at screen density `density` (the page's, screenDensity()). The
 * run worker lists and answers them with the run (run-worker.js), from the density the page sends.
 */
export function firstDraw(stages, density = screenDensity()) {
  const out = [];
  for (const stage of stages) {
    const { shape } = stage;
    const nd = shape.length;
    if (nd === 0) continue;
    const rows = nd === 1 ? 1 : shape[nd - 2];
    const cols = shape[nd - 1];
    const { heads, headTabs } = layout(shape, rows, cols);
    const offsets = nd < 4 || headTabs ? [0] : Array.from({ length: heads }, (_, m) => m * rows * cols);
    for (const offset of offsets) out.push(...sliceQueries(stage, offset, rows, cols, density));
  }
  return out;
}

/** How tensorView lays out a stage: big (a truncated table and a summary), its heads, whether they get tabs. */
function layout(shape, rows, cols) {
  const nd = shape.length;
  const big = rows * cols > GRID_LIMIT * GRID_LIMIT || rows > GRID_LIMIT || cols > GRID_LIMIT;
  const heads = nd >= 4 ? shape[1] : 1;
  return { big, heads, headTabs: heads > MULTIPLES_MAX || (heads > 1 && big) };
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
  const wide = hasHeatmap(stage) || (nd >= 4 && stage.shape[1] > 2) || stage.shape[nd - 1] > 8;
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
  // a class whose mask fills torch.finfo(float32).min (its ClassFacts.maskFill) says so on its masked scores
  const why = ctx.why?.[stage.id] ?? (Number.isFinite(fillOf(stage, ctx)) ? S.stageWhyFinfo : S.stageWhy[stage.id]);
  if (why) card.append(h("p", { class: "stage-why" }, why));
  if (stage.id === "output" && ctx.output) {
    card.append(h("p", { class: "output-summary", dataset: { testid: "output-summary" } },
      S.outputSummary(shapeText(stage.shape), ctx.output.width, ctx.output.rule)));
  }
  if (stage.id === "attn_weights") card.append(h("p", { class: "stage-note", dataset: { testid: "scale-note" } }, scaleNote(ctx)));
  if (stage.id === "heads_concat") card.append(concatMap(stage, ctx));
  if (hasHeatmap(stage) && stage.shape.length > 2 && numel(stage) > stage.shape.at(-1) * stage.shape.at(-2)) {
    // Several heatmaps in one card: one colour scale for all of them, and the card says so.
    const [lo, hi] = heatmapRange(stage);
    card.append(h("p", { class: "stage-note", dataset: { testid: "heatmap-scale-note" } }, S.heatmapSharedScale(num(lo, 2), num(hi, 2))));
  }
  card.append(tensorView(stage, ctx));
  notes(stage, ctx, stages).forEach((n) => card.append(n));
  card.append(exportRow(stage, card));
  return card;
}

function scaleNote(ctx) {
  const dk = ctx.headDim;
  const scale = Number((1 / Math.sqrt(dk)).toFixed(4));
  const source = S.dkSources[ctx.heads](dk);
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
  // A mask that hides a query's own key (the diagonal) is inverted: it says so, from the values.
  if (stage.id === "mask") out.push(h("p", { class: "stage-note", dataset: { testid: "mask-note" } }, sourceOf(stage).first === 1 ? S.maskNoteInverted
    : ctx.config?.sliding_window_size > 0 ? S.maskNoteWindow(ctx.config.sliding_window_size, ctx.maskFill) : S.maskNote(ctx.maskFill)));
  // Fewer key/value heads than query heads (the stage's axes say so): which query heads share each one.
  if (stage.id === "keys" && stage.axes[1] === "num_kv_groups") out.push(groupMap(stage.shape[1], ctx.queryHeads ?? stage.shape[1]));
  // The latent (b, num_tokens, latent_dim): keys and values re-projected from it are a low-rank MultiHeadAttention.
  if (stage.id === "c_kv") out.push(h("p", { class: "stage-note", dataset: { testid: "latent-note" } }, S.latentNote(stage.shape.at(-1), ctx.config?.d_out ?? "d_out")));
  const nd = stage.shape.length;
  const slice = stage.shape[nd - 1] * stage.shape[nd - 2];
  // The first slice's counts and the whole tensor's, both from the core's summaries of the stage.
  const first = stage.sliceSummaries?.[0];
  if (stage.id === "attn_scores_masked") {
    // the values that hold the mask's fill (−inf, or torch.finfo(float32).min): the core counts them as masked
    out.push(h("p", { class: "stage-note", dataset: { testid: "masked-count" } }, S.maskedCount(first.masked, slice, stageSummary(stage).masked, fillOf(stage, ctx))));
  }
  if (stage.id === "attn_weights") {
    // rows of the first slice that begin with NaN: a query whose every key is masked (softmax of all −inf)
    const nanRows = first.nanRows;
    out.push(h("p", { class: nanRows ? "stage-note warn" : "stage-note", dataset: { testid: "row-sums" } }, nanRows ? S.rowSumsNaN(nanRows, stage.shape[nd - 2]) : S.rowSumsOne));
    if (stages.some((s) => s.id === "mask")) {
      out.push(h("p", { class: "stage-note", dataset: { testid: "exact-zeros" } }, S.exactZeros(first.zeros, slice, stageSummary(stage).zeros, ctx.maskFill)));
    }
  }
  if (stage.id === "attn_weights_dropout") {
    const active = ctx.training && ctx.dropout > 0;
    const scale = Number((1 / (1 - ctx.dropout)).toFixed(4));
    out.push(h("p", { class: "stage-note" }, active ? S.rowSumsDropout(String(ctx.dropout), String(scale)) : S.rowSumsNoDropout(ctx.training ? S.dropoutOffZero : S.dropoutOffEval)));
    const before = stages.find((s) => s.id === "attn_weights");
    if (active && before && numel(before) === numel(stage)) {
      // both stages' values (a lazy trace's copied out, from the worker when it lives there)
      const box = h("div", { class: "kept", dataset: { testid: "kept-mask" } });
      const both = when(sourceOf(stage).data(), (after) => when(sourceOf(before).data(), (b) => [after, b]));
      draw(both, ([after, b]) => keptMask(box, { ...stage, data: after }, { ...before, data: b }, ctx, scale));
      out.push(box);
    }
  }
  return out;
}

/** Dropout's kept mask into `box`, read off the two stages: kept where the output is not 0 (1/(1−p)), else 0. */
function keptMask(box, after, before, ctx, scale) {
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
  const stage = { id: "dropout_kept", display: "mask", title: "kept mask", formula: "", axes: after.axes, shape: after.shape, data };
  box.append(
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
  const note = S.concatNote[ctx.heads](heads, per);
  return h("div", { class: "concat" }, h("h4", {}, S.concatHeading), bar, h("p", { class: "muted" }, note));
}

function exportRow(stage, card) {
  const big = numel(stage) > TEXT_EXPORT_MAX;
  const make = { json: "stageJson", csv: "stageCsv", npy: "stageNpy" };
  return h("div", { class: "export-row", role: "group", "aria-label": S.exportStage(stage.id) },
    h("span", { class: "muted" }, `${S.exportLabel}: `),
    Object.entries(S.exportFormats).map(([fmt, label]) => h("button", {
      type: "button", class: "small", part: "button", disabled: big && fmt !== "npy",
      "aria-label": S.exportStageLabel(stage.id, label), dataset: { testid: `export-${fmt}`, format: fmt },
      on: {
        click: () => draw(withData(stage), async (full) => {
          const files = await exporter();
          files.download(card, files[make[fmt]](full), `${stage.id}.${fmt}`);
        }),
      },
    }, label)));
}

function tensorView(stage, ctx) {
  const { shape, axes } = stage;
  const nd = shape.length;
  const box = h("div", { class: "tensor" });
  if (nd === 0) {
    box.append(h("p", {}, num(sourceOf(stage).first)));
    return box;
  }
  const rows = nd === 1 ? 1 : shape[nd - 2];
  const cols = shape[nd - 1];
  const rowAxis = nd === 1 ? "" : axes[nd - 2];
  const colAxis = axes[nd - 1];
  const sliceSize = rows * cols;
  const slice = (offset, caption) => sliceView(stage, offset, rows, cols, rowAxis, colAxis, ctx, caption);

  const { big, heads, headTabs } = layout(shape, rows, cols);
  if (big) {
    const s = stageSummary(stage);
    box.append(h("p", { class: "tensor-summary", dataset: { testid: "tensor-summary" } },
      S.wholeTensor + S.summaryLabel(num(s.min), num(s.max), num(s.mean)) + (s.masked ? S.summaryMasked(s.masked, fillOf(stage, ctx)) : "")));
  }
  if (nd <= 2) {
    box.append(slice(0, ""));
    return box;
  }
  // Leading axes: the first becomes tabs (batch items); a head axis becomes small multiples (a few
  // heads) or a second row of tabs (many heads, or large slices).
  const tabAxis = axes[0];
  const tabCount = shape[0];
  const multAxis = nd >= 4 ? axes[1] : "";
  const renderTab = (t) => {
    if (nd < 4) return slice(t * sliceSize, "");
    const at = (m) => (t * heads + m) * sliceSize;
    if (headTabs) return tabs(`${ctx.idPrefix}-${stage.id}-b${t}`, multAxis, heads, (m) => slice(at(m), headCaption(multAxis, m)), (m) => (multAxis === "num_kv_groups" ? headCaption(multAxis, m) : S.headTab(m)));
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

// The whole model on the reader's tokens, inside the checkpoint panel: lab.loadGPT2 + model.run in the
// page's worker (checkpoint-load.js), a progress bar per block, then every layer x head attention
// pattern as a small heatmap (the core's thumbnails: at most 64 x 64 averaged cells, whatever the
// number of tokens), a head view of the one picked (a line from each query to each key it attends
// to, thicker for more weight, from the core's exact weights of the first tokens), the five most
// likely next tokens, and a button that traces the picked layer in the panel below with its real
// input (what the blocks before it produce). Picking a cell redraws the head view and two buttons'
// pressed states, nothing else.
import { h, replace, svg } from "./dom.js";
import { S } from "./strings-gpt2.js";
import { runGPT2 } from "./checkpoint-load.js";
import { errorBox } from "./diagnostic-view.js";
import { color, MASKED_RGB } from "./slice-view.js";
import { pixelCanvas } from "./export.js";
import { setupGenerate } from "./gpt2-generate.js";

/**
 * @param app      the widget's app (lab, runner)
 * @param actions  {traceLayer(layer, tokens): trace that layer in the checkpoint panel with its real input
 *                  on the tokens the whole model ran on ({ids, words}),
 *                  runAgain(): run the model on the panel's current tokens (what the Run button does),
 *                  input(): what the model runs on ({file, tokens, numHeads, decode} or null), for Generate}
 */
export function setupGpt2Section(app, { traceLayer, runAgain, input }) {
  const state = { seq: 0, result: null, words: [], tokens: null, pick: { layer: 0, head: 0 }, controller: null, headFrame: null };
  const runButton = h("button", { type: "button", class: "primary", part: "button", dataset: { testid: "gpt2-run" } }, S.gpt2Run);
  const cancelButton = h("button", { type: "button", class: "small", part: "button", hidden: true, dataset: { testid: "gpt2-cancel" } }, S.cancel);
  const bar = h("progress", { max: "1", value: "0", "aria-labelledby": "gpt2-progress-text" });
  const barText = h("span", { id: "gpt2-progress-text", role: "status" });
  const progress = h("div", { class: "progress", hidden: true, dataset: { testid: "gpt2-progress" } }, bar, barText, cancelButton);
  const error = h("div", { class: "diagnostics", "aria-live": "assertive", dataset: { testid: "gpt2-error" } });
  const stale = h("p", { class: "stale-note", hidden: true, dataset: { testid: "gpt2-stale" } });
  const next = h("div", { class: "gpt2-next", dataset: { testid: "gpt2-next" } });
  const grid = h("div", { class: "gpt2-grid", dataset: { testid: "gpt2-grid" } });
  const headView = h("div", { class: "gpt2-head-view", dataset: { testid: "gpt2-head-view" } });
  const node = h("section", { class: "gpt2", "aria-labelledby": "gpt2-title", dataset: { testid: "gpt2-section" } },
    h("h3", { id: "gpt2-title" }, S.gpt2Title),
    h("p", { class: "muted" }, S.gpt2Intro),
    h("div", { class: "run-row" }, runButton), progress, error, stale, next,
    h("div", { class: "gpt2-views" }, grid, headView));
  const generate = setupGenerate(app, input);
  node.append(generate.node);
  runButton.addEventListener("click", () => runAgain());
  cancelButton.addEventListener("click", () => state.controller?.abort());

  /** Runs the model: `tokens` {ids, words}, `file`, `numHeads` (undefined for GPT-2's own widths), `decode` (ids -> text) or null. */
  async function run({ file, tokens, numHeads, decode }) {
    state.controller?.abort();
    const controller = new AbortController();
    state.controller = controller;
    const seq = ++state.seq;
    replace(error);
    progress.hidden = false;
    cancelButton.hidden = false;
    runButton.disabled = true;
    bar.value = 0;
    barText.textContent = S.gpt2Reading;
    const t0 = performance.now();
    try {
      const r = await runGPT2(app.lab, app.runner, file, {
        ids: tokens.ids, numHeads, signal: controller.signal,
        onProgress: (p) => {
          if (seq !== state.seq) return;
          bar.max = p.total;
          bar.value = p.done;
          barText.textContent = S.gpt2Step(p.step, p.layer, p.done, p.total);
        },
      });
      if (seq !== state.seq) return;
      state.result = r;
      state.words = tokens.words;
      state.tokens = tokens;
      markStale(state.editedIn === seq ? S.gpt2TokensChanged(tokens.words) : null);  // edited while it ran
      state.pick = { layer: Math.min(state.pick.layer, r.layers.length - 1), head: Math.min(state.pick.head, r.config.n_head - 1) };
      showNext(r.nextTokens, decode, r.config);
      showGrid();
      showHead();
      node.dataset.runs = String(Number(node.dataset.runs ?? 0) + 1);
      node.dataset.runMs = (performance.now() - t0).toFixed(0);
    } catch (err) {
      if (seq !== state.seq) return;
      const cancelled = err?.code === "cancelled";
      replace(error, errorBox(S.gpt2Error, cancelled ? { code: "cancelled", message: S.gpt2Cancelled, hint: "" } : err, { testid: "gpt2-diag", showCode: true }));
      // what is still on screen belongs to the previous run, not to the tokens in the field: say so
      if (state.result) markStale(S.gpt2Stale(cancelled, state.words));
    } finally {
      if (seq === state.seq) {
        progress.hidden = true;
        cancelButton.hidden = true;
        runButton.disabled = false;
      }
    }
  }

  /** Marks the patterns and next tokens as a previous run's (`note`), or as this run's (null). */
  function markStale(note) {
    stale.hidden = note === null;
    stale.textContent = note ?? "";
    for (const n of [next, grid, headView]) {
      if (note === null) delete n.dataset.stale;
      else n.dataset.stale = "true";
    }
  }

  /** The likeliest next tokens; a classifier's head (n_out rows other than the vocabulary's): its classes. */
  function showNext(tokens, decode, config) {
    const classes = config.n_out !== config.vocab_size;
    replace(next,
      h("h4", {}, classes ? S.gpt2ClassesTitle(config.n_out) : S.gpt2NextTitle),
      h("ol", { class: "gpt2-next-list", dataset: { kind: classes ? "classes" : "tokens" } }, tokens.map((t) => h("li", { dataset: { id: String(t.id) } },
        h("code", { class: "piece" }, classes ? S.gpt2Class(t.id) : decode ? decode([t.id]).replace(/ /g, "␣") : `#${t.id}`),
        decode && !classes ? h("span", { class: "token-id" }, String(t.id)) : null,
        h("span", { class: "gpt2-prob" }, S.gpt2Prob(t.prob))))),
      h("p", { class: "muted" }, classes ? S.gpt2ClassesNote : S.gpt2NextNote(config.layout)));
  }

  /** One small heatmap per layer x head (the core's thumbnail): rows are layers, columns heads. */
  function showGrid() {
    const { layers, config } = state.result;
    const T = state.words.length;
    const cells = layers[0].thumbnail.shape[2];
    const pick = (button, layer, head) => {
      grid.querySelector(".gpt2-cell[aria-pressed=true]")?.setAttribute("aria-pressed", "false");
      button.setAttribute("aria-pressed", "true");
      state.pick = { layer, head };
      showHead();
    };
    const table = h("table", { class: "gpt2-patterns" },
      h("caption", {}, S.gpt2GridCaption(config.n_layer, config.n_head, T)),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.gpt2LayerHead), Array.from({ length: config.n_head }, (_, head) => h("th", { scope: "col" }, String(head))))),
      h("tbody", {}, layers.map((l, layer) => h("tr", {}, h("th", { scope: "row" }, String(layer)),
        Array.from({ length: config.n_head }, (_, head) => {
          const button = h("button", {
            type: "button", class: "gpt2-cell", "aria-label": S.gpt2CellLabel(layer, head), "aria-pressed": String(layer === state.pick.layer && head === state.pick.head),
            dataset: { layer: String(layer), head: String(head), testid: "gpt2-cell" },
          }, pattern(l.thumbnail.data, head, cells));
          button.addEventListener("click", () => pick(button, layer, head));
          return h("td", {}, button);
        })))));
    replace(grid, h("div", { class: "table-scroll" }, table),
      cells < T ? h("p", { class: "muted", dataset: { testid: "gpt2-grid-averaged" } }, S.gpt2GridAveraged(cells, T)) : null);
  }

  /**
   * The head view's parts that stay while the reader picks cells of one result: the title, the
   * picture with its words (its lines in a group of their own), the note and the trace button. A
   * click then redraws the lines alone (the words' layout and paint were a sixth of a click).
   */
  function headFrame() {
    const first = state.result.layers[0].firstTokens;
    const T = state.words.length;
    const n = first.shape[2];  // the first min(T, 48) tokens: their weights are exact (a causal query sees no later key)
    const row = 18;
    const title = h("h4", {});
    const lines = svg("g", {});
    const words = document.createDocumentFragment();
    for (let i = 0; i < n; i++) {
      words.append(svg("text", { x: "104", y: String(i * row + 16), "text-anchor": "end" }, state.words[i]));
      words.append(svg("text", { x: "216", y: String(i * row + 16) }, state.words[i]));
    }
    const pic = svg("svg", { class: "gpt2-lines", viewBox: `0 0 320 ${n * row + 8}`, width: "320", role: "img" }, lines, svg("g", {}, words));
    const frame = { result: state.result, n, row, title, lines, pic, pick: null };
    // A line's tooltip (its <title>) is made when the pointer first comes over it: the picture is one
    // image to assistive technology (role img, its aria-label), and 1,176 titles made up front were a
    // third of a click's script.
    pic.addEventListener("pointerover", (e) => {
      const line = e.target;
      if (line.localName !== "line" || line.firstChild) return;
      const [i, j] = [Number(line.dataset.query), Number(line.dataset.key)];
      const w = state.result.layers[frame.pick.layer].firstTokens.data;
      line.append(svg("title", {}, S.gpt2LineTitle(state.words[i], state.words[j], w[(frame.pick.head * n + i) * n + j])));
    });
    const traceButton = h("button", { type: "button", class: "small", part: "button", dataset: { testid: "gpt2-trace-layer" }, on: { click: () => traceLayer(frame.pick.layer, state.tokens) } });
    frame.traceButton = traceButton;
    replace(headView, title, h("p", { class: "muted" }, S.gpt2HeadNote), pic, T > n ? h("p", { class: "muted" }, S.gpt2HeadMore(n, T)) : null, traceButton);
    return frame;
  }

  /** The picked head: a line from each query (left) to each key it may see (right), as thick as the weight. */
  function showHead() {
    const { layer, head } = state.pick;
    if (state.headFrame?.result !== state.result || !headView.contains(state.headFrame.pic)) state.headFrame = headFrame();
    const frame = state.headFrame;
    const { n, row } = frame;
    frame.pick = { layer, head };
    const w = state.result.layers[layer].firstTokens.data;
    frame.title.textContent = S.gpt2HeadTitle(layer, head);
    frame.pic.setAttribute("aria-label", S.gpt2HeadLabel(layer, head));
    frame.traceButton.textContent = S.gpt2TraceLayer(layer);
    // Up to 48 x 49 / 2 = 1,176 lines: each cloned from one made here and given its numbers.
    const proto = svg("line", { x1: "110", x2: "210", class: "gpt2-line" });
    const all = document.createDocumentFragment();
    for (let i = 0; i < n; i++) {
      const y1 = String(i * row + 12);
      const query = String(i);
      for (let j = 0; j <= i; j++) {
        const v = w[(head * n + i) * n + j];
        if (v < 0.01) continue;
        const line = proto.cloneNode(false);
        line.setAttribute("y1", y1);
        line.setAttribute("y2", String(j * row + 12));
        line.setAttribute("stroke-width", (v * 6).toFixed(2));
        line.setAttribute("stroke-opacity", (0.25 + 0.75 * v).toFixed(2));
        line.setAttribute("data-query", query);
        line.setAttribute("data-key", String(j));
        all.append(line);
      }
    }
    // a new group in place of the old one: one subtree detached, not 1,176 lines removed one by one
    const lines = svg("g", {}, all);
    frame.lines.replaceWith(lines);
    frame.lines = lines;
  }

  return {
    node,
    run,
    /**
     * Layer `layer`'s attention weights of the whole model's last run, (1, n_head, F, F) for its first
     * F tokens, when that run was on exactly `ids`; else null.
     */
    weightsFor(layer, ids) {
      const t = state.tokens?.ids;
      if (!state.result || !t || t.length !== ids.length || t.some((id, i) => id !== ids[i])) return null;
      return state.result.layers[layer]?.firstTokens ?? null;
    },
    /** The panel's tokens were edited: what is on screen is the previous tokens' (until the next run). */
    tokensChanged() {
      state.editedIn = state.seq;
      if (state.result && !runButton.disabled) markStale(S.gpt2TokensChanged(state.words));
    },
    /** A new file (or none): nothing on screen belongs to it yet. */
    reset() {
      state.controller?.abort();
      state.seq++;
      state.result = null;
      for (const n of [error, next, grid, headView]) replace(n);
      markStale(null);
      generate.reset();
      progress.hidden = true;
      runButton.disabled = false;
    },
  };
}

/**
 * One head's thumbnail, (S, S) cells, as a canvas of S x S pixels (scaled up by CSS); cells above the
 * diagonal hold only keys after their queries (the core's thumbnail rule), drawn as masked.
 */
function pattern(data, head, S) {
  const canvas = pixelCanvas(S, S, (i, j) => (j > i ? MASKED_RGB : color(data[(head * S + i) * S + j])));
  canvas.className = "gpt2-pattern";
  canvas.setAttribute("aria-hidden", "true");
  return canvas;
}

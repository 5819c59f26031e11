// The tokens panel: where the tokens come from (the book's six, a sentence, seeded random, or the
// reader's own numbers in an editable grid), the batch, the seed, train/eval, and what keeps them from
// running (from the app's derived view).
import { h, replace } from "./dom.js";
import { S } from "./strings.js";
import { GRID_MAX } from "./url-state.js";
import { MAX_TOKENS, baseTokens, gridTexts, isNumberText, positiveInt, seedValue, singleSequence, words } from "./lab-model.js";
import { diagBox, lockBadge, setInvalid, setValue } from "./diagnostic-view.js";

export function setupTokensPanel(app) {
  const { lab, $, root, locked } = app;
  const edit = { edit: true };
  const discrete = { edit: true, discrete: true };
  let gridKey = "";

  for (const radio of root.querySelectorAll("input[name=source]")) {
    radio.addEventListener("change", () => {
      const s = app.state;
      app.setState(radio.value === "custom" && !s.custom ? customGridPatch() : { source: radio.value }, discrete);
    });
  }
  $("sentence").addEventListener("input", (e) => app.setState({ tokens: e.target.value, source: "sentence" }, edit));
  $("count").addEventListener("input", (e) => app.setState({ count: e.target.value, source: "random" }, edit));
  $("fill-context").addEventListener("click", () => {
    const ctx = app.derived.tokens.contextLength;
    if (ctx !== null) app.setState({ count: String(Math.min(ctx, MAX_TOKENS)), source: "random" }, discrete);
  });
  $("batch").addEventListener("change", (e) => app.setState({ batch: Number(e.target.value) }, discrete));
  $("seed-error").textContent = S.seedError(lab.seedRange);
  $("seed").addEventListener("input", (e) => app.setState({ seed: e.target.value }, edit));
  for (const radio of root.querySelectorAll("input[name=mode]")) {
    radio.addEventListener("change", () => app.setState({ training: radio.value === "train" }, discrete));
  }
  for (const name of ["seed", "batch"]) if (locked.has(name)) lock($(name));
  if (locked.has("mode")) for (const r of root.querySelectorAll("input[name=mode]")) r.disabled = true;
  // Each locked control says so, like a locked slot card.
  for (const [name, label] of [["seed", "label[for=seed]"], ["batch", "label[for=batch]"], ["tokens", ".tokens-source legend"], ["mode", ".tokens-mode legend"]]) {
    if (locked.has(name)) root.querySelector(label).append(" ", lockBadge(name));
  }
  if (locked.has("tokens")) {
    for (const r of root.querySelectorAll("input[name=source]")) r.disabled = true;
    lock($("sentence"));
    lock($("count"));
    $("fill-context").disabled = true;
  }

  /** The reader's own grid, starting from the tokens on screen (or one row of zeros). */
  function customGridPatch() {
    const s = app.state;
    const from = { ...s, source: s.source === "custom" ? "sentence" : s.source };
    const config = app.derived.config;
    const w = words(from);
    let texts;
    try {
      const base = positiveInt(config.d_in) && w && w.length ? baseTokens(lab, from, config.d_in) : null;
      if (base && base.shape[0] <= GRID_MAX && base.shape[1] <= GRID_MAX) texts = gridTexts(base);
    } catch {
      texts = undefined;
    }
    if (!texts) texts = [["0.0", "0.0", "0.0"]];
    const custom = { rows: texts.length, cols: texts[0].length, texts, words: w && w.length === texts.length ? w.slice() : null };
    return { custom, source: "custom", ...(custom.words ? { tokens: custom.words.join(" ") } : {}) };
  }

  function onCellEdit(r, j, text, input) {
    const s = app.state;
    let custom = s.custom;
    const patch = {};
    if (s.source !== "custom" || !custom) {
      const w = words(s);
      const texts = gridTexts(app.tokensFor(app.derived.config.d_in));
      custom = { rows: texts.length, cols: texts[0].length, texts, words: w.slice() };
      Object.assign(patch, { tokens: w.join(" "), source: "custom" });
      // The grid is keyed on the source: keep this very input on screen while the reader types.
      gridKey = `custom|${texts.length}x${texts[0].length}||${w.join(" ")}`;
    }
    const texts = custom.texts.map((row, i) => (i === r ? row.map((t, k) => (k === j ? text : t)) : row));
    setInvalid(input, !isNumberText(text));
    app.setState({ ...patch, custom: { ...custom, texts } }, edit);
  }

  /** The editable embedding grid (rebuilt only when what it shows changes). */
  function renderGrid(config) {
    const s = app.state;
    const box = $("embedding-grid");
    let texts = null;
    const w = words(s);
    if (s.source === "custom" && s.custom) {
      texts = s.custom.texts;
    } else if (positiveInt(config.d_in) && w && w.length && seedValue(lab, s) !== null
      && w.length <= GRID_MAX && config.d_in <= GRID_MAX && !(s.source === "book" && config.d_in !== 3)) {
      try {
        texts = gridTexts(app.tokensFor(config.d_in));  // the run's tokens, made once per change of them
      } catch {
        texts = null;
      }
    }
    const key = texts ? `${s.source}|${texts.length}x${texts[0].length}|${s.source === "custom" ? "" : texts.flat().join(",")}|${(w ?? []).join(" ")}` : `none|${w?.length}|${config.d_in}`;
    if (key === gridKey) return;
    gridKey = key;
    const focused = root.activeElement?.dataset?.cell;
    if (!texts) {
      const n = w?.length ?? 0;
      replace(box, h("p", { class: "muted" }, n && positiveInt(config.d_in) ? S.gridTooLarge(n, config.d_in) : S.factsUnavailable));
      return;
    }
    const rows = texts.length;
    const cols = texts[0].length;
    const table = h("table", { class: "grid edit-grid", dataset: { testid: "embedding-grid" } },
      h("caption", {}, S.gridCaption(rows, cols)),
      h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "corner" }, "num_tokens ╲ d_in"),
        Array.from({ length: cols }, (_, j) => h("th", { scope: "col" }, String(j))))),
      h("tbody", {}, texts.map((row, r) => {
        const word = w && w[r] !== undefined ? w[r] : String(r);
        return h("tr", {}, h("th", { scope: "row" }, word), row.map((t, j) => {
          const input = h("input", {
            type: "text", inputmode: "decimal", value: t, "aria-label": S.gridCell(word, j), readonly: locked.has("tokens"),
            class: "cell-input", part: "input", dataset: { cell: `${r}-${j}`, testid: `cell-${r}-${j}` },
          });
          if (!isNumberText(t)) input.setAttribute("aria-invalid", "true");
          input.addEventListener("input", () => onCellEdit(r, j, input.value, input));
          return h("td", {}, input);
        }));
      })));
    replace(box, h("div", { class: "table-scroll" }, table));
    const again = focused && box.querySelector(`[data-cell="${focused}"]`);
    if (again) {
      again.focus();
      const end = again.value.length;
      again.setSelectionRange(end, end);
    }
  }

  return {
    render(d) {
      const s = app.state;
      $(`source-${s.source}`).checked = true;
      if (s.source === "custom") $("grid-details").open = true;
      setValue($("sentence"), s.tokens);
      setValue($("count"), s.count);
      setValue($("batch"), String(s.batch));
      setValue($("seed"), s.seed);
      $(s.training ? "mode-train" : "mode-eval").checked = true;

      const single = singleSequence(lab, s.className);
      $("batch").disabled = single || locked.has("batch");
      $("batch-note").textContent = single ? S.batchDisabled : S.batchNote;
      $("word-count").textContent = s.source === "sentence" ? S.wordCount(d.words.length) : "";
      const ctx = d.tokens.contextLength;
      $("count-hint").textContent = S.countHint(!single ? ctx : null);
      const fill = $("fill-context");
      fill.hidden = single || ctx === null;
      // It fills the context with random tokens: when another source is chosen, the label says it replaces it.
      if (ctx !== null) fill.textContent = s.source === "random" ? S.fillContext(Math.min(ctx, MAX_TOKENS)) : S.fillContextSwitch(Math.min(ctx, MAX_TOKENS), S.sourceShort[s.source]);
      const seedOk = seedValue(lab, s) !== null;
      $("seed-error").hidden = seedOk;
      setInvalid($("seed"), !seedOk);
      setInvalid($("count"), s.source === "random" && d.words === null);
      renderGrid(d.config);
      replace($("token-diagnostics"),
        d.tokens.problems.map((p) => h("div", { class: `diag diag-${p.severity}`, dataset: { code: p.code, testid: "diagnostic" } },
          h("p", { class: "diag-msg" }, p.message),
          p.fix ? h("button", {
            type: "button", class: "small", part: "button", dataset: { testid: "use-seeded" },
            on: { click: () => app.setState(p.fix, discrete) },
          }, S.useSeeded) : null)),
        d.inputDiags.map((x) => diagBox(x, app)));
    },
  };
}

function lock(node) {
  if (node.tagName === "SELECT") node.disabled = true;
  else node.readOnly = true;
}

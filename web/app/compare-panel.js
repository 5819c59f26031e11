// Compare two modules side by side:
//  - MultiHeadAttentionWrapper <-> MultiHeadAttention: the equivalent configuration (wrapper d_out per
//    head <-> fused d_out total), the converted module with the same weights (stacked, or interleaved:
//    the head-merge mistake on purpose), and the largest difference at every stage;
//  - exercise 3.1 both ways: SelfAttention_v2 (seed 789) -> SelfAttention_v1 (seed 123), or back,
//    copying the matrices the reader ticks, each transposed or not; the PyTorch lines follow the boxes,
//    and the report says per matrix what happened, per stage where the outputs part, and in words
//    when a square matrix (d_in == d_out) was copied without .T (PyTorch accepts that silently);
//  - the same MultiHeadAttention, eight ways: its chapter 3 bonus rewrites after the book's weight
//    map, which agree and why the others do not (compare-ways.js);
//  - a reader's own module, from the check file their notebook saves (compare-check.js).
import { h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { inputLines, tensorLiteral } from "./python-code.js";
import { convertCode, column, renderComparison, slotsOf, callOf, planLines, copyBlock, renderReport } from "./compare-report.js";
import { buildInput, seedValue, slotsPatch } from "./lab-model.js";
import { errorBox } from "./diagnostic-view.js";
import { setupWays } from "./compare-ways.js";
import { setupCacheSteps } from "./compare-cache.js";
import { setupCheckOwn } from "./compare-check.js";

const MATRICES = ["W_query", "W_key", "W_value"];
const FALLBACK = { d_in: 3, d_out: 2 };
/**
 * Copy directions of exercise 3.1, from the core's facts: the classes whose matrices copy into each
 * other (copiesWith), each way; the book's own direction (nn.Linear weights into plain matrices) first.
 * Keys name the two modules as the book's code does ("sa_v2-sa_v1").
 */
function copyDirections(lab, facts) {
  const pair = lab.classes.filter((name) => facts(name).copiesWith.length > 0);
  const ways = pair.flatMap((from) => facts(from).copiesWith.map((to) => ({ from, to, book: facts(from).weights === "linear" && facts(to).weights === "matrix" })));
  ways.sort((a, b) => Number(b.book) - Number(a.book));
  return Object.fromEntries(ways.map((d) => [`${facts(d.from).pythonName}-${facts(d.to).pythonName}`, d]));
}

export function setupComparePanel(app) {
  const { lab, root, $ } = app;
  /** What the core knows about a class (heads, python name, book seed, copy and convert partners). */
  const facts = (className) => lab.classFacts(className);
  const DIRECTIONS = copyDirections(lab, facts);
  // Until the reader picks one, the mode follows the class: exercise 3.1 for the classes that copy. A
  // mode picked before this code loaded (the radios are in the page from the start) is kept.
  const picked = root.querySelector("input[name=compare-mode]:checked")?.value ?? null;
  const state = { mode: picked, layout: "stacked", result: null, copyResult: null, direction: Object.keys(DIRECTIONS)[0] };
  const ways = setupWays(app);
  const cacheSteps = setupCacheSteps(app);
  const checkOwn = setupCheckOwn(app);
  const mode = () => state.mode ?? (facts(app.state.className)?.copiesWith.length ? "copy" : facts(app.state.className)?.copiesFrom.length ? "ways" : "convert");
  const body = $("compare-body");

  // ---- wrapper <-> fused ----
  const converter = h("div", { class: "converter", dataset: { testid: "converter" } });
  const layout = h("select", { id: "compare-layout", part: "input", dataset: { testid: "compare-layout" } },
    h("option", { value: "stacked" }, S.layoutStacked), h("option", { value: "interleaved" }, S.layoutInterleaved));
  layout.addEventListener("change", () => { state.layout = layout.value; });
  const compareButton = h("button", { type: "button", part: "button", dataset: { testid: "compare-button" } }, S.compareButton);
  const convertResult = h("div", { class: "compare-result", "aria-live": "polite", dataset: { testid: "compare-result" } });
  const convertBox = h("div", { class: "convert-box" },
    converter,
    h("div", { class: "field" }, h("label", { for: "compare-layout" }, S.layoutLabel), layout, h("p", { class: "muted" }, S.layoutHint)),
    compareButton, convertResult);
  const convertNote = h("p", { class: "muted" });

  // ---- exercise 3.1, both directions ----
  const boxes = {};
  const planBody = h("tbody");
  for (const name of MATRICES) {
    const copy = h("input", { type: "checkbox", id: `copy-${name}`, checked: true, dataset: { testid: `copy-${name}` } });
    const transpose = h("input", { type: "checkbox", id: `transpose-${name}`, checked: true, dataset: { testid: `transpose-${name}` } });
    copy.addEventListener("change", () => { transpose.disabled = !copy.checked; planChanged(); });
    transpose.addEventListener("change", planChanged);
    boxes[name] = { copy, transpose };
    planBody.append(h("tr", {},
      h("th", { scope: "row" }, h("code", {}, name)),
      h("td", {}, h("label", { class: "check" }, copy, h("span", { class: "sr-only" }, `${S.copyCopy} ${name}`))),
      h("td", {}, h("label", { class: "check" }, transpose, h("span", { class: "sr-only" }, `${S.copyTranspose} ${name}`)))));
  }
  const directions = h("fieldset", { class: "radio-group copy-direction" },
    h("legend", {}, S.copyDirectionLegend),
    Object.keys(DIRECTIONS).map((key) => h("label", { for: `copy-dir-${key}` },
      h("input", {
        type: "radio", name: "copy-direction", value: key, id: `copy-dir-${key}`, checked: key === state.direction,
        dataset: { testid: `copy-dir-${key}` }, on: { change: () => { state.direction = key; planChanged(); } },
      }), " ", h("span", {}, S.copyDirection(DIRECTIONS[key].from, DIRECTIONS[key].to, DIRECTIONS[key].book)))));
  const copyIntro = h("p", { dataset: { testid: "copy-intro" } });
  const copySizes = h("p", { class: "muted" });
  const preview = h("code");
  const copyButton = h("button", { type: "button", id: "copy-button", part: "button", dataset: { testid: "copy-button" } }, S.copyButton);
  const copyStale = h("p", { class: "stale-note", hidden: true, dataset: { testid: "copy-stale" } }, S.copyStale);
  const copyResult = h("div", { class: "copy-result", "aria-live": "polite", dataset: { testid: "copy-result" } });
  const copyBox = h("div", { class: "copy-box" }, directions, copyIntro, copySizes,
    h("div", { class: "copy-plan-row" },
      h("div", { class: "table-scroll" }, h("table", { class: "copy-plan" },
        h("caption", { class: "sr-only" }, S.copyPlanCaption),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.copyMatrix), h("th", { scope: "col" }, S.copyCopy), h("th", { scope: "col" }, S.copyTranspose))),
        planBody)),
      h("div", { class: "copy-preview" },
        h("p", { id: "copy-preview-title", class: "copy-stages-title" }, S.copyPreviewTitle),
        h("pre", { class: "code", tabindex: "0", "aria-labelledby": "copy-preview-title", dataset: { testid: "copy-code-preview" } }, preview))),
    copyButton, copyStale, copyResult);

  const currentPlan = () => {
    const plan = {};
    for (const name of MATRICES) plan[name] = { copy: boxes[name].copy.checked, transpose: boxes[name].copy.checked && boxes[name].transpose.checked };
    return plan;
  };
  /** What a copy on screen was made from: stale once the direction, the boxes, the sizes or the tokens change. */
  const copyKey = () => JSON.stringify([state.direction, currentPlan(), copySetup(), app.derived.key]);

  function planChanged() {
    renderCopyIntro();
    copyStale.hidden = !(state.copyResult && state.copyResult.key !== copyKey());
    copyResult.classList.toggle("stale", !copyStale.hidden);
    app.render();
  }

  function renderCopyIntro() {
    const dir = DIRECTIONS[state.direction];
    const setup = copySetup();
    copyIntro.textContent = S.copyIntro(callOf(lab, dir.from, setup), facts(dir.from).bookSeed, callOf(lab, dir.to, setup), facts(dir.to).bookSeed);
    copySizes.textContent = copySizeValues() ? S.copySizesFromSlots : S.copySizesFallback;
    preview.textContent = planLines(lab, dir, currentPlan()).join("\n");
  }

  for (const radio of root.querySelectorAll("input[name=compare-mode]")) {
    radio.addEventListener("change", () => { state.mode = radio.value; app.render(); });
  }

  const copySizeValues = () => {
    const c = app.derived.config;
    const ok = (v) => Number.isInteger(v) && v > 0 && v <= 4096;
    return ok(c.d_in) && ok(c.d_out) ? { d_in: c.d_in, d_out: c.d_out } : null;
  };
  /** d_in, d_out (from the slots when they are valid sizes) and the v2 module's qkv_bias. */
  const copySetup = () => ({ ...(copySizeValues() ?? FALLBACK), qkv_bias: app.derived.config.qkv_bias === true });

  /**
   * The tokens the copy is compared on: the page's current (num_tokens, d_in) tokens when they fit
   * d_in, else the book's six (d_in = 3) or six seeded ones. With the PyTorch lines that make them.
   */
  function copyTokens(dIn) {
    if (copySizeValues() && app.derived.shape && seedValue(app.lab, app.state) !== null) {
      try {
        const base = app.tokensFor(dIn);
        if (base.shape[1] === dIn && base.data.every(Number.isFinite)) {
          const s = app.state;
          const words = app.derived.words;
          const lines = inputLines("tokens", {
            source: s.source, words, dIn, seed: seedValue(app.lab, app.state), sentenceTokens: typeof lab.sentenceTokens === "function",
            tokens: s.source === "custom" ? s.custom.texts : base,
          });
          return { tensor: base, words, lines, text: S.copyTokensCurrent(base.shape[0], dIn) };
        }
      } catch {
        // fall through: the fixed tokens below
      }
    }
    if (dIn === 3) {
      const book = lab.bookTokens();
      const words = S.bookSentence.split(" ");
      return { tensor: book, words, lines: tensorLiteral("tokens", book, words), text: S.copyTokensBook(book.shape[0]) };
    }
    const words = Array.from({ length: 6 }, (_, i) => String(i));
    return {
      tensor: lab.seededTokens(6, dIn, 123), words, text: S.copyTokensSeeded(6, dIn),
      lines: inputLines("tokens", { source: "random", words, dIn, seed: 123 }),
    };
  }

  /** lab.equivalentConfig of the setup on screen, asked of the core once per setup (not per render). */
  let equivalent = null;
  function equivalentOf(className, config) {
    const key = JSON.stringify([className, config]);
    if (equivalent?.key !== key) equivalent = { key, eq: lab.equivalentConfig(className, config) };
    return equivalent.eq;
  }

  function refresh() {
    $(`compare-mode-${mode()}`).checked = true;
    const s = app.state;
    const d = app.derived.description;
    if (mode() === "ways") {
      ways.refresh();
      if (body.firstChild !== ways.box) replace(body, ways.box);
      return;
    }
    for (const [m, part] of [["cache", cacheSteps], ["check", checkOwn]]) {
      if (mode() !== m) continue;
      part.refresh();
      if (body.firstChild !== part.box) replace(body, part.box);
      return;
    }
    if (mode() === "copy") {
      renderCopyIntro();
      copyStale.hidden = !(state.copyResult && state.copyResult.key !== copyKey());
      copyResult.classList.toggle("stale", !copyStale.hidden);
      if (body.firstChild !== copyBox) replace(body, copyBox);
      return;
    }
    if (body.firstChild !== convertBox && body.firstChild !== convertNote) replace(body, convertBox);
    let note = "";
    if (!facts(s.className)?.convertsTo) note = S.compareNeedsMulti;
    else if (!d?.ok) note = S.compareNeedsValid;
    if (note) {
      convertNote.textContent = note;
      replace(body, convertNote);
      return;
    }
    if (body.firstChild !== convertBox) replace(body, convertBox);
    const eq = equivalentOf(s.className, d.config);
    const c = d.config;
    const rule = S.converterRule[facts(s.className).heads]({ h: c.num_heads, d_out: c.d_out, to: eq.config.d_out });
    const canSwitch = !app.locked.size;
    replace(converter,
      h("h3", {}, S.converterHeading),
      h("p", { class: "converter-calls" }, h("code", { dataset: { testid: "converter-a" } }, d.pythonCall), h("span", { class: "swap", "aria-hidden": "true" }, " ⇄ "),
        h("code", { dataset: { testid: "converter-b" } }, eq.pythonCall)),
      h("p", { dataset: { testid: "converter-rule" } }, rule),
      canSwitch ? h("button", {
        type: "button", class: "small", part: "button", dataset: { testid: "converter-use" },
        on: { click: () => switchTo(eq) },
      }, S.converterUse(eq.pythonCall)) : null);
    const fresh = state.result && state.result.key === app.derived.key;
    convertResult.classList.toggle("stale", Boolean(state.result) && !fresh);
  }

  function switchTo(eq) {
    const slotTexts = { ...app.state.slotTexts };
    for (const spec of lab.slots(eq.className)) {
      const v = eq.config[spec.name];
      slotTexts[spec.name] = typeof v === "boolean" ? (v ? "True" : "False") : spec.type === "float" && Number.isInteger(v) ? `${v}.0` : String(v);
    }
    app.setState(slotsPatch(lab, eq.className, slotTexts), { edit: true, discrete: true });
  }

  compareButton.addEventListener("click", () => {
    const s = app.state;
    const d = app.derived.description;
    if (!d?.ok || app.derived.blocked) {
      replace(convertResult, h("p", { class: "muted" }, S.compareNeedsValid));
      return;
    }
    const config = app.derived.config;
    const x = buildInput(lab, app.state, config, app.tokensFor(config.d_in));
    const bytes = app.derived.memory;  // the Setup's estimate of this very input
    if (bytes === null || bytes > 64 * 1048576) {
      replace(convertResult, h("p", { class: "muted" }, S.compareTooLarge));
      return;
    }
    try {
      const a = lab.create(s.className, config, { generator: lab.manualSeed(seedValue(app.lab, app.state)) });
      const converted = lab.convert(a, { layout: state.layout });
      const b = converted.module;
      const cmp = lab.compare(a, b, x);
      const outA = a.forward(x, { training: false }).output;
      const outB = b.forward(x, { training: false }).output;
      const eq = lab.equivalentConfig(s.className, d.config);
      state.result = { key: app.derived.key, code: convertCode(facts(s.className).pythonName, facts(eq.className).pythonName, converted.code, state.layout, eq.pythonCall) };
      replace(convertResult, renderComparison(a, b, d.pythonCall, eq.pythonCall, outA, outB, cmp, app.derived.words, converted.code));
    } catch (err) {
      state.result = null;
      replace(convertResult, errorBox(S.compareError, err));
    }
    convertResult.classList.remove("stale");
    app.render();
  });

  copyButton.addEventListener("click", () => {
    const dir = DIRECTIONS[state.direction];
    const setup = copySetup();
    const plan = currentPlan();
    const key = copyKey();
    try {
      // each class takes the slots it has (qkv_bias only where there is one), after the book's seed
      const make = (className) => lab.create(className, slotsOf(lab, className, setup), { generator: lab.manualSeed(facts(className).bookSeed) });
      const from = make(dir.from);
      const to = make(dir.to);
      const tokens = copyTokens(setup.d_in);
      const report = lab.copyWeights(from, to, plan, { tokens: tokens.tensor });
      const lines = report.code.trimEnd().split("\n");
      const code = copyBlock(lab, dir, setup, lines, tokens.lines);
      state.copyResult = { key, code: code.join("\n") };
      const word = tokens.words?.[0] ?? "0";
      const side = h("div", { class: "compare-cols" },
        column(S.copyFromTitle(dir.from, facts(dir.from).bookSeed), callOf(lab, dir.from, setup), from, from.forward(tokens.tensor, { training: false }).output, word, S.copyRoles[facts(dir.from).weights]),
        column(S.copyToTitle(dir.to, facts(dir.to).bookSeed), callOf(lab, dir.to, setup), to, to.forward(tokens.tensor, { training: false }).output, word, S.copyRoles[facts(dir.to).weights]));
      replace(copyResult, renderReport(lab, report, code.slice(1), tokens.text, side, dir)); // without the code view's blank line
    } catch (err) {
      state.copyResult = null;
      replace(copyResult, errorBox(S.copyError, err));
    }
    copyStale.hidden = true;
    copyResult.classList.remove("stale");
    app.render();
  });

  return {
    render: refresh,
    /**
     * The PyTorch lines of the comparison on screen ("" when none is, or it is stale). Pure: reads the
     * panel's state and never touches the DOM (the code view calls it on every render).
     */
    code() {
      const m = mode();
      if (m === "copy") {
        // Once a copy has run, the code view follows the boxes (the lines of the copy they describe).
        if (!state.copyResult) return "";
        const setup = copySetup();
        const dir = DIRECTIONS[state.direction];
        return copyBlock(lab, dir, setup, planLines(lab, dir, currentPlan()), copyTokens(setup.d_in).lines).join("\n");
      }
      if (m !== "convert" || !state.result || state.result.key !== app.derived.key) return ""; // ways, cache, check: no lines
      return state.result.code;
    },
  };
}

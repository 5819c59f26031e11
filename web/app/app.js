// The teaching page: set up one of the book's five attention classes slot by slot (or paste a
// call), see the derived sizes and every diagnostic before running, run on sample tokens and read
// every stage of the trace. Uses only the library facade (../lib/attention-lab.js).
import { h, byId, replace } from "./dom.js";
import { S } from "./strings.js";
import { bytesText, callArgText, callText, pyValue, shapeText, slotValueFromText, thousands } from "./format.js";
import { DEFAULTS, readUrlState, writeUrlState } from "./url-state.js";
import { stageCard } from "./tensor-view.js";
import { setupCopyPanel } from "./copy-panel.js";

const MAX_SEED = Number.MAX_SAFE_INTEGER;

/** Slot texts remembered across classes: switching class keeps every value with the same name. */
const SLOT_MEMORY = { d_in: "3", d_out: "2", context_length: "6", dropout: "0.0", num_heads: "2", qkv_bias: "False" };

const PRESETS = [
  { key: "bookToy", className: "MultiHeadAttention", slots: { d_in: "3", d_out: "2", context_length: "6", dropout: "0.0", num_heads: "2", qkv_bias: "False" }, source: "book", batch: 2 },
  { key: "exercise32", className: "MultiHeadAttentionWrapper", slots: { d_in: "3", d_out: "1", context_length: "6", dropout: "0.0", num_heads: "2", qkv_bias: "False" }, source: "book", batch: 2 },
  { key: "gpt2", className: "MultiHeadAttention", slots: { d_in: "768", d_out: "768", context_length: "1024", dropout: "0.0", num_heads: "12", qkv_bias: "False" }, source: "seeded", batch: 2 },
];

let lab = null;
let copyPanel = null;
const state = {
  className: DEFAULTS.className,
  slotTexts: { ...SLOT_MEMORY },
  seed: DEFAULTS.seed,
  source: DEFAULTS.source,
  tokens: DEFAULTS.tokens,
  batch: DEFAULTS.batch,
  training: DEFAULTS.training,
  /** parseCall of the call box (typed by the reader or written from the slots): the config's source. */
  parsed: null,
  runError: null,
  lastRunKey: null,
  runCount: 0,
  blocked: true,
  running: false,
};

// ---- start-up ---------------------------------------------------------------------------------

fillStaticText();
main();

async function main() {
  const status = byId("status");
  status.textContent = S.loading;
  try {
    const { loadAttentionLab } = await import("../lib/attention-lab.js");
    lab = await loadAttentionLab();
  } catch (err) {
    status.textContent = S.loadFailed(err?.message ?? String(err));
    status.classList.add("status-error");
    return;
  }
  status.textContent = "";

  const { state: fromUrl, problems } = readUrlState(location.search, lab.classes);
  Object.assign(state, { ...fromUrl, slotTexts: { ...state.slotTexts, ...(fromUrl.slotTexts ?? {}) } });
  const notices = problems.map((p) => (p.key === "class" ? S.urlBadClass(p.value) : S.urlBadValue(p.key)));
  if (notices.length) {
    status.textContent = notices.join(" ");
    status.classList.add("status-warning");
  }

  buildClassSelect();
  buildPresets();
  buildSlots();
  wireControls();
  copyPanel = setupCopyPanel(lab, copySizes);
  syncControls();
  writeGeneratedCall();
  update();
  if (!state.blocked) await run();
  document.body.dataset.ready = "true";
}

function fillStaticText() {
  const set = (id, text) => { byId(id).textContent = text; };
  set("product-name", S.productName);
  set("pitch", S.pitch);
  set("presets-heading", S.presetsHeading);
  set("presets-hint", S.presetsHint);
  set("setup-heading", S.setupHeading);
  set("class-label", S.classLabel);
  set("call-label", S.callLabel);
  set("call-hint", S.callHint);
  set("named-heading", S.namedHeading);
  set("slots-legend", S.slotsHeading);
  set("facts-heading", S.factsHeading);
  set("fact-headdim-label", S.headDim);
  set("fact-headdim-note", S.headDimNote);
  set("fact-width-label", S.outputWidth);
  set("fact-rule-label", S.outputWidthRule);
  set("fact-mask-label", S.maskSize);
  set("facts-unavailable", S.factsUnavailable);
  set("params-caption", S.paramsCaption);
  set("param-name-h", S.paramName);
  set("param-shape-h", S.paramShape);
  set("param-count-h", S.paramCount);
  set("param-total-h", S.paramTotal);
  set("tokens-heading", S.tokensHeading);
  set("source-legend", S.sourceLegend);
  set("source-book-label", S.sourceBook);
  set("source-seeded-label", S.sourceSeeded);
  set("sentence-label", S.sentenceLabel);
  set("batch-label", S.batchLabel);
  set("seed-label", S.seedLabel);
  set("seed-note", S.seedNote);
  set("seed-error", S.seedError);
  set("mode-legend", S.modeLegend);
  set("mode-train-label", S.modeTrain);
  set("mode-eval-label", S.modeEval);
  set("dropout-note", S.dropoutNote);
  set("run", S.runButton);
  set("run-reason", S.runBlocked(S.reasonLoading));
  set("trace-heading", S.traceHeading);
  set("trace-status", S.traceEmpty);
  set("footer-text", S.footer);
  set("skip-link", S.skipLink);
  byId("stage-nav").setAttribute("aria-label", S.stagesNav);
  for (const option of byId("batch").options) option.textContent = S.batchOptions[option.value];
}

function buildClassSelect() {
  const select = byId("class-select");
  replace(select, lab.classes.map((name) => h("option", { value: name }, name)));
}

function buildPresets() {
  const box = byId("preset-buttons");
  replace(box, PRESETS.map((p) =>
    h("button", { type: "button", class: "preset", dataset: { preset: p.key, testid: `preset-${p.key}` }, on: { click: () => applyPreset(p) } },
      S.presets[p.key])));
}

/** Rebuilds the slot inputs for the current class (only when the class changes). */
function buildSlots() {
  const box = byId("slot-fields");
  const specs = lab.slots(state.className);
  replace(box, specs.map((spec) => {
    const id = `slot-${spec.name}`;
    const control = spec.type === "bool"
      ? h("select", { id, dataset: { testid: id, slotInput: spec.name } },
        h("option", { value: "False" }, "False"), h("option", { value: "True" }, "True"))
      : h("input", {
        id, type: "text", inputmode: spec.type === "int" ? "numeric" : "decimal",
        autocomplete: "off", spellcheck: "false", dataset: { testid: id, slotInput: spec.name },
      });
    control.setAttribute("aria-describedby", `${id}-doc ${id}-diag`);
    control.addEventListener(spec.type === "bool" ? "change" : "input", () => onSlotEdit(spec.name, control.value));
    const meta = [S.slotTypes[spec.type] ?? spec.type, spec.default === undefined ? S.slotRequired : S.slotDefault(pyValue(spec.default, spec.type))];
    return h("div", { class: "slot", dataset: { slot: spec.name, position: spec.position } },
      h("div", { class: "slot-head" },
        h("span", { class: "slot-pos", title: S.slotPosition(spec.position) },
          h("span", { class: "sr-only" }, S.slotWord), String(spec.position)),
        h("label", { for: id }, h("code", {}, spec.name)),
        h("span", { class: "slot-meta" }, meta.join(" · "))),
      control,
      h("p", { id: `${id}-doc`, class: "slot-doc" }, spec.doc),
      h("div", { id: `${id}-diag`, class: "slot-diagnostics", dataset: { slotDiagnostics: spec.name }, "aria-live": "polite" }));
  }));
}

function wireControls() {
  byId("class-select").addEventListener("change", (e) => {
    state.className = e.target.value;
    buildSlots();
    syncControls();
    writeGeneratedCall();
    edited();
  });
  byId("call-box").addEventListener("input", (e) => onCallEdit(e.target.value));
  for (const radio of document.querySelectorAll("input[name=source]")) {
    radio.addEventListener("change", () => { state.source = radio.value; edited(); });
  }
  byId("sentence").addEventListener("input", (e) => {
    state.tokens = e.target.value;
    if (state.source !== "seeded") {
      state.source = "seeded";
      byId("source-seeded").checked = true;
    }
    edited();
  });
  byId("batch").addEventListener("change", (e) => { state.batch = Number(e.target.value); edited(); });
  byId("seed").addEventListener("input", (e) => { state.seed = e.target.value; edited(); });
  for (const radio of document.querySelectorAll("input[name=mode]")) {
    radio.addEventListener("change", () => { state.training = radio.value === "train"; edited(); });
  }
  byId("run").addEventListener("click", () => run());
}

/** Puts the state into every control (used at start-up, on class change and by presets). */
function syncControls() {
  byId("class-select").value = state.className;
  for (const spec of lab.slots(state.className)) {
    const control = byId(`slot-${spec.name}`);
    const text = state.slotTexts[spec.name] ?? "";
    if (spec.type === "bool") control.value = slotValueFromText(text, "bool") === true ? "True" : "False";
    else control.value = text;
  }
  byId(state.source === "seeded" ? "source-seeded" : "source-book").checked = true;
  byId("sentence").value = state.tokens;
  byId("batch").value = String(state.batch);
  byId("seed").value = state.seed;
  byId(state.training ? "mode-train" : "mode-eval").checked = true;
}

// ---- editing ----------------------------------------------------------------------------------

function onSlotEdit(name, text) {
  state.slotTexts[name] = text;
  writeGeneratedCall();
  edited();
}

/**
 * Rewrites the call box from the slots and parses it, so slots and call box share one reading of
 * the values (an int slot written 3.0 is a float to Python, as in the call box). Slot text that
 * would change the call's structure (commas, parentheses, "=") is converted directly instead.
 */
function writeGeneratedCall() {
  const call = generatedCall();
  byId("call-box").value = call;
  const safe = lab.slots(state.className).every((spec) => !/[,()=#'"\\\n]/.test(String(state.slotTexts[spec.name] ?? "")));
  state.parsed = safe ? lab.parseCall(call) : null;
}

function onCallEdit(text) {
  const parsed = lab.parseCall(text);
  state.parsed = parsed;
  if (parsed.className && lab.classes.includes(parsed.className)) {
    if (parsed.className !== state.className) {
      state.className = parsed.className;
      buildSlots();
    }
    const specs = lab.slots(state.className);
    for (const spec of specs) {
      const slot = parsed.slots.find((s) => s.name === spec.name);
      let slotText = "";
      if (slot && slot.source !== "default" && slot.text !== "") slotText = slot.text.trim();
      else if (slot && slot.value !== null && slot.value !== undefined) slotText = pyValue(slot.value, spec.type);
      state.slotTexts[spec.name] = slotText;
    }
    syncControls();
  }
  edited();
}

function generatedCall() {
  return callText(state.className, lab.slots(state.className), state.slotTexts);
}

/** Any reader edit: forget a stale run error, re-derive everything, update the URL. */
function edited() {
  state.runError = null;
  update();
}

// ---- derived view -----------------------------------------------------------------------------

function currentConfig() {
  if (state.parsed && state.parsed.className === state.className) return { ...state.parsed.config };
  const config = {};
  for (const spec of lab.slots(state.className)) {
    const value = slotValueFromText(state.slotTexts[spec.name], spec.type);
    if (value !== undefined) config[spec.name] = value;
  }
  return config;
}

function seedValue() {
  const t = String(state.seed).trim();
  if (!/^\d+$/.test(t)) return null;
  const n = Number(t);
  return n <= MAX_SEED ? n : null;
}

function words() {
  if (state.source === "book") return S.bookSentence.split(" ");
  return state.tokens.trim().split(/\s+/).filter(Boolean);
}

/** SelfAttention_v1/_v2 take one sequence (num_tokens, d_in), with no batch axis (the library says which). */
function singleSequence(className) {
  return lab.inputShape(className, 1, 1, 1).length === 2;
}

function positiveInt(v) {
  return typeof v === "number" && Number.isInteger(v) && v > 0;
}

function inputShape(config) {
  const n = words().length;
  if (!n || !positiveInt(config.d_in)) return null;
  if (state.source === "book" && config.d_in !== 3) return null;
  return lab.inputShape(state.className, n, config.d_in, state.batch);
}

function diagKey(d) {
  return `${d.code}|${(d.slots ?? []).join(",")}|${d.message}`;
}

function update() {
  const specs = lab.slots(state.className);
  const slotNames = new Set(specs.map((s) => s.name));
  const config = currentConfig();
  const description = lab.describe(state.className, config);

  // Diagnostics: the call's own (syntax, unknown keywords), the configuration's, then the input's.
  const seen = new Set();
  const configDiags = [];
  const callDiags = [];
  // A parse already holds check_config's diagnostics for the values exactly as written (3.0 is a
  // float there, while the config handed back to JS has lost that); without one, describe's.
  const configSource = state.parsed && state.parsed.className === state.className
    ? state.parsed.diagnostics
    : [...(state.parsed?.diagnostics ?? []), ...(description.diagnostics ?? [])];
  for (const d of configSource) {
    if (seen.has(diagKey(d))) continue;
    seen.add(diagKey(d));
    const onSlot = (d.slots ?? []).some((s) => slotNames.has(s));
    (onSlot ? configDiags : callDiags).push(d);
  }
  const shape = inputShape(config);
  const inputDiags = shape
    ? lab.check(state.className, config, { inputShape: shape }).filter((d) => !seen.has(diagKey(d)))
    : [];

  renderSlotDiagnostics(specs, configDiags);
  replace(byId("call-diagnostics"), callDiags.map(diagBox));
  renderNamed(specs);
  renderFacts(description);
  const tokenBlock = renderTokens(config, inputDiags);

  // Run button: disabled with the first reason that blocks it.
  const errors = [...configDiags, ...callDiags].filter((d) => d.severity === "error").length;
  let reason = "";
  if (errors) reason = S.reasonErrors(errors);
  else if (seedValue() === null) reason = S.reasonSeed;
  else if (tokenBlock) reason = tokenBlock;
  else if (inputDiags.some((d) => d.severity === "error")) reason = S.reasonInput;
  state.blocked = Boolean(reason);
  byId("run").disabled = state.blocked || state.running;
  byId("run-reason").textContent = reason ? S.runBlocked(reason) : S.runReady;
  byId("run-reason").classList.toggle("blocked", state.blocked);
  renderRunError();

  // The trace stays until the next run, marked stale when the setup changed.
  if (state.lastRunKey) {
    const stale = runKey(config) !== state.lastRunKey.key;
    byId("stage-cards").classList.toggle("stale", stale);
    byId("trace-status").textContent = stale ? S.traceStale(state.lastRunKey.call) : state.lastRunKey.status;
  }

  copyPanel?.refresh();
  history.replaceState(null, "", writeUrlState(state, specs));
}

function renderSlotDiagnostics(specs, diags) {
  const bySlot = new Map(specs.map((s) => [s.name, []]));
  const pointers = new Map(specs.map((s) => [s.name, []]));
  for (const d of diags) {
    const names = d.slots.filter((s) => bySlot.has(s));
    bySlot.get(names[0]).push(diagBox(d));
    for (const other of names.slice(1)) pointers.get(other).push({ to: names[0], severity: d.severity });
  }
  if (state.runError && bySlot.has(state.runError.slot)) bySlot.get(state.runError.slot).push(errorBox(state.runError));
  for (const spec of specs) {
    const container = byId(`slot-${spec.name}-diag`);
    const boxes = bySlot.get(spec.name);
    const notes = pointers.get(spec.name).map((p) => h("p", { class: `diag-pointer diag-${p.severity}` }, S.seeSlot(p.to)));
    replace(container, boxes, notes);
    const invalid = [...boxes, ...notes].some((b) => b.classList.contains("diag-error"));
    const control = byId(`slot-${spec.name}`);
    if (invalid) control.setAttribute("aria-invalid", "true");
    else control.removeAttribute("aria-invalid");
    container.closest(".slot").classList.toggle("has-error", invalid);
  }
}

function diagBox(d) {
  const level = d.severity in S.diagLevels ? d.severity : "error";
  const pytorch = String(d.pytorch ?? "").trim();
  return h("div", { class: `diag diag-${level}`, dataset: { code: d.code, testid: "diagnostic" } },
    h("p", { class: "diag-msg" }, h("strong", {}, `${S.diagLevels[level]}: `), d.message),
    d.hint ? h("p", { class: "diag-hint" }, d.hint) : null,
    pytorch ? h("p", { class: "diag-pytorch" }, pytorch.startsWith("PyTorch") ? pytorch : S.pytorchPrefix + pytorch) : null);
}

function errorBox(err) {
  return diagBox({ severity: "error", code: err.code, slots: [], message: err.message, hint: err.hint, pytorch: "" });
}

function renderNamed(specs) {
  const typeOf = new Map(specs.map((s) => [s.name, s.type]));
  let items;
  if (state.parsed && state.parsed.className === state.className) {
    // The parse lists the slots it could fill; a required slot it could not is shown as missing.
    items = specs.map((spec) => state.parsed.slots.find((s) => s.name === spec.name && s.position === spec.position)
      ?? { name: spec.name, position: spec.position, value: null, source: "missing", text: "" });
    items.push(...state.parsed.slots.filter((s) => s.position === 0));
  } else {
    let gap = false;
    items = specs.map((spec) => {
      const text = String(state.slotTexts[spec.name] ?? "").trim();
      if (text === "") {
        gap = true;
        return { name: spec.name, position: spec.position, value: spec.default ?? null, source: spec.default === undefined ? "missing" : "default", text: "" };
      }
      return { name: spec.name, position: spec.position, value: slotValueFromText(text, spec.type), source: gap ? "keyword" : "positional", text: callArgText(text, spec.type) };
    });
  }
  replace(byId("named-values"), items.map((item) => {
    const type = typeOf.get(item.name);
    const shown = item.text && item.source !== "default"
      ? item.text
      : item.value === null || item.value === undefined ? "—" : pyValue(item.value, type);
    return h("li", { dataset: { name: item.name, position: item.position, source: item.source } },
      h("span", { class: "named-pos" }, item.position > 0 ? S.slotPosition(item.position) : "—"),
      h("code", { class: "named-name" }, item.name),
      h("span", { class: "named-eq" }, " = "),
      h("code", { class: "named-value" }, shown),
      h("span", { class: `named-source src-${item.source}` }, item.position > 0 ? (S.sourceNames[item.source] ?? item.source) : S.unknownSlot));
  }));
}

function renderFacts(d) {
  const has = d.headDim !== undefined && d.headDim !== null;
  byId("fact-headdim").textContent = has ? String(d.headDim) : "—";
  byId("fact-width").textContent = d.outputWidth != null ? String(d.outputWidth) : "—";
  byId("fact-rule").textContent = d.outputWidthRule || "—";
  if (d.maskBytes) {
    const n = Math.round(Math.sqrt(d.maskBytes / 4));
    byId("fact-mask").textContent = S.maskBytes(n, bytesText(d.maskBytes));
  } else {
    byId("fact-mask").textContent = d.maskBytes === 0 ? S.noMask : "—";
  }
  const params = d.parameters ?? [];
  replace(byId("params-body"), params.map((p) =>
    h("tr", {}, h("th", { scope: "row" }, h("code", {}, p.name)), h("td", {}, shapeText(p.shape)), h("td", { class: "num" }, thousands(p.count)))));
  byId("param-total").textContent = d.parameterCount != null ? thousands(d.parameterCount) : "—";
  byId("facts-unavailable").hidden = Boolean(d.parameters);
}

/** Updates the token controls; returns the reason the tokens block a run, or "". */
function renderTokens(config, inputDiags) {
  const single = singleSequence(state.className);
  byId("batch").disabled = single;
  byId("batch-note").textContent = single ? S.batchDisabled : S.batchNote;
  const w = words();
  byId("word-count").textContent = S.wordCount(w.length);
  const box = byId("token-diagnostics");
  const items = [];
  let block = "";
  if (state.source === "book" && typeof config.d_in === "number" && config.d_in !== 3) {
    block = S.reasonBookDin;
    items.push(h("div", { class: "diag diag-error", dataset: { code: "book_tokens_width", testid: "diagnostic" } },
      h("p", { class: "diag-msg" }, S.bookNeedsDin3(config.d_in)),
      h("button", { type: "button", class: "small", dataset: { testid: "use-seeded" }, on: { click: () => {
        state.source = "seeded";
        syncControls();
        edited();
      } } }, S.useSeeded)));
  }
  if (state.source === "seeded" && w.length === 0) block = S.reasonNoWords;
  byId("seed-error").hidden = seedValue() !== null;
  if (seedValue() === null) byId("seed").setAttribute("aria-invalid", "true");
  else byId("seed").removeAttribute("aria-invalid");
  items.push(...inputDiags.map(diagBox));
  replace(box, items);
  return block;
}

// ---- presets ----------------------------------------------------------------------------------

function applyPreset(p) {
  Object.assign(state.slotTexts, p.slots);
  state.className = p.className;
  state.source = p.source;
  state.batch = p.batch;
  state.seed = DEFAULTS.seed;
  state.training = true;
  buildSlots();
  syncControls();
  writeGeneratedCall();
  edited();
  if (!state.blocked) return run();
  return undefined;
}

// ---- run --------------------------------------------------------------------------------------

function runKey(config) {
  return JSON.stringify([state.className, config, state.seed, state.source, state.source === "seeded" ? state.tokens : "", state.batch, state.training]);
}

function buildInput(config) {
  const w = words();
  const dIn = config.d_in;
  const base = state.source === "book" ? lab.bookTokens() : lab.seededTokens(w.length, dIn, seedValue());
  const shape = lab.inputShape(state.className, w.length, dIn, state.batch);
  if (shape.length === 2) return { shape, data: base.data };
  const data = new Float32Array(state.batch * base.data.length);
  for (let b = 0; b < state.batch; b++) data.set(base.data, b * base.data.length); // torch.stack((inputs, inputs))
  return { shape, data };
}

/** Resolves after the browser has painted (so "Running…" shows before a long run). */
function nextPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

/** Marks a finished run on <body> (data-runs counts them) for anyone waiting on the page. */
function runFinished() {
  state.running = false;
  document.body.dataset.runs = String(Number(document.body.dataset.runs ?? 0) + 1);
}

async function run() {
  if (state.blocked || state.running) return;
  state.running = true;
  const config = currentConfig();
  const call = byId("call-box").value.trim() || generatedCall();
  state.runError = null;
  const runButton = byId("run");
  runButton.disabled = true;
  runButton.textContent = S.running;
  await nextPaint();
  let result;
  let module;
  try {
    const x = buildInput(config);
    const gen = lab.manualSeed(seedValue());
    module = lab.create(state.className, config, { generator: gen });
    result = module.forward(x, { training: state.training, generator: gen, trace: true });
  } catch (err) {
    state.runError = {
      code: err?.code ?? "error",
      slot: err?.slot ?? "",
      message: err?.message ?? String(err),
      hint: err?.hint ?? "",
    };
    runButton.textContent = S.runButton;
    runFinished();
    update();
    return;
  }
  runButton.textContent = S.runButton;
  state.runCount += 1;
  const w = words();
  const tokensText = state.source === "book" ? S.tokensBook(S.bookSentence) : S.tokensSeeded(w.join(" "));
  const batchText = singleSequence(state.className) ? "" : S.batchSuffix(state.batch);
  const status = S.traceFor(call, tokensText + batchText, state.training ? S.modeNames.train : S.modeNames.eval);
  state.lastRunKey = { key: runKey(config), call, status };
  renderTrace(result, module, config, w);
  runFinished();
  update();
}

function renderRunError() {
  const box = byId("run-error");
  const err = state.runError;
  if (!err) {
    replace(box);
    return;
  }
  replace(box, h("div", { class: "diag diag-error", dataset: { code: err.code, testid: "diagnostic" } },
    h("p", { class: "diag-msg" }, h("strong", {}, `${S.runError}: `), err.message),
    err.hint ? h("p", { class: "diag-hint" }, err.hint) : null,
    err.slot ? h("p", { class: "diag-hint" }, S.seeSlot(err.slot)) : null));
}

function renderTrace(result, module, config, w) {
  const stages = result.trace ?? [{ id: "output", title: "Output", formula: "", axes: result.output.shape.map(() => ""), ...result.output }];
  const ctx = {
    words: w,
    dropout: typeof config.dropout === "number" ? config.dropout : 0,
    training: state.training,
    output: { width: module.outputWidth, rule: module.outputWidthRule },
    idPrefix: `run${state.runCount}`,
  };
  replace(byId("stage-nav"), h("ol", {}, stages.map((s) =>
    h("li", {}, h("a", { href: `#stage-${s.id}` }, s.id)))));
  const cards = byId("stage-cards");
  cards.classList.remove("stale");
  replace(cards, stages.map((s) => stageCard(s, ctx)));
}

// ---- copy panel sizes -------------------------------------------------------------------------

function copySizes() {
  const config = currentConfig();
  if (positiveInt(config.d_in) && positiveInt(config.d_out) && config.d_in <= 4096 && config.d_out <= 4096) {
    return { d_in: config.d_in, d_out: config.d_out };
  }
  return null;
}

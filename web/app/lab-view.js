// The widget's controller: set up one of the book's five attention classes slot by slot (or paste a
// call), see the derived sizes and every diagnostic before running, pick tokens, predict, run, and
// read every stage. One instance per <attention-lab> element; everything it touches lives in that
// element's shadow root. Uses only the library facade (handed in as `lab`).
import { h, finder, nextPaint, replace } from "./dom.js";
import { S } from "./strings.js";
import { bytesText, callArgText, callText, f32Text, mib, pyValue, shapeText, slotValueFromText, thousands } from "./format.js";
import { DEFAULTS, GRID_MAX, readUrlState, writeUrlState } from "./url-state.js";
import { PANELS } from "./template.js";
import { renderTrace } from "./tensor-view.js";
import { loadWhenNeeded } from "./lazy-panel.js";
import { pythonCode } from "./python-code.js";
import { consequence } from "./consequences.js";
import { Runner, estimateBytes, PAGE_BUDGET_BYTES } from "./runner.js";

const MAX_SEED = Number.MAX_SAFE_INTEGER;
const MAX_TOKENS = 4096;

/** Slot texts every widget starts from (switching class keeps every value with the same name). */
const SLOT_START = { d_in: "3", d_out: "2", context_length: "6", dropout: "0.0", num_heads: "2", qkv_bias: "False" };

/** Every class's presets, as the core gives them (the page keeps no copy), with the class they set, in the core's order. */
export function presetsOf(lab) {
  const all = lab.classes.flatMap((className) => lab.describe(className).class.presets.map((p) => ({ ...p, className, source: p.tokens })));
  return all.sort((a, b) => a.order - b.order);
}

/** Controls that `locked="..."` may name besides the slots. */
export const LOCKABLE = ["class", "seed", "tokens", "batch", "mode"];

export class LabView {
  /**
   * @param root     the shadow root holding buildSkeleton()'s markup
   * @param host     the <attention-lab> element (events and data-* status go on it)
   * @param lab      the AttentionLab facade
   * @param options  {initial: partial state, problems, locked: Set, hidden: Set, urlState: boolean, autorun: boolean, workerUrl}
   */
  constructor(root, host, lab, options) {
    this.root = root;
    this.host = host;
    this.lab = lab;
    this.$ = finder(root);
    this.locked = options.locked ?? new Set();
    this.hidden = options.hidden ?? new Set();
    this.urlState = Boolean(options.urlState);
    this.autorun = options.autorun !== false;
    this.runner = new Runner(lab, options.workerUrl);
    this.state = {
      className: DEFAULTS.className,
      slotTexts: { ...SLOT_START },
      seed: DEFAULTS.seed,
      source: DEFAULTS.source,
      tokens: DEFAULTS.tokens,
      count: DEFAULTS.count,
      custom: null,
      batch: DEFAULTS.batch,
      training: DEFAULTS.training,
      prediction: "",
      quiz: false,
      parsed: null,
      runError: null,
      lastRun: null,
      running: false,
      blocked: true,
    };
    this.applyPartial(options.initial ?? {});
    this.lastPush = 0;
    this.gridKey = "";
  }

  /** Merges a partial state (from the URL or attributes) into the state. */
  applyPartial(p) {
    const s = this.state;
    for (const key of ["className", "seed", "source", "tokens", "count", "custom", "batch", "training"]) {
      if (p[key] !== undefined) s[key] = p[key];
    }
    if (p.slotTexts) s.slotTexts = { ...s.slotTexts, ...p.slotTexts };
    if (s.custom && !s.custom.words) {
      const w = s.tokens.trim().split(/\s+/).filter(Boolean);
      s.custom.words = w.length === s.custom.rows ? w : null;
    }
  }

  /** A lazily loaded panel is in: keep it and draw it (and the code view it adds to) from the state. */
  panelLoaded(name, panel) {
    this[name] = panel;
    this.update();
    this.$(name).dataset.loaded = "true";
  }

  async start(problems = [], call = null) {
    const s = this.state;
    this.showNotices(problems);
    for (const name of PANELS) {
      const panel = this.root.querySelector(`[data-panel=${name}]`);
      if (panel) panel.hidden = this.hidden.has(name);
    }
    this.buildClassSelect();
    this.buildPresets();
    this.buildSlots();
    this.wire();
    let firstOutput;
    const idle = new Promise((resolve) => (firstOutput = resolve));
    this.lazyPanels = [
      loadWhenNeeded(this.$("compare"), () => import("./compare-panel.js").then((m) => this.panelLoaded("compare", m.setupComparePanel(this))), idle),
      loadWhenNeeded(this.$("checkpoint"), () => import("./checkpoint-panel.js").then((m) => this.panelLoaded("checkpoint", m.setupCheckpointPanel(this))), idle),
    ];
    this.syncControls();
    if (call) {
      this.$("call-box").value = call;
      this.onCallEdit(call, false);
    } else this.writeGeneratedCall();
    this.update();
    this.keepUrl(this.urlState);
    if (this.autorun && !s.blocked && this.isQuick()) await this.run();
    firstOutput();
    this.host.dataset.ready = "true";
  }

  /** The element left the page: the run and the worker stop, and nothing outside the widget holds it. */
  stop() {
    this.runner.close();
    for (const panel of this.lazyPanels ?? []) panel.stop();
    this.keepUrl(false);
  }

  /** Back on the page after stop(): panels not loaded yet wait again; the worker starts when needed. */
  resume(urlState) {
    this.runner.open();
    for (const panel of this.lazyPanels ?? []) panel.resume();
    this.keepUrl(urlState);
  }

  /** Keeps this widget's state in the page URL, following back/forward (or stops doing so). */
  keepUrl(on) {
    this.urlState = on;
    this.onPopState ??= () => this.restoreFromUrl();
    window.removeEventListener("popstate", this.onPopState);
    if (!on) return;
    history.replaceState(null, "", this.urlQuery());
    window.addEventListener("popstate", this.onPopState);
  }

  showNotices(problems) {
    const status = this.$("status");
    const notices = problems.map((p) => (p.key === "class" ? S.urlBadClass(p.value) : S.urlBadValue(p.key)));
    status.textContent = notices.join(" ");
    status.classList.toggle("status-warning", notices.length > 0);
  }

  // ---- building -------------------------------------------------------------------------------

  buildClassSelect() {
    const select = this.$("class-select");
    replace(select, this.lab.classes.map((name) => h("option", { value: name }, name)));
    select.disabled = this.locked.has("class");
  }

  buildPresets() {
    const anyLock = this.locked.size > 0;
    replace(this.$("preset-buttons"), presetsOf(this.lab).map((p) =>
      h("button", {
        type: "button", class: "preset", title: `${S.presetTitles[p.key] ?? p.key}: ${p.note}`, part: "button",
        disabled: anyLock, dataset: { preset: p.key, testid: `preset-${p.key}` },
        on: { click: () => this.applyPreset(p) },
      }, S.presets[p.key] ?? p.key)));
    if (anyLock) this.$("presets-hint").textContent = S.presetsLocked;
  }

  /** Required slots the reader has no text for yet start from the class's first preset (the core's). */
  startEmptySlots() {
    const s = this.state;
    const preset = this.lab.describe(s.className).class?.presets[0];
    for (const spec of this.lab.slots(s.className)) {
      const empty = String(s.slotTexts[spec.name] ?? "").trim() === "";
      if (empty && spec.default === undefined && preset?.slots[spec.name] !== undefined) s.slotTexts[spec.name] = preset.slots[spec.name];
    }
  }

  /** Rebuilds the slot cards for the current class (only when the class changes). */
  buildSlots() {
    const specs = this.lab.slots(this.state.className);
    replace(this.$("slot-fields"), specs.map((spec) => {
      const id = `slot-${spec.name}`;
      const locked = this.locked.has(spec.name);
      const control = spec.type === "bool"
        ? h("select", { id, part: "input", dataset: { testid: id, slotInput: spec.name } },
          h("option", { value: "False" }, "False"), h("option", { value: "True" }, "True"))
        : h("input", {
          id, type: "text", inputmode: spec.type === "int" ? "numeric" : "decimal", part: "input",
          autocomplete: "off", spellcheck: "false", dataset: { testid: id, slotInput: spec.name },
        });
      control.setAttribute("aria-describedby", `${id}-doc ${id}-so ${id}-diag`);
      if (locked) {
        if (spec.type === "bool") control.disabled = true;
        else control.readOnly = true;
        control.dataset.locked = "true";
      }
      control.addEventListener(spec.type === "bool" ? "change" : "input", () => this.onSlotEdit(spec.name, control.value));
      const meta = [S.slotTypes[spec.type] ?? spec.type, spec.default === undefined ? S.slotRequired : S.slotDefault(pyValue(spec.default, spec.type))];
      return h("div", { class: `slot${locked ? " is-locked" : ""}`, dataset: { slot: spec.name, position: spec.position } },
        h("div", { class: "slot-head" },
          h("span", { class: "slot-pos", title: S.slotPosition(spec.position) },
            h("span", { class: "sr-only" }, S.slotWord), String(spec.position)),
          h("label", { for: id }, h("code", {}, spec.name)),
          h("span", { class: "slot-meta" }, meta.join(" · ")),
          locked ? h("span", { class: "slot-lock", title: S.slotLockedNote }, S.slotLocked) : null),
        control,
        h("p", { id: `${id}-doc`, class: "slot-doc" }, spec.doc),
        h("p", { id: `${id}-so`, class: "slot-so", dataset: { testid: `${id}-so` } }),
        h("div", { id: `${id}-diag`, class: "slot-diagnostics", dataset: { slotDiagnostics: spec.name }, "aria-live": "polite" }));
    }));
    const lockedSlots = specs.filter((s) => this.locked.has(s.name)).map((s) => s.name);
    const box = this.$("call-box");
    box.readOnly = lockedSlots.length > 0 || this.locked.has("class");
    if (box.readOnly) this.$("call-hint").textContent = S.callLocked([...lockedSlots, ...(this.locked.has("class") ? ["class"] : [])].join(", "));
  }

  wire() {
    const $ = this.$;
    const s = this.state;
    $("class-select").addEventListener("change", (e) => {
      s.className = e.target.value;
      this.startEmptySlots();
      this.buildSlots();
      this.syncControls();
      this.writeGeneratedCall();
      this.edited(true);
    });
    $("call-box").addEventListener("input", (e) => this.onCallEdit(e.target.value));
    for (const radio of this.root.querySelectorAll("input[name=source]")) {
      radio.addEventListener("change", () => {
        s.source = radio.value;
        if (s.source === "custom" && !s.custom) this.startCustomGrid();
        this.edited(true);
      });
    }
    $("sentence").addEventListener("input", (e) => {
      s.tokens = e.target.value;
      if (s.source !== "sentence") {
        s.source = "sentence";
        this.syncControls();
      }
      this.edited();
    });
    $("count").addEventListener("input", (e) => {
      s.count = e.target.value;
      if (s.source !== "random") {
        s.source = "random";
        this.syncControls();
      }
      this.edited();
    });
    $("fill-context").addEventListener("click", () => {
      const ctx = this.currentConfig().context_length;
      if (!positiveInt(ctx)) return;
      s.count = String(Math.min(ctx, MAX_TOKENS));
      s.source = "random";
      this.syncControls();
      this.edited(true);
    });
    $("batch").addEventListener("change", (e) => { s.batch = Number(e.target.value); this.edited(true); });
    $("seed").addEventListener("input", (e) => { s.seed = e.target.value; this.edited(); });
    for (const radio of this.root.querySelectorAll("input[name=mode]")) {
      radio.addEventListener("change", () => { s.training = radio.value === "train"; this.edited(true); });
    }
    $("prediction").addEventListener("input", (e) => { s.prediction = e.target.value; this.renderPrediction(); });
    $("quiz").addEventListener("change", (e) => {
      s.quiz = e.target.checked;
      s.quizFrom = Number(this.host.dataset.runs ?? 0); // hidden until the next run
      this.update();
    });
    $("run").addEventListener("click", () => this.run());
    $("cancel").addEventListener("click", () => this.runner.cancel());
    $("code-copy").addEventListener("click", () => this.copyCode());
    for (const name of ["seed", "batch"]) if (this.locked.has(name)) lock($(name));
    if (this.locked.has("mode")) for (const r of this.root.querySelectorAll("input[name=mode]")) r.disabled = true;
    if (this.locked.has("tokens")) {
      for (const r of this.root.querySelectorAll("input[name=source]")) r.disabled = true;
      lock($("sentence"));
      lock($("count"));
      $("fill-context").disabled = true;
    }
  }

  /** Puts the state into every control (start-up, class change, presets, back/forward). */
  syncControls() {
    const $ = this.$;
    const s = this.state;
    $("class-select").value = s.className;
    for (const spec of this.lab.slots(s.className)) {
      const control = $(`slot-${spec.name}`);
      const text = s.slotTexts[spec.name] ?? "";
      if (spec.type === "bool") control.value = slotValueFromText(text, "bool") === true ? "True" : "False";
      else control.value = text;
    }
    $(`source-${s.source}`).checked = true;
    if (s.source === "custom") $("grid-details").open = true;
    $("sentence").value = s.tokens;
    $("count").value = s.count;
    $("batch").value = String(s.batch);
    $("seed").value = s.seed;
    $(s.training ? "mode-train" : "mode-eval").checked = true;
    $("prediction").value = s.prediction;
    $("quiz").checked = s.quiz;
  }

  // ---- editing --------------------------------------------------------------------------------

  onSlotEdit(name, text) {
    if (this.locked.has(name)) return;
    this.state.slotTexts[name] = text;
    this.writeGeneratedCall();
    this.edited();
  }

  /**
   * Rewrites the call box from the slots and parses it, so slots and call box share one reading of
   * the values (an int slot written 3.0 is a float to Python, as in the call box). Slot text that
   * would change the call's structure (commas, parentheses, "=") is converted directly instead.
   */
  writeGeneratedCall() {
    const call = this.generatedCall();
    this.$("call-box").value = call;
    const specs = this.lab.slots(this.state.className);
    const safe = specs.every((spec) => !/[,()=#'"\\\n]/.test(String(this.state.slotTexts[spec.name] ?? "")));
    this.state.parsed = safe ? this.lab.parseCall(call) : null;
  }

  onCallEdit(text, interactive = true) {
    const s = this.state;
    const parsed = this.lab.parseCall(text);
    s.parsed = parsed;
    if (parsed.className && this.lab.classes.includes(parsed.className)) {
      if (parsed.className !== s.className && !this.locked.has("class")) {
        s.className = parsed.className;
        this.buildSlots();
      }
      for (const spec of this.lab.slots(s.className)) {
        if (this.locked.has(spec.name)) continue;
        const slot = parsed.slots.find((x) => x.name === spec.name);
        let slotText = "";
        if (slot && slot.source !== "default" && slot.text !== "") slotText = slot.text.trim();
        else if (slot && slot.value !== null && slot.value !== undefined) slotText = pyValue(slot.value, spec.type);
        s.slotTexts[spec.name] = slotText;
      }
      this.syncControls();
    }
    if (interactive) this.edited();
  }

  generatedCall() {
    return callText(this.state.className, this.lab.slots(this.state.className), this.state.slotTexts);
  }

  keywordCall() {
    const specs = this.lab.slots(this.state.className);
    const args = [];
    for (const spec of specs) {
      const raw = String(this.state.slotTexts[spec.name] ?? "").trim();
      if (raw === "") continue;
      if (spec.default !== undefined && slotValueFromText(raw, spec.type) === spec.default) continue;
      args.push(`${spec.name}=${callArgText(raw, spec.type)}`);
    }
    return `${this.state.className}(${args.join(", ")})`;
  }

  /** Any reader edit: forget a stale run error, re-derive everything, record it in the URL. */
  edited(discrete = false) {
    this.state.runError = null;
    this.update();
    this.recordUrl(discrete);
  }

  setSlot(name, text) {
    if (this.locked.has(name)) return;
    this.state.slotTexts[name] = text;
    this.syncControls();
    this.writeGeneratedCall();
    this.edited(true);
  }

  // ---- the config and the tokens ---------------------------------------------------------------

  currentConfig() {
    const s = this.state;
    if (s.parsed && s.parsed.className === s.className) return { ...s.parsed.config };
    const config = {};
    for (const spec of this.lab.slots(s.className)) {
      const value = slotValueFromText(s.slotTexts[spec.name], spec.type);
      if (value !== undefined) config[spec.name] = value;
    }
    return config;
  }

  seedValue() {
    const t = String(this.state.seed).trim();
    if (!/^\d+$/.test(t)) return null;
    const n = Number(t);
    return n <= MAX_SEED ? n : null;
  }

  countValue() {
    const t = String(this.state.count).trim();
    if (!/^\d+$/.test(t)) return null;
    const n = Number(t);
    return n >= 1 && n <= MAX_TOKENS ? n : null;
  }

  /** The token labels (words) in order; null when they cannot be known yet. */
  words() {
    const s = this.state;
    if (s.source === "book") return S.bookSentence.split(" ");
    if (s.source === "sentence") return s.tokens.trim().split(/\s+/).filter(Boolean);
    if (s.source === "random") {
      const n = this.countValue();
      return n === null ? null : Array.from({ length: n }, (_, i) => String(i));
    }
    const c = s.custom;
    if (!c) return null;
    return c.words && c.words.length === c.rows ? c.words : Array.from({ length: c.rows }, (_, i) => String(i));
  }

  /** SelfAttention_v1/_v2 take one sequence (num_tokens, d_in), with no batch axis (the library says which). */
  singleSequence(className = this.state.className) {
    return this.lab.inputShape(className, 1, 1, 1).length === 2;
  }

  inputShape(config) {
    const w = this.words();
    if (!w || !w.length || !positiveInt(config.d_in)) return null;
    const s = this.state;
    if (s.source === "book" && config.d_in !== 3) return null;
    if (s.source === "custom" && s.custom && s.custom.cols !== config.d_in) return null;
    return this.lab.inputShape(s.className, w.length, config.d_in, s.batch);
  }

  /** The (num_tokens, d_in) embeddings before batching; throws on bad custom numbers. */
  baseTokens(dIn) {
    const s = this.state;
    const lab = this.lab;
    const w = this.words();
    if (s.source === "book") return lab.bookTokens();
    if (s.source === "sentence") {
      if (typeof lab.sentenceTokens === "function") return lab.sentenceTokens(w, dIn, this.seedValue());
      return lab.seededTokens(w.length, dIn, this.seedValue());
    }
    if (s.source === "random") return lab.seededTokens(w.length, dIn, this.seedValue());
    const c = s.custom;
    const data = new Float32Array(c.rows * c.cols);
    c.texts.forEach((row, r) => row.forEach((t, j) => { data[r * c.cols + j] = Number(t); }));
    return { shape: [c.rows, c.cols], data };
  }

  buildInput(config) {
    const base = this.baseTokens(config.d_in);
    const shape = this.inputShape(config);
    if (shape.length === 2) return { shape, data: base.data };
    const b = shape[0];
    const data = new Float32Array(b * base.data.length);
    for (let i = 0; i < b; i++) data.set(base.data, i * base.data.length); // torch.stack((inputs, inputs, ...))
    return { shape, data };
  }

  startCustomGrid() {
    const s = this.state;
    const config = this.currentConfig();
    const prev = s.source;
    const from = prev === "custom" ? "sentence" : prev;
    s.source = from;
    const w = this.words();
    let texts;
    try {
      const base = positiveInt(config.d_in) && w && w.length ? this.baseTokens(config.d_in) : null;
      if (base && base.shape[0] <= GRID_MAX && base.shape[1] <= GRID_MAX) {
        texts = Array.from({ length: base.shape[0] }, (_, r) =>
          Array.from({ length: base.shape[1] }, (_, j) => f32Text(base.data[r * base.shape[1] + j])));
      }
    } catch {
      texts = undefined;
    }
    if (!texts) texts = [["0.0", "0.0", "0.0"]];
    s.custom = { rows: texts.length, cols: texts[0].length, texts, words: w && w.length === texts.length ? w.slice() : null };
    if (s.custom.words) s.tokens = s.custom.words.join(" ");
    s.source = "custom";
    this.syncControls();
  }

  // ---- the derived view ------------------------------------------------------------------------

  update() {
    const t0 = performance.now();
    const s = this.state;
    const $ = this.$;
    const lab = this.lab;
    const specs = lab.slots(s.className);
    const slotNames = new Set(specs.map((x) => x.name));
    const config = this.currentConfig();
    const description = lab.describe(s.className, config);
    this.description = description;

    // Diagnostics: the call's own (syntax, unknown keywords), the configuration's, then the input's.
    const seen = new Set();
    const configDiags = [];
    const callDiags = [];
    const configSource = s.parsed && s.parsed.className === s.className
      ? s.parsed.diagnostics
      : [...(s.parsed?.diagnostics ?? []), ...(description.diagnostics ?? [])];
    for (const d of configSource) {
      if (seen.has(diagKey(d))) continue;
      seen.add(diagKey(d));
      ((d.slots ?? []).some((x) => slotNames.has(x)) ? configDiags : callDiags).push(d);
    }
    const shape = this.inputShape(config);
    const more = lab.check(s.className, config, shape ? { inputShape: shape, training: s.training } : { training: s.training })
      .filter((d) => !seen.has(diagKey(d)));
    const inputDiags = [];
    for (const d of more) {
      seen.add(diagKey(d));
      ((d.slots ?? []).some((x) => slotNames.has(x)) && d.code !== "too_large" ? configDiags : inputDiags).push(d);
    }

    this.renderSlotDiagnostics(specs, configDiags, config);
    replace($("call-diagnostics"), callDiags.map((d) => this.diagBox(d)));
    this.renderNamed(specs);
    $("keyword-call").textContent = this.keywordCall();
    this.renderFacts(description);
    this.renderConsequences(specs, config, description);
    const memory = shape && description.ok ? estimateBytes(this.lab, s.className, description.config, shape) : null;
    $("fact-memory").textContent = memory === null ? S.runMemoryUnknown : bytesText(memory);
    const tokenBlock = this.renderTokens(config, inputDiags, memory);

    const errors = [...configDiags, ...callDiags].filter((d) => d.severity === "error").length;
    let reason = "";
    if (errors) reason = S.reasonErrors(errors);
    else if (this.seedValue() === null) reason = S.reasonSeed;
    else if (tokenBlock) reason = tokenBlock;
    else if (inputDiags.some((d) => d.severity === "error")) reason = S.reasonInput;
    s.blocked = Boolean(reason);
    $("run").disabled = s.blocked || s.running;
    $("run-reason").textContent = reason ? S.runBlocked(reason) : S.runReady;
    $("run-reason").classList.toggle("blocked", s.blocked);
    this.renderRunError();

    if (s.lastRun) {
      const stale = this.runKey(config) !== s.lastRun.key;
      $("stage-cards").classList.toggle("stale", stale);
      $("trace-status").textContent = stale ? S.traceStale(s.lastRun.call) : s.lastRun.status;
      $("trace-status").classList.toggle("stale-note", stale);
    }
    this.renderPrediction();
    this.compare?.refresh();
    this.checkpoint?.refresh();
    this.renderCode();
    this.host.dataset.updateMs = (performance.now() - t0).toFixed(1);
  }

  renderSlotDiagnostics(specs, diags, config) {
    const bySlot = new Map(specs.map((x) => [x.name, []]));
    const pointers = new Map(specs.map((x) => [x.name, []]));
    for (const d of diags) {
      const names = d.slots.filter((x) => bySlot.has(x));
      // An error about a locked slot and an open one belongs beside the slot the reader can change.
      const home = names.find((x) => !this.locked.has(x)) ?? names[0];
      bySlot.get(home).push(this.diagBox(d));
      for (const other of names.filter((x) => x !== home)) pointers.get(other).push({ to: home, severity: d.severity });
    }
    const err = this.state.runError;
    if (err && bySlot.has(err.slot)) bySlot.get(err.slot).push(this.diagBox({ severity: "error", code: err.code, slots: [], message: err.message, hint: err.hint, pytorch: "" }));
    for (const spec of specs) {
      const container = this.$(`slot-${spec.name}-diag`);
      const boxes = bySlot.get(spec.name);
      const notes = pointers.get(spec.name).map((p) => h("p", { class: `diag-pointer diag-${p.severity}` }, S.seeSlot(p.to)));
      replace(container, boxes, notes);
      const invalid = [...boxes, ...notes].some((b) => b.classList.contains("diag-error"));
      const control = this.$(`slot-${spec.name}`);
      if (invalid) control.setAttribute("aria-invalid", "true");
      else control.removeAttribute("aria-invalid");
      container.closest(".slot").classList.toggle("has-error", invalid);
    }
  }

  diagBox(d) {
    const level = d.severity in S.diagLevels ? d.severity : "error";
    const pytorch = String(d.pytorch ?? "").trim();
    let torchLine = null;
    if (pytorch) torchLine = h("p", { class: "diag-pytorch", dataset: { testid: "diag-pytorch" } }, S.pytorchPrefix, h("code", {}, pytorch));
    else if (level === "warning") torchLine = h("p", { class: "diag-pytorch", dataset: { testid: "diag-pytorch" } }, S.pytorchSilent);
    return h("div", { class: `diag diag-${level}`, part: `diagnostic ${level}`, dataset: { code: d.code, testid: "diagnostic" } },
      h("p", { class: "diag-msg" }, h("strong", {}, `${S.diagLevels[level]}: `), d.message),
      d.hint ? h("p", { class: "diag-hint" }, d.hint) : null,
      torchLine,
      this.suggestions(d));
  }

  /** Buttons that apply the values the core offers as fixes, leaving out slots the reader cannot change. */
  suggestions(d) {
    const fixes = (d.fixes ?? []).filter((f) => !this.locked.has(f.slot)).map((f) => [f.slot, f.value]);
    if (!fixes.length) return null;
    return h("p", { class: "diag-fixes" }, h("span", {}, `${S.tryValues} `),
      fixes.map(([slot, v]) => h("button", {
        type: "button", class: "small fix", part: "button", dataset: { testid: "fix", slot, value: String(v) },
        on: { click: () => this.setSlot(slot, String(v)) },
      }, S.fixTo(slot, v))));
  }

  renderNamed(specs) {
    const s = this.state;
    const typeOf = new Map(specs.map((x) => [x.name, x.type]));
    let items;
    if (s.parsed && s.parsed.className === s.className) {
      items = specs.map((spec) => s.parsed.slots.find((x) => x.name === spec.name && x.position === spec.position)
        ?? { name: spec.name, position: spec.position, value: null, source: "missing", text: "" });
      for (const x of s.parsed.slots) if (x.position === 0) items.push(x); // a loop: a pasted call can hold any number
    } else {
      let gap = false;
      items = specs.map((spec) => {
        const text = String(s.slotTexts[spec.name] ?? "").trim();
        if (text === "") {
          gap = true;
          return { name: spec.name, position: spec.position, value: spec.default ?? null, source: spec.default === undefined ? "missing" : "default", text: "" };
        }
        return { name: spec.name, position: spec.position, value: slotValueFromText(text, spec.type), source: gap ? "keyword" : "positional", text: callArgText(text, spec.type) };
      });
    }
    replace(this.$("named-values"), items.map((item) => {
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

  renderFacts(d) {
    const $ = this.$;
    const hide = this.state.quiz && !this.predictionRevealed();
    $("fact-headdim").textContent = d.headDim != null ? String(d.headDim) : "—";
    $("fact-width").textContent = hide ? S.outputHidden : d.outputWidth != null ? String(d.outputWidth) : "—";
    $("fact-width").classList.toggle("concealed", hide);
    $("fact-rule").textContent = hide ? "…" : d.outputWidthRule || "—";
    if (d.maskBytes) {
      const n = Math.round(Math.sqrt(d.maskBytes / 4));
      $("fact-mask").textContent = S.maskBytes(n, bytesText(d.maskBytes));
    } else {
      $("fact-mask").textContent = d.maskBytes === 0 ? S.noMask : "—";
    }
    // What a KV cache of this module holds per token, against multi-head attention of the same width.
    $("fact-kv").textContent = d.kvCacheBytesPerToken != null
      ? S.kvCache(d.keyValueHeads, d.headDim, bytesText(d.kvCacheBytesPerToken), bytesText(d.kvCacheBytesPerTokenMha), d.kvCacheBytesPerTokenMha / d.kvCacheBytesPerToken)
      : "—";
    const params = d.parameters ?? [];
    replace($("params-body"), params.map((p) =>
      h("tr", {}, h("th", { scope: "row" }, h("code", {}, p.name)), h("td", {}, shapeText(p.shape)), h("td", { class: "num" }, thousands(p.count)))));
    $("param-total").textContent = d.parameterCount != null ? thousands(d.parameterCount) : "—";
    $("facts-unavailable").hidden = Boolean(d.parameters);
    $("params-table").closest(".table-scroll").hidden = !d.parameters;
  }

  /** One line under each slot: what its current value leads to. */
  renderConsequences(specs, config, d) {
    const hide = this.state.quiz && !this.predictionRevealed();
    for (const spec of specs) {
      const text = d.ok ? consequence(spec.name, this.state.className, d.config, d, this.state.training, hide) : "";
      const node = this.$(`slot-${spec.name}-so`);
      node.textContent = text ? S.consequenceLabel + text : "";
      node.hidden = !text;
    }
  }

  /** Updates the token controls; returns the reason the tokens block a run, or "". */
  renderTokens(config, inputDiags, memory) {
    const $ = this.$;
    const s = this.state;
    const single = this.singleSequence();
    $("batch").disabled = single || this.locked.has("batch");
    $("batch-note").textContent = single ? S.batchDisabled : S.batchNote;
    const w = this.words();
    $("word-count").textContent = s.source === "sentence" ? S.wordCount(w.length) : "";
    const ctx = config.context_length;
    $("count-hint").textContent = S.countHint(!single && positiveInt(ctx) ? ctx : null);
    const fill = $("fill-context");
    fill.hidden = single || !positiveInt(ctx);
    if (positiveInt(ctx)) fill.textContent = S.fillContext(Math.min(ctx, MAX_TOKENS));
    const items = [];
    let block = "";
    if (s.source === "book" && typeof config.d_in === "number" && config.d_in !== 3) {
      block = S.reasonBookDin;
      items.push(h("div", { class: "diag diag-error", dataset: { code: "book_tokens_width", testid: "diagnostic" } },
        h("p", { class: "diag-msg" }, S.bookNeedsDin3(config.d_in)),
        this.locked.has("tokens") ? null : h("button", { type: "button", class: "small", part: "button", dataset: { testid: "use-seeded" }, on: { click: () => {
          s.source = "sentence";
          this.syncControls();
          this.edited(true);
        } } }, S.useSeeded)));
    }
    if (s.source === "custom" && s.custom && typeof config.d_in === "number" && config.d_in !== s.custom.cols) {
      block = S.reasonCustomShape;
      items.push(h("div", { class: "diag diag-error", dataset: { code: "grid_width", testid: "diagnostic" } },
        h("p", { class: "diag-msg" }, S.customNeedsShape(s.custom.rows, s.custom.cols, config.d_in)),
        h("button", { type: "button", class: "small", part: "button", on: { click: () => {
          s.tokens = (s.custom.words ?? []).join(" ") || s.tokens;
          s.source = "sentence";
          this.syncControls();
          this.edited(true);
        } } }, S.useSeeded)));
    }
    if (s.source === "sentence" && w.length === 0) block = S.reasonNoWords;
    if (s.source === "random" && w === null) block = S.reasonCount;
    const seedOk = this.seedValue() !== null;
    $("seed-error").hidden = seedOk;
    setInvalid($("seed"), !seedOk);
    setInvalid($("count"), s.source === "random" && w === null);
    const badCells = this.renderGrid(config);
    if (badCells) {
      block ||= S.reasonGrid;
      items.push(h("div", { class: "diag diag-error", dataset: { code: "grid_value", testid: "diagnostic" } }, h("p", { class: "diag-msg" }, S.gridBad(badCells))));
    }
    if (memory !== null && memory > PAGE_BUDGET_BYTES) {
      block ||= S.reasonMemory;
      items.push(h("div", { class: "diag diag-error", dataset: { code: "page_memory", testid: "diagnostic" } },
        h("p", { class: "diag-msg" }, S.memoryOver(mib(memory), mib(PAGE_BUDGET_BYTES)))));
    } else if (memory !== null && this.runner.usesWorker(memory)) {
      this.runner.warm({ className: this.state.className, config: this.description.config });  // so Run does not wait for the worker
      items.push(h("div", { class: "diag diag-info", dataset: { code: "large_run", testid: "diagnostic" } }, h("p", { class: "diag-msg" }, S.memoryLarge(mib(memory)))));
    }
    for (const d of inputDiags) items.push(this.diagBox(d));
    replace($("token-diagnostics"), items);
    return block;
  }

  /** The editable embedding grid; returns how many cells do not hold a number. */
  renderGrid(config) {
    const s = this.state;
    const box = this.$("embedding-grid");
    let texts = null;
    let words = this.words();
    if (s.source === "custom" && s.custom) {
      texts = s.custom.texts;
      words = this.words();
    } else if (positiveInt(config.d_in) && words && words.length && this.seedValue() !== null
      && words.length <= GRID_MAX && config.d_in <= GRID_MAX && !(s.source === "book" && config.d_in !== 3)) {
      try {
        const base = this.baseTokens(config.d_in);
        texts = Array.from({ length: base.shape[0] }, (_, r) =>
          Array.from({ length: base.shape[1] }, (_, j) => f32Text(base.data[r * base.shape[1] + j])));
      } catch {
        texts = null;
      }
    }
    const key = texts ? `${s.source}|${texts.length}x${texts[0].length}|${s.source === "custom" ? "" : texts.flat().join(",")}|${(words ?? []).join(" ")}` : `none|${words?.length}|${config.d_in}`;
    let bad = 0;
    if (texts) for (const row of texts) for (const t of row) if (!isNumberText(t)) bad++;
    if (key === this.gridKey) return bad;
    this.gridKey = key;
    const focused = this.root.activeElement?.dataset?.cell;
    if (!texts) {
      const n = words?.length ?? 0;
      replace(box, h("p", { class: "muted" }, n && positiveInt(config.d_in) ? S.gridTooLarge(n, config.d_in) : S.factsUnavailable));
      return bad;
    }
    const rows = texts.length;
    const cols = texts[0].length;
    const locked = this.locked.has("tokens");
    const table = h("table", { class: "grid edit-grid", dataset: { testid: "embedding-grid" } },
      h("caption", {}, S.gridCaption(rows, cols)),
      h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "corner" }, "num_tokens ╲ d_in"),
        Array.from({ length: cols }, (_, j) => h("th", { scope: "col" }, String(j))))),
      h("tbody", {}, texts.map((row, r) => {
        const word = words && words[r] !== undefined ? words[r] : String(r);
        return h("tr", {}, h("th", { scope: "row" }, word), row.map((t, j) => {
          const input = h("input", {
            type: "text", inputmode: "decimal", value: t, "aria-label": S.gridCell(word, j), readonly: locked,
            class: "cell-input", part: "input", dataset: { cell: `${r}-${j}`, testid: `cell-${r}-${j}` },
          });
          if (!isNumberText(t)) input.setAttribute("aria-invalid", "true");
          input.addEventListener("input", () => this.onCellEdit(r, j, input.value, input));
          return h("td", {}, input);
        }));
      })));
    replace(box, h("div", { class: "table-scroll" }, table));
    if (focused) {
      const again = box.querySelector(`[data-cell="${focused}"]`);
      if (again) {
        again.focus();
        const end = again.value.length;
        again.setSelectionRange(end, end);
      }
    }
    return bad;
  }

  onCellEdit(r, j, text, input) {
    const s = this.state;
    if (s.source !== "custom" || !s.custom) {
      const w = this.words();
      const config = this.currentConfig();
      const base = this.baseTokens(config.d_in);
      const texts = Array.from({ length: base.shape[0] }, (_, i) =>
        Array.from({ length: base.shape[1] }, (_, k) => f32Text(base.data[i * base.shape[1] + k])));
      s.custom = { rows: texts.length, cols: texts[0].length, texts, words: w.slice() };
      s.tokens = w.join(" ");
      s.source = "custom";
      this.$("source-custom").checked = true;
      // The grid is keyed on the source: keep this very input on screen while the reader types.
      this.gridKey = `custom|${texts.length}x${texts[0].length}||${w.join(" ")}`;
    }
    s.custom.texts[r][j] = text;
    setInvalid(input, !isNumberText(text));
    this.edited();
  }

  // ---- predict, then run ----------------------------------------------------------------------

  predictionRevealed() {
    const run = this.state.lastRun;
    return Boolean(run && run.key === this.runKey(this.currentConfig()) && run.seq > (this.state.quizFrom ?? -1));
  }

  renderPrediction() {
    const $ = this.$;
    const text = this.state.prediction.trim();
    const parsed = parsePrediction(text);
    $("predict-error").hidden = !text || parsed !== null;
    setInvalid($("prediction"), Boolean(text) && parsed === null);
    const run = this.state.lastRun;
    const box = $("prediction-verdict");
    if (!run || !parsed || !this.predictionRevealed()) {
      replace(box);
      return;
    }
    const shape = run.outputShape;
    const held = parsed.length === 1 ? parsed[0] === shape[shape.length - 1] : parsed.length === shape.length && parsed.every((v, i) => v === shape[i]);
    const why = [S.predictWhyWidth(run.rule)];
    const width = parsed[parsed.length - 1];
    const cfg = run.config;
    if (!held) {
      const heads = this.lab.describe(run.className).class.heads;  // how the class makes heads: the core's fact
      if (heads === "modules" && width === cfg.d_out && cfg.num_heads > 1) why.push(S.predictWhyWrapper);
      else if (heads === "fused" && width === run.headDim && cfg.num_heads > 1) why.push(S.predictWhyHeadDim);
      else if (heads === "fused" && width === cfg.d_out * cfg.num_heads && cfg.num_heads > 1) why.push(S.predictWhyFused);
      if (parsed.length > 1) {
        if (shape.length === 3 && parsed[0] !== shape[0]) why.push(S.predictWhyBatch(shape[0]));
        if (shape.length === 2 && parsed.length === 3) why.push(S.predictWhyNoBatch);
        const tokenAxis = shape.length - 2;
        if (parsed.length === shape.length && parsed[tokenAxis] !== shape[tokenAxis]) why.push(S.predictWhyTokens(shape[tokenAxis]));
      }
    }
    const predText = parsed.length === 1 ? String(parsed[0]) : shapeText(parsed);
    replace(box, h("div", { class: `verdict ${held ? "agree" : "disagree"}`, dataset: { testid: "prediction-result", held: String(held) } },
      h("p", {}, held ? S.predictHeld(shapeText(shape)) : S.predictMissed(predText, shapeText(shape))),
      why.map((w) => h("p", { class: "verdict-why" }, w))));
  }

  // ---- presets ---------------------------------------------------------------------------------

  applyPreset(p) {
    const s = this.state;
    Object.assign(s.slotTexts, p.slots);
    s.className = p.className;
    s.source = p.source;
    s.batch = p.batch;
    s.seed = DEFAULTS.seed;
    s.training = true;
    this.buildSlots();
    this.syncControls();
    this.writeGeneratedCall();
    this.edited(true);
    if (!s.blocked) return this.run();
    return undefined;
  }

  // ---- run -------------------------------------------------------------------------------------

  runKey(config) {
    const s = this.state;
    const tokens = s.source === "sentence" ? s.tokens : s.source === "random" ? s.count : s.source === "custom" ? JSON.stringify(s.custom?.texts) : "";
    return JSON.stringify([s.className, config, s.seed, s.source, tokens, this.singleSequence() ? 1 : s.batch, s.training]);
  }

  /** True when a run of the current setup is small enough to start by itself (on load, back/forward). */
  isQuick() {
    const d = this.description;
    const shape = d?.ok ? this.inputShape(this.currentConfig()) : null;
    return Boolean(shape) && estimateBytes(this.lab, this.state.className, d.config, shape) < 64 * 1048576;
  }

  async run() {
    const s = this.state;
    const $ = this.$;
    if (s.blocked || s.running) return;
    s.running = true;
    const t0 = performance.now();
    const config = this.currentConfig();
    const described = this.description;
    const call = $("call-box").value.trim() || this.generatedCall();
    s.runError = null;
    $("run").disabled = true;
    const key = this.runKey(config);
    let result;
    const progress = this.startProgress();
    try {
      const x = this.buildInput(config);
      result = await this.runner.run({ className: s.className, config, x, seed: this.seedValue(), training: s.training }, described.config);
      this.host.dataset.computeMs = (performance.now() - t0).toFixed(1);  // the forward (and, for big runs, the worker) alone
    } catch (err) {
      progress.stop();
      s.running = false;
      if (err?.code === "cancelled") {
        $("trace-status").textContent = S.cancelled;
      } else {
        s.runError = { code: err?.code ?? "error", slot: err?.slot ?? "", message: err?.message ?? String(err), hint: err?.hint ?? "" };
        this.host.dispatchEvent(new CustomEvent("run-error", { bubbles: true, composed: true, detail: { ...s.runError } }));
      }
      this.runFinished();
      this.update();
      return;
    }
    const w = this.words();
    const tokensText = s.source === "book" ? S.tokensBook(S.bookSentence)
      : s.source === "sentence" ? S.tokensSentence(w.join(" "))
        : s.source === "random" ? S.tokensRandom(w.length) : S.tokensCustom(w.length);
    const batchText = this.singleSequence() ? "" : S.batchSuffix(s.batch);
    const status = S.traceFor(call, tokensText + batchText, s.training ? S.modeNames.train : S.modeNames.eval);
    s.lastRun = {
      key, call, status, className: s.className, config: described.config, rule: described.outputWidthRule,
      headDim: described.headDim, outputShape: result.output.shape, trace: result.trace, words: w,
      seed: this.seedValue(), training: s.training, source: s.source, batch: this.singleSequence() ? 1 : s.batch,
      seq: Number(this.host.dataset.runs ?? 0) + 1,
    };
    const ctx = {
      words: w,
      className: s.className,
      heads: described.class.heads,
      queryHeads: described.config.num_heads,
      config: described.config,
      dropout: described.config.dropout ?? 0,
      training: s.training,
      headDim: described.headDim,
      output: { width: described.outputWidth, rule: described.outputWidthRule },
      warnings: result.warnings ?? [],
      idPrefix: `run${Number(this.host.dataset.runs ?? 0) + 1}`,
      host: this.host,
      labName: this.root.getElementById("lab-name").textContent ? ` ${this.root.getElementById("lab-name").textContent}` : "",
    };
    $("stage-cards").classList.remove("stale");
    await renderTrace($("stage-nav"), $("stage-cards"), result.trace, ctx, (i, n) => progress.rendering(i, n));
    progress.stop();
    s.running = false;
    this.host.dataset.runMs = (performance.now() - t0).toFixed(1);
    this.runFinished();
    this.update();
    this.host.dispatchEvent(new CustomEvent("run-complete", {
      bubbles: true, composed: true,
      detail: {
        className: s.className, config: { ...described.config }, pythonCall: described.pythonCall, training: s.training,
        outputShape: result.output.shape.slice(), output: result.output, stages: result.trace.map((st) => st.id),
        durationMs: performance.now() - t0,
      },
    }));
  }

  /** Shows a progress bar and the elapsed time once a run has taken 200 ms. */
  startProgress() {
    const $ = this.$;
    const box = $("progress");
    const t0 = performance.now();
    let phase = null;
    const tick = () => {
      const elapsed = performance.now() - t0;
      if (elapsed < 200) return;
      box.hidden = false;
      $("progress-text").textContent = phase ?? S.runningFor((elapsed / 1000).toFixed(1));
      $("cancel").hidden = phase !== null || !this.runner.busy;
    };
    const timer = setInterval(tick, 100);
    $("run").textContent = S.running;
    return {
      rendering: (i, n) => {
        phase = S.rendering(i, n);
        tick();
      },
      stop: () => {
        clearInterval(timer);
        box.hidden = true;
        $("run").textContent = S.runButton;
      },
    };
  }

  /** Marks a finished run on the host element (data-runs counts them) for anyone waiting on it. */
  runFinished() {
    this.host.dataset.runs = String(Number(this.host.dataset.runs ?? 0) + 1);
  }

  renderRunError() {
    const box = this.$("run-error");
    const err = this.state.runError;
    if (!err) {
      replace(box);
      return;
    }
    replace(box, h("div", { class: "diag diag-error", part: "diagnostic error", dataset: { code: err.code, testid: "diagnostic" } },
      h("p", { class: "diag-msg" }, h("strong", {}, `${S.runError}: `), err.message),
      err.hint ? h("p", { class: "diag-hint" }, err.hint) : null,
      err.slot ? h("p", { class: "diag-hint" }, S.seeSlot(err.slot)) : null));
  }

  // ---- code view -------------------------------------------------------------------------------

  renderCode() {
    const s = this.state;
    const d = this.description;
    const config = this.currentConfig();
    let text = S.codeNoRun;
    if (d?.ok && !s.blocked) {
      let tokens = null;
      if (s.source === "custom") tokens = s.custom.texts;
      else if (s.source === "book") tokens = gridTexts(this.lab.bookTokens());
      text = pythonCode({
        className: s.className, pythonName: d.class.pythonName, pythonCall: d.pythonCall, config: d.config, seed: this.seedValue(), source: s.source,
        words: this.words(), tokens, sentenceTokens: typeof this.lab.sentenceTokens === "function",
        batch: this.singleSequence() ? 0 : s.batch, training: s.training, outputShape: this.inputShape(config) ? outputShape(this.inputShape(config), d.outputWidth) : null,
        extra: this.compare?.code() ?? "",
      });
    }
    this.$("code-view").textContent = text;
  }

  async copyCode() {
    const text = this.$("code-view").textContent;
    const status = this.$("code-copy-status");
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = S.codeCopied;
    } catch {
      const range = document.createRange();
      range.selectNodeContents(this.$("code-view"));
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      status.textContent = S.codeCopyFailed;
    }
  }

  // ---- URL state -------------------------------------------------------------------------------

  urlQuery() {
    return writeUrlState(this.state, this.lab.slots(this.state.className));
  }

  /** Typing replaces the current history entry; a discrete change (or a pause) adds one. */
  recordUrl(discrete) {
    if (!this.urlState) return;
    const query = this.urlQuery();
    if (query === location.search) return;
    const now = performance.now();
    if (discrete || now - this.lastPush > 1500) history.pushState(null, "", query);
    else history.replaceState(null, "", query);
    this.lastPush = now;
  }

  async restoreFromUrl() {
    const { state: fromUrl, problems } = readUrlState(location.search, this.lab.classes);
    const s = this.state;
    Object.assign(s, {
      className: DEFAULTS.className, seed: DEFAULTS.seed, source: DEFAULTS.source, tokens: DEFAULTS.tokens, count: DEFAULTS.count,
      custom: null, batch: DEFAULTS.batch, training: DEFAULTS.training, slotTexts: { ...SLOT_START }, runError: null,
    });
    this.applyPartial(fromUrl);
    this.showNotices(problems);
    this.buildSlots();
    this.syncControls();
    this.writeGeneratedCall();
    this.update();
    if (s.lastRun && !s.blocked && this.isQuick()) await this.run();
  }
}

// ---- helpers --------------------------------------------------------------------------------------

function positiveInt(v) {
  return typeof v === "number" && Number.isInteger(v) && v > 0;
}

function isNumberText(t) {
  return /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(String(t)) && Number.isFinite(Number(t));
}

function setInvalid(node, invalid) {
  if (invalid) node.setAttribute("aria-invalid", "true");
  else node.removeAttribute("aria-invalid");
}

function lock(node) {
  if (node.tagName === "SELECT") node.disabled = true;
  else node.readOnly = true;
}

function diagKey(d) {
  return `${d.code}|${(d.slots ?? []).join(",")}|${d.message}`;
}

function gridTexts(t) {
  return Array.from({ length: t.shape[0] }, (_, r) => Array.from({ length: t.shape[1] }, (_, j) => f32Text(t.data[r * t.shape[1] + j])));
}

function outputShape(inputShape, width) {
  return [...inputShape.slice(0, -1), width];
}

/** "(2, 6, 2)", "2, 6, 2", "[2,6,2]", "torch.Size([2, 6, 2])" or "2" -> [2, 6, 2] / [2]; null when unreadable. */
export function parsePrediction(text) {
  const t = text.trim().replace(/^torch\.Size\s*/, "");
  if (!t) return null;
  const inner = t.replace(/^[([]+/, "").replace(/[)\]]+$/, "").trim();
  const parts = inner.split(",").map((p) => p.trim()).filter((p, i, all) => p !== "" || i < all.length - 1);
  if (!parts.length || parts.length > 4 || parts.some((p) => !/^\d{1,7}$/.test(p))) return null;
  return parts.map(Number);
}

// The widget's app: one state, one setState, one render path. One instance per <attention-lab>
// element; everything it touches lives in that element's shadow root, and it reaches the engine only
// through the library facade (handed in as `lab`).
//
// Each panel (setup, facts, tokens, predict, run, code, url; compare and checkpoint load later) is made
// by its module from this app, and gets:
//   app.state            the state (read it; never write it)
//   app.derived          what follows from the state, computed once per render (derive() below)
//   app.setState(patch, {edit, discrete})   the only way to change the state; one render follows
//   app.lab, app.$, app.root, app.host, app.locked, app.runner, app.run()
// and returns {render(derived)} (plus code() when it adds lines to the code view). Panels do not
// touch each other's nodes or fields.
import { finder } from "./dom.js";
import { S } from "./strings.js";
import { mib } from "./format.js";
import { PANELS } from "./template.js";
import { loadWhenNeeded } from "./lazy-panel.js";
import { watchScrollBoxes } from "./scroll-cue.js";
import { Runner } from "./runner.js";
import {
  badCells, baseTokens, callPatch, currentConfig, initialState, inputShape, partialPatch, positiveInt, runKey, seedValue, slotsPatch, withEmptySlotsFilled, words,
} from "./lab-model.js";
import { setupSetupPanel } from "./setup-panel.js";
import { setupFactsPanel } from "./facts-panel.js";
import { setupTokensPanel } from "./tokens-panel.js";
import { setupPredictPanel } from "./predict-panel.js";
import { setupRunPanel } from "./run-panel.js";
import { setupCodePanel } from "./code-panel.js";
import { setupUrlPanel } from "./url-panel.js";
import { COMPACT_START, setupCompactLayout } from "./compact-layout.js";

/** Controls that `locked="..."` may name besides the slots. */
export const LOCKABLE = ["class", "seed", "tokens", "batch", "mode"];

/** A run whose estimate is under this starts by itself (on load, after an edit, back/forward). */
const QUICK_BYTES = 64 * 1048576;

export class LabApp {
  /**
   * @param root     the shadow root holding buildSkeleton()'s markup
   * @param host     the <attention-lab> element (events and data-* status go on it)
   * @param lab      the AttentionLab facade
   * @param options  {initial: partial state, held: what the URL asked of locked values (the lock notice), locked: Set, hidden: Set,
   *                 urlState: boolean, urlPrefix: string, layout: "" | "compact", autorun: boolean, workerUrl}
   */
  constructor(root, host, lab, options) {
    this.root = root;
    this.host = host;
    this.lab = lab;
    this.$ = finder(root);
    this.locked = options.locked ?? new Set();
    this.hidden = options.hidden ?? new Set();
    this.autorun = options.autorun !== false;
    this.urlOption = Boolean(options.urlState);
    this.urlPrefix = options.urlPrefix ?? "";
    this.runner = new Runner(lab, options.workerUrl);
    this.runner.onWorkerInfo = () => this.render();  // the run panel says what the worker runs on
    // In view or not (watchView): a widget out of view starts no worker and reserves no heap ahead of a run.
    this.runner.visible = typeof IntersectionObserver !== "function";
    this.state = initialState();
    Object.assign(this.state, partialPatch(this.state, options.initial ?? {}));
    this.state.held = options.held ?? [];
    this.compact = options.layout === "compact";
    if (this.compact) Object.assign(this.state, COMPACT_START);
    this.panels = [];
    this.derived = null;
  }

  /**
   * Changes the state and renders once. `edit`: a reader's edit (forget a run error, record the URL).
   * A change of the class, the slots or the call replaces the lock notice with its own `held` (none by default).
   */
  setState(patch, { edit = false, discrete = false } = {}) {
    Object.assign(this.state, patch);
    if (!("held" in patch) && ["className", "slotTexts", "call"].some((k) => k in patch)) this.state.held = [];
    if (edit) this.state.runError = null;
    // The book's tokens are 3 numbers wide: an edit to another d_in (typed, pasted, a fix) runs on the
    // book's sentence with seeded embeddings of width d_in, as links and presets do, unless the
    // exercise locks the tokens (then the tokens panel says why the run waits).
    if (edit && !("source" in patch) && this.state.source === "book" && !this.locked.has("tokens") && /^\s*\d+\s*$/.test(this.state.slotTexts?.d_in ?? "") &&
      Number(this.state.slotTexts.d_in) !== 3) this.state.source = "sentence";
    this.render();
    if (edit) this.url?.record(discrete);
  }

  /** The one render path: derive, then every panel draws from the same derived view. */
  render() {
    if (!this.panels.length) return;
    const t0 = performance.now();
    this.derived = this.derive();
    for (const panel of this.panels) panel.render(this.derived);
    this.host.dataset.updateMs = (performance.now() - t0).toFixed(1);
    this.announceSetup(this.derived);
  }

  /**
   * setup-change on the host (bubbling, composed) when the setup or its validity changed: on start, after
   * an edit, an attribute change or back/forward. detail {valid, reason, className, config, diagnostics}:
   * valid is false when the Run button is off (reason says why), diagnostics are the core's
   * {code, severity, slot, slots, message, hint} (configuration, call, tokens and input, in that order).
   */
  announceSetup(d) {
    const diagnostics = [...d.configDiags, ...d.callDiags, ...d.tokens.problems, ...d.inputDiags].map((x) => ({
      code: x.code, severity: x.severity, slot: x.slots?.[0] ?? "", slots: [...(x.slots ?? [])], message: x.message, hint: x.hint ?? "",
    }));
    const detail = { valid: !d.blocked, reason: d.reason, className: this.state.className, config: { ...d.config }, diagnostics };
    const key = JSON.stringify(detail);
    if (key === this.announced) return;
    this.announced = key;
    this.host.dispatchEvent(new CustomEvent("setup-change", { bubbles: true, composed: true, detail }));
  }

  run() {
    return this.runPanel?.run();
  }

  /** A slot set by a button (a fix, a converter): the call box follows; a locked slot stays. */
  setSlot(name, text) {
    if (this.locked.has(name)) return;
    const s = this.state;
    this.setState(slotsPatch(this.lab, s.className, { ...s.slotTexts, [name]: text }), { edit: true, discrete: true });
  }

  /** A whole call set by a button (a fix that moves several slots): read like the call box; locked slots stay. */
  applyCall(call) {
    this.setState(callPatch(this.lab, this.state, call, this.locked, "fix"), { edit: true, discrete: true });
  }

  /** Another class (the class select, "back to" an exercise's class): same-named slots keep their values. */
  switchClass(className) {
    if (this.locked.has("class")) return;
    this.setState(slotsPatch(this.lab, className, withEmptySlotsFilled(this.lab, className, this.state.slotTexts, this.locked)), { edit: true, discrete: true });
  }

  /** Lines other panels add to the code view (the comparison on screen). */
  contributedCode() {
    return this.panels.map((p) => p.code?.() ?? "").join("");
  }

  setHidden(hidden) {
    this.hidden = hidden;
    for (const name of PANELS) {
      const node = this.root.querySelector(`[data-panel=${name}]`);
      if (node) node.hidden = hidden.has(name);
    }
  }

  /**
   * Follows whether the widget is in view (or within half a screen of it): only then is a run likely
   * enough to start its worker and reserve its heap ahead of the click (the run panel's warm-up).
   */
  watchView() {
    if (typeof IntersectionObserver !== "function") return;
    this.viewWatch ??= new IntersectionObserver((entries) => this.setVisible(entries[entries.length - 1].isIntersecting), { rootMargin: "50% 0px" });
    this.viewWatch.observe(this.host);
  }

  /** The widget came into view or left it; in view, a render lets the run panel warm its worker. */
  setVisible(visible) {
    if (this.runner.visible === visible) return;
    this.runner.visible = visible;
    if (visible) this.render();
  }

  async start(problems = [], call = null) {
    this.setHidden(this.hidden);
    this.watchView();
    watchScrollBoxes(this.root, S.scrollCue);
    const s = this.state;
    Object.assign(s, slotsPatch(this.lab, s.className, s.slotTexts));
    this.runPanel = setupRunPanel(this);
    this.url = setupUrlPanel(this, problems);
    this.panels = [setupSetupPanel(this), setupFactsPanel(this), setupTokensPanel(this), setupPredictPanel(this), this.runPanel, setupCodePanel(this)];
    if (this.compact) this.panels.push(setupCompactLayout(this));
    let firstOutput;
    const idle = new Promise((resolve) => (firstOutput = resolve));
    const later = (name, load) => loadWhenNeeded(this.$(name), () => load().then((panel) => {
      this.panels.push(panel);
      this.render();
      this.$(name).dataset.loaded = "true";
    }), idle);
    this.lazyPanels = [
      later("compare", () => import("./compare-panel.js").then((m) => m.setupComparePanel(this))),
      later("checkpoint", () => import("./checkpoint-panel.js").then((m) => m.setupCheckpointPanel(this))),
    ];
    // The call attribute is the exercise itself: its class and values are what the locks then hold.
    this.setState(call ? callPatch(this.lab, s, call, new Set()) : {});
    // An exercise (a widget with locks) remembers its class: an error only locked slots could fix offers it back.
    this.exerciseClass = this.locked.size ? this.state.className : null;
    this.url.keep(this.urlOption);
    if (this.autorun && !this.derived.blocked && this.derived.quick) await this.run();
    firstOutput();
    this.host.dataset.ready = "true";
  }

  /** The element left the page: the run and the worker stop, and nothing outside the widget holds it. */
  stop() {
    this.viewWatch?.disconnect();
    this.runner.visible = this.viewWatch === undefined;
    this.runner.close();
    for (const panel of this.lazyPanels ?? []) panel.stop();
    this.url?.keep(false);
  }

  /** Back on the page after stop(): panels not loaded yet wait again; the worker starts when needed. */
  resume(urlState) {
    this.runner.open();
    this.watchView();
    for (const panel of this.lazyPanels ?? []) panel.resume();
    this.url?.keep(urlState);
  }

  /**
   * The core's Setup of (class, config, input shape, mode): diagnostics, description and memory
   * estimate from one call, made again only when one of them changed (a render that changed nothing
   * of them, such as a run starting or ending, reuses it).
   */
  setupOf(className, config, shape, training) {
    const key = JSON.stringify([className, config, shape, training]);
    if (this.setupMemo?.key !== key) this.setupMemo = { key, setup: this.lab.setup(className, config, { inputShape: shape, training }) };
    return this.setupMemo.setup;
  }

  /**
   * The (num_tokens, d_in) embeddings of the state's tokens (lab-model's baseTokens): from the core once
   * per change of the tokens, their width or the seed; the run and the code view share them.
   */
  tokensFor(dIn) {
    const s = this.state;
    const what = s.source === "sentence" ? [s.tokens, s.seed] : s.source === "random" ? [s.count, s.seed] : s.source === "custom" ? [s.custom?.texts] : [];
    const key = JSON.stringify([s.source, dIn, ...what]);
    if (this.tokensMemo?.key !== key) this.tokensMemo = { key, tensor: baseTokens(this.lab, s, dIn) };
    return this.tokensMemo.tensor;
  }

  /** Everything the panels show that follows from the state: computed once per render, from one Setup per edit. */
  derive() {
    const s = this.state;
    const lab = this.lab;
    const specs = lab.slots(s.className);
    const slotNames = new Set(specs.map((x) => x.name));
    const config = currentConfig(lab, s);
    const shape = inputShape(lab, s, config);
    const setup = this.setupOf(s.className, config, shape, s.training);
    const description = setup.description;

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
    const inputDiags = [];
    for (const d of setup.diagnostics) {
      if (seen.has(diagKey(d))) continue;
      seen.add(diagKey(d));
      ((d.slots ?? []).some((x) => slotNames.has(x)) && d.code !== "too_large" ? configDiags : inputDiags).push(d);
    }
    const memory = shape && setup.ok ? setup.memory.bytes : null;
    // The one memory budget is the core's: the Setup refuses a run over it with a too_large diagnostic
    // (among the input's), and carries the budget it checked (memory.budget, shown with the estimate).
    const budget = setup.ok ? setup.memory.budget : null;
    const tokens = this.tokenProblems(config, memory, inputDiags.some((d) => d.code === "too_large"));

    const errors = [...configDiags, ...callDiags].filter((d) => d.severity === "error").length;
    let reason = "";
    if (errors) reason = S.reasonErrors(errors);
    else if (seedValue(this.lab, s) === null) reason = S.reasonSeed(this.lab.seedRange);
    else if (tokens.block) reason = tokens.block;
    else if (inputDiags.some((d) => d.severity === "error")) reason = S.reasonInput;
    const key = runKey(lab, s, config);
    const stale = Boolean(s.lastRun) && key !== s.lastRun.key;
    const revealed = Boolean(s.lastRun && !stale && s.lastRun.seq > s.quizFrom);
    return {
      specs, config, setup, description, configDiags, callDiags, inputDiags, shape, memory, budget, tokens, words: words(s),
      blocked: Boolean(reason), reason, key, stale, revealed, hide: s.quiz && !revealed,
      quick: Boolean(shape) && memory !== null && memory < QUICK_BYTES,
    };
  }

  /**
   * What keeps the tokens from running, as data the tokens panel draws: {block, problems}. `overBudget`:
   * the core refused the run as too large for its budget (its too_large diagnostic says by how much).
   */
  tokenProblems(config, memory, overBudget) {
    const s = this.state;
    const w = words(s);
    const problems = [];
    let block = "";
    const problem = (reason, p) => {
      block ||= reason;
      problems.push({ severity: "error", ...p });
    };
    if (s.source === "book" && typeof config.d_in === "number" && config.d_in !== 3) {
      problem(S.reasonBookDin, { code: "book_tokens_width", message: S.bookNeedsDin3(config.d_in), fix: this.locked.has("tokens") ? null : { source: "sentence" } });
    }
    if (s.source === "custom" && s.custom && typeof config.d_in === "number" && config.d_in !== s.custom.cols) {
      problem(S.reasonCustomShape, {
        code: "grid_width", message: S.customNeedsShape(s.custom.rows, s.custom.cols, config.d_in),
        fix: this.locked.has("tokens") ? null : { source: "sentence", tokens: (s.custom.words ?? []).join(" ") || s.tokens },
      });
    }
    if (s.source === "sentence" && w.length === 0) block ||= S.reasonNoWords;
    if (s.source === "random" && w === null) block ||= S.reasonCount;
    const bad = badCells(s);
    if (bad) problem(S.reasonGrid, { code: "grid_value", message: S.gridBad(bad) });
    if (overBudget) {
      block ||= S.reasonMemory;
    } else if (memory !== null && this.runner.usesWorker(memory)) {
      problems.push({ severity: "info", code: "large_run", message: S.memoryLarge(mib(memory)) });
    }
    return { block, problems, contextLength: positiveInt(config.context_length) ? config.context_length : null };
  }
}

function diagKey(d) {
  return `${d.code}|${(d.slots ?? []).join(",")}|${d.message}`;
}

// <attention-lab>: the whole lab as one custom element in Shadow DOM. The element's contract (attributes,
// events, methods, CSS custom properties and parts) is the JSDoc block on the class below: the docs build
// reads it with @custom-elements-manifest/analyzer into custom-elements.json and docs/widget.md
// (node scripts/widget-docs.mjs), and fails when an attribute the element reads is not in it.
import { AttentionError, loadAttentionLab } from "../lib/attention-lab.js";
import { h } from "./dom.js";
import { S } from "./strings.js";
import { PANELS, buildSkeleton } from "./template.js";
import { LOCKABLE, LabApp } from "./lab-app.js";
import { callPatch, currentConfig, initialState, partialPatch, slotsPatch } from "./lab-model.js";
import { guardKeys } from "./key-guard.js";
import { whenShown } from "./when-shown.js";
import { announceLoadError, loadFailure } from "./load-failure.js";
import { RUN_WORKER, workerRefusal } from "./worker-url.js";
import {
  STATE_ATTRS, claimUrl, hasUrlState, lockConflicts, readState, readUrlState, releaseUrl, slotNames, urlPrefix, urlPrefixProblem, withoutLocked,
} from "./url-state.js";

// The pattern bundlers follow (webpack 5 and Vite emit style.css as a file of the bundle); null where this
// module has no URL of its own (bundled into a classic script): the widget then goes unstyled, and says why.
const STYLE_URL = (() => {
  try {
    return new URL("./style.css", import.meta.url).href;
  } catch {
    console.warn("attention-lab: the <attention-lab> element has no URL of its own (bundled into a classic script), so it cannot find its style sheet or its Worker: bundle it as an ES module (esbuild --format=esm).");
    return null;
  }
})();

/** A space-separated attribute as a set, keeping only the names in `allowed`. */
function nameSet(text, allowed) {
  return new Set(String(text ?? "").split(/\s+/).filter((n) => allowed.includes(n)));
}

/**
 * One script tag and one element (`dist/app/` on any static host; the library and its `.wasm` beside it
 * in `dist/lib/`):
 *
 * ```html
 * <script type="module" src="app/attention-lab-element.js"></script>
 * <attention-lab call="MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)"
 *   locked="class d_out num_heads" hidden="compare code"></attention-lab>
 * ```
 *
 * From the npm package, `import "attention-lab/element"` defines it: webpack 5 and Vite bundle it with
 * its style sheet, Worker and `.wasm` as they are; esbuild and Rollup take its Worker,
 * `node_modules/attention-lab/web/app/run-worker.js`, as a second entry point named `run-worker`, with the element's
 * `style.css` and the core's `web/lib/attention_core*` files copied beside the bundle (the course
 * author's guide has each recipe). `npx attention-lab` serves the teaching page from the installed package.
 *
 * Slot attributes take Python literal text (`"768"`, `"0.0"`, `"True"`, `"None"`, `"torch.float32"`),
 * checked like typing in the setup panel; their names are the core's (every slot of every class), so
 * the same names work in `locked` and in the URL. A locked value holds against every path: its field, the
 * class select, the call box (pasted or typed), the `call` and slot attributes set later, `url-state` (a link,
 * back/forward), the presets and the fix buttons; when one of them asks for another value, the widget keeps
 * the locked one and says so under the call box (a note naming the slot). Taken off the page, the element stops its run and its worker (nothing else
 * holds it); put back, it carries on with the same state. A setup whose run goes to the background
 * worker starts that worker, and takes the run's memory ahead of the click, only while the element is
 * in view (or once Run is pressed); the elements of a page take at most the core's memory budget
 * (the one the facts show) ahead of their runs in all, ending the idle workers of elements scrolled away first.
 *
 * A guest on the host page: keys typed in its fields (and Space or Enter on its buttons, the arrow keys its
 * tabs and heatmaps use) stop at the element, so a Reveal.js deck or a page's own shortcuts do not act on
 * them (Tab, Escape and Ctrl/Cmd combinations still reach the page). A hidden element (`hidden` with no panel
 * names, or `display: none` on it or an ancestor, such as a slide not shown yet) loads nothing and runs
 * nothing until it is shown or `run()` is called. Under a Content-Security-Policy it needs
 * `script-src 'wasm-unsafe-eval'` (else `load-error` says `wasm_csp`); under Trusted Types
 * (`require-trusted-types-for 'script'`) it starts its Worker through its own policy, `attention-lab`: a page
 * that lists its policies (`trusted-types ...`) adds that name (else `load-error` says `trusted_types`, and
 * the element runs everything on the page's thread). The TypeScript types, the tag in
 * `HTMLElementTagNameMap` among them, are in `attention-lab-element.d.ts` beside the module.
 *
 * @summary The attention lab: one module set up slot by slot, run on sample tokens, every stage shown.
 * @tag attention-lab
 *
 * @attr {string} class-name - The module class: any of `lab.classes` (the book's five, the chapter 3
 *   bonus rewrites, the chapter 4 bonus classes). Default `MultiHeadAttention`.
 * @attr {string} call - A whole Python call instead of the slot attributes, read like the call box:
 *   `call="CausalAttention(3, 2, 6, 0.5)"` (at most 400 characters). Set later, it changes what is not locked.
 * @attr {string} d_in - Slot `d_in`: width of each input token embedding (the last axis of x).
 * @attr {string} d_out - Slot `d_out`: the output width (per head for `MultiHeadAttentionWrapper`, total for
 *   `MultiHeadAttention`).
 * @attr {string} context_length - Slot `context_length`: most tokens the causal mask covers.
 * @attr {string} dropout - Slot `dropout`: probability of zeroing each attention weight in training, e.g. `"0.0"`.
 * @attr {string} num_heads - Slot `num_heads`: number of heads.
 * @attr {string} qkv_bias - Slot `qkv_bias`: `"True"` or `"False"` (default), a bias on the q/k/v projections.
 * @attr {string} num_kv_groups - Slot `num_kv_groups` (`GroupedQueryAttention`): key/value heads shared by the query heads.
 * @attr {string} sliding_window_size - Slot `sliding_window_size` (`MultiHeadAttentionWithSWA`): keys each query
 *   sees, or `"None"`.
 * @attr {string} latent_dim - Slot `latent_dim` (`MultiHeadLatentAttention`): width of the latent `c_kv`, or `"None"`.
 * @attr {string} dtype - Slot `dtype` (`GroupedQueryAttention`): `"None"` or `"torch.float32"`.
 * @attr {string} need_weights - Slot `need_weights` (`MHAPyTorchClass`): `"True"` (default) or `"False"`.
 * @attr {string} seed - `torch.manual_seed(seed)` before the constructor (default `123`).
 * @attr {string} tokens - A sentence: word tokens with seeded embeddings of width `d_in`.
 * @attr {string} num_tokens - That many random tokens, `torch.rand(num_tokens, d_in)`.
 * @attr {"book" | "sentence" | "random"} source - Where the tokens come from (default `book`: the book's six 3-d tokens,
 *   "Your journey starts with one step").
 * @attr {string} batch - 1 to 8 stacked copies of the tokens (default 2).
 * @attr {"train" | "eval"} mode - Training (dropout on; default) or eval mode.
 * @attr {string} locked - Space-separated slot names (and `class`, `seed`, `tokens`, `batch`, `mode`) the reader
 *   cannot change: for exercises. Read once, when the element loads. Lock `class` too: with the class free, the
 *   reader can switch to a class where a locked value means something else (`d_out` is per head in
 *   `MultiHeadAttentionWrapper`, shared by the heads in `MultiHeadAttention`).
 * @attr {string} hidden - Space-separated panels not shown: `presets setup facts tokens predict trace compare
 *   checkpoint code`. An empty `hidden` (or `hidden="hidden"`, or `el.hidden = true`) keeps its usual
 *   meaning: the whole element is hidden; hidden so from the start, it loads the core only once shown.
 * @attr {boolean} url-state - Keep the state in the page URL (slot names as keys); back/forward restore it. The
 *   host page's own keys and `#anchor` are kept. One widget per `url-prefix` does: the first connected;
 *   any other with the same prefix shows a notice and does not.
 * @attr {"off" | "on"} autorun - `"off"` waits for the Run button instead of running small setups at once (on
 *   load and after each edit); `"on"` runs them at once also in the compact layout, which otherwise waits.
 * @attr {"compact"} layout - `"compact"` for course material: one column (two where the element is at least 900 px
 *   wide: the setup, predict and Run beside the trace, so that an exercise with `hidden="presets facts tokens
 *   compare checkpoint code"` fits a 1280 x 720 slide, its run's output included; the keyword form and the slots'
 *   types are left out there), headings without step numbers, the
 *   facts and tokens folded to a line (the output width hidden until the reader runs or opens the facts),
 *   each trace stage folded to its heading with one open at a time; it waits for Run (predict first)
 *   unless `autorun="on"`. With the facts hidden, the slots' consequence lines (facts too) are hidden with them.
 *   Read once, when the element loads.
 * @attr {string} url-prefix - With `url-state`: a prefix for the widget's URL keys (`url-prefix="ex1-"` gives
 *   `?ex1-d_out=3`), so several widgets and the host page share one URL; the host page's own
 *   parameters and `#hash` are kept. The widget reads exactly prefix + key, so the prefix must end with a
 *   character other than a letter, a digit or `_` (such as `-` or `.`): then no prefixed key is another
 *   widget's (`url-prefix="num_"` would read the unprefixed widget's `num_tokens` as its `tokens`). Another
 *   prefix is refused: the widget says so and keeps no state in the URL.
 * @attr {boolean} lean - Load the lean core on the page (no checkpoint readers: ~200 KB gzip instead of ~345):
 *   the element reads checkpoints in its Worker anyway, so only a host page script that calls
 *   `lab.openCheckpoint`, `loadCheckpoint`, `checkpointInput` or `loadGPT2` itself needs it left out. The
 *   core is loaded once per page: the first element or script to load it decides. Ignored where no
 *   Worker runs. Read once, when the element loads.
 *
 * @fires {CustomEvent<{className: string, config: object, pythonCall: string, training: boolean, outputShape: number[], output: {shape: number[], data: Float32Array}, stages: string[], durationMs: number}>} run-complete -
 *   After every run (bubbles, composed): the class, the config as the library read it, the Python call,
 *   train or eval, the output's shape and values, the traced stages' ids and how long it took.
 * @fires {CustomEvent<{code: string, slot: string, message: string, hint: string}>} run-error - A run failed, or
 *   `run()` was called on a setup that cannot run (bubbles, composed): the error's code (an `ErrorCode`), slot,
 *   message and hint.
 * @fires {CustomEvent<{code: string, message: string, hint: string}>} load-error - The element could not start
 *   (bubbles, composed; the element shows the same message and hint, and `run()` rejects with them): `wasm_csp`
 *   (the page's Content-Security-Policy does not let WebAssembly compile: add `'wasm-unsafe-eval'` to its
 *   `script-src`), `wasm_fetch` or `wasm_binary` (the `.wasm`), `internal`. Also, with the element running on,
 *   `trusted_types`: the page's Trusted Types refuse the policy `attention-lab` its Worker needs (add it to
 *   the `trusted-types` directive); its runs then stay on the page's thread.
 * @fires {CustomEvent<{valid: boolean, reason: string, className: string, config: object, diagnostics: object[]}>} setup-change -
 *   On start and whenever an edit, an attribute or back/forward changes the setup or its validity (bubbles,
 *   composed): whether the setup can run (and why not), the class, the config and the diagnostics
 *   (`{code, severity, slot, slots, message, hint}` as the library's `setup` gives them), so an invalid
 *   setup is seen without a run.
 *
 * @cssprop --al-accent - The accent colour: links, focus rings, the Run button.
 * @cssprop --al-bg - The element's background (transparent by default).
 * @cssprop --al-panel - The panels' background.
 * @cssprop --al-ink - The text colour.
 * @cssprop --al-muted - Secondary text: hints, notes, axis labels.
 * @cssprop --al-line - Borders and rules.
 * @cssprop --al-font - The font family.
 *
 * @csspart lab - The whole lab (a region landmark).
 * @csspart panel - Every panel (each also has its own part below).
 * @csspart presets - The presets panel.
 * @csspart setup - The setup panel: class, slots, the call box.
 * @csspart facts - The facts panel: head_dim, output width and its rule, parameters.
 * @csspart tokens - The tokens panel: source, sentence, batch, seed, mode.
 * @csspart predict - The prediction panel.
 * @csspart run - The run panel: the Run button and why it is off.
 * @csspart trace - The trace: one card per stage.
 * @csspart compare - The compare panel: copy weights between modules.
 * @csspart checkpoint - The GPT-2 checkpoint panel.
 * @csspart code - The Python code panel.
 * @csspart input - Every text input and select.
 * @csspart call-box - The call box (also part `input`).
 * @csspart button - Every button.
 * @csspart run-button - The Run buttons (also part `button`).
 * @csspart stage-card - A stage's card in the trace.
 * @csspart output-card - The output stage's card (also part `stage-card`).
 * @csspart heatmap - A heatmap of a large tensor.
 * @csspart diagnostic - A diagnostic (also one of `error`, `warning`, `info`).
 * @csspart error - An error diagnostic.
 * @csspart warning - A warning diagnostic.
 * @csspart info - A note.
 * @csspart disclosure - The compact layout's open/close buttons (facts, tokens, each stage).
 */
export class AttentionLabElement extends HTMLElement {
  /** @internal The element's own attributes; slot attributes are watched once the core has loaded (boot). */
  static get observedAttributes() {
    return [...STATE_ATTRS, "locked", "hidden"];
  }

  /** @internal Put on the page: claims the URL (url-state), starts, or carries on where it was. */
  connectedCallback() {
    // A url-prefix that could spell another widget's keys is refused (showUrlNotice says why).
    this.ownsUrl = this.hasAttribute("url-state") && !urlPrefixProblem(urlPrefix(this)) && claimUrl(this, urlPrefix(this));
    if (!this.shadowRoot) this.started = this.boot();
    else if (this.view) { // re-inserted: carry on where it was
      this.view.resume(this.ownsUrl);
      this.showUrlNotice();
    }
  }

  /** @internal Removed from the page: the run in flight and the worker stop, so the widget and its memory can go. */
  disconnectedCallback() {
    releaseUrl(this);
    this.ownsUrl = false;
    this.view?.stop();
  }

  /** @internal A url-state widget that does not keep the URL says why: another one has its prefix, or the prefix is refused. */
  showUrlNotice() {
    const notice = this.shadowRoot.getElementById("url-notice");
    notice.hidden = !this.hasAttribute("url-state") || this.ownsUrl;
    notice.textContent = urlPrefixProblem(urlPrefix(this)) || S.urlStateTaken;
  }

  /** @internal The attributes read as widget state (validated exactly like the URL). */
  readAttributes(lab) {
    const get = (key) => {
      const name = key === "class" ? "class-name" : key;
      return this.hasAttribute(name) ? this.getAttribute(name) : null;
    };
    return readState(get, lab);
  }

  /** @internal Loads the library, reads the attributes (and the URL) and starts the lab. */
  async boot() {
    const root = this.attachShadow({ mode: "open" });
    guardKeys(root); // keys typed in the widget do not reach the host page's shortcuts (key-guard.js)
    // Several widgets on one page need distinct landmark names: the element's aria-label or id.
    const others = document.querySelectorAll("attention-lab").length > 1;
    const skeleton = buildSkeleton(this.getAttribute("aria-label") || this.id || (others ? String([...document.querySelectorAll("attention-lab")].indexOf(this) + 1) : ""));
    skeleton.hidden = true;
    const show = () => { skeleton.hidden = false; };
    if (STYLE_URL !== null) {
      const link = h("link", { rel: "stylesheet", href: STYLE_URL });
      link.addEventListener("load", show);
      link.addEventListener("error", show);
      root.append(link);
    }
    root.append(skeleton);
    if (STYLE_URL === null) show();
    const status = root.getElementById("status");
    // Hidden (hidden="", display: none here or above), it loads nothing and runs nothing until shown (or run() is called).
    this.shown = whenShown(this);
    await this.shown.shown;
    status.textContent = S.loading;
    let lab;
    try {
      // `lean`: the main thread's lab without the checkpoint readers, which run in the Worker (checkpoint-load.js)
      lab = await loadAttentionLab(this.hasAttribute("lean") && typeof Worker === "function" && !workerRefusal() ? { checkpoints: false } : undefined);
    } catch (err) {
      this.loadError = loadFailure(err);
      status.textContent = `${S.loadFailed(this.loadError.message)} ${this.loadError.hint}`;
      status.classList.add("status-error");
      this.dataset.loadError = this.loadError.code;
      show();
      announceLoadError(this, this.loadError);
      return;
    }
    status.textContent = "";
    this.lab = lab;
    const fromAttrs = this.readAttributes(lab);
    const urlState = this.ownsUrl;
    const prefix = urlPrefix(this); // read once, like locked: the keys this widget owns in the URL
    const compact = this.getAttribute("layout") === "compact"; // read once too
    const locked = nameSet(this.getAttribute("locked"), [...slotNames(lab), ...LOCKABLE]);
    let initial = fromAttrs.state;
    let problems = fromAttrs.problems;
    let held = [];
    let call = this.hasAttribute("call") ? this.getAttribute("call").slice(0, 400) : null;
    if (urlState && hasUrlState(location.search, lab, prefix)) {
      // The call attribute is the exercise (its class and slots, as class-name and the slot attributes
      // are); the URL's keys then change what it does not lock. A call that names no class keeps its box.
      const start = { ...initialState(), ...partialPatch(initialState(), initial) };
      if (call !== null) {
        const read = callPatch(lab, start, call, new Set());
        initial = { ...initial, className: read.className ?? start.className, slotTexts: read.slotTexts ?? start.slotTexts };
        Object.assign(start, partialPatch(start, initial));
        if (read.className !== undefined) call = null;
      }
      const fromLink = readUrlState(location.search, lab, prefix);
      held = lockConflicts(fromLink.state, start, locked, "url"); // locks win over the URL, and the notice says so
      const fromUrl = withoutLocked(fromLink.state, locked);
      initial = { ...initial, ...fromUrl, slotTexts: { ...(initial.slotTexts ?? {}), ...(fromUrl.slotTexts ?? {}) } };
      problems = [...problems, ...fromLink.problems];
    }
    this.view = new LabApp(root, this, lab, {
      initial,
      held,
      locked,
      hidden: nameSet(this.getAttribute("hidden"), PANELS),
      urlState,
      urlPrefix: prefix,
      layout: compact ? "compact" : "",
      // A compact widget waits for the reader's Run (predict first) unless autorun="on".
      autorun: compact ? this.getAttribute("autorun") === "on" : this.getAttribute("autorun") !== "off",
      workerUrl: RUN_WORKER,
    });
    // A page whose Trusted Types refuse the widget's Worker hears why (the widget runs on its thread instead).
    this.view.runner.onBlocked = (error) => announceLoadError(this, error);
    if (this.view.runner.blocked) announceLoadError(this, this.view.runner.blocked);
    this.showUrlNotice();
    // Slot attributes: their names are the core's, so they are watched once it has loaded.
    new MutationObserver((records) => {
      for (const r of records) this.attributeChangedCallback(r.attributeName, r.oldValue, this.getAttribute(r.attributeName));
    }).observe(this, { attributes: true, attributeOldValue: true, attributeFilter: slotNames(lab) });
    await this.view.start(problems, call);
    if (!this.isConnected) this.view.stop(); // removed while it was starting
  }

  /** @internal A changed attribute is an edit (locked values stay). */
  attributeChangedCallback(name, old, value) {
    const view = this.view;
    if (!view || old === value) return;
    if (name === "hidden") {
      view.setHidden(nameSet(value, PANELS));
      return;
    }
    if (name === "locked") return; // read once: an exercise does not unlock itself
    if (name === "call") {
      view.setState(callPatch(this.lab, view.state, String(value ?? "").slice(0, 400), view.locked, "call-attr"), { edit: true });
      return;
    }
    // A changed attribute is an edit like the URL's: what the exercise locks stays as it is, and the notice says so.
    const read = readState((key) => ((key === "class" ? "class-name" : key) === name ? value : null), this.lab).state;
    const held = lockConflicts(read, view.state, view.locked, `attr:${name}`);
    const patch = partialPatch(view.state, withoutLocked(read, view.locked));
    const next = { ...view.state, ...patch };
    view.setState({ ...patch, ...slotsPatch(this.lab, next.className, next.slotTexts), held }, { edit: true, discrete: true });
  }

  /**
   * Runs the forward pass of the current setup. Resolves with run-complete's detail once the trace is
   * on screen; called during a run, it waits for that run (and runs again if the setup changed since).
   * Rejects with an `AttentionError` `{code, slot, message, hint}` when the run fails, is cancelled, or
   * the setup cannot run (then run-error fires too, with the same fields: the first error, e.g.
   * `heads_divisibility`). Called before the widget has loaded, it waits for it (a hidden one loads for it);
   * when the widget could not load, it rejects with load-error's code (e.g. `wasm_csp`), message and hint.
   *
   * ```js
   * const detail = await document.querySelector("attention-lab").run();
   * detail.outputShape; // [2, 6, 2] for the book's MultiHeadAttention(3, 2, 6, 0.0, 2), batch 2
   * ```
   * @returns {Promise<{className: string, config: object, pythonCall: string, training: boolean, outputShape: number[], output: {shape: number[], data: Float32Array}, stages: string[], durationMs: number}>} run-complete's detail
   * @throws {AttentionError} with the run's code (e.g. `heads_divisibility`, `too_large`), or the load's (`wasm_csp`, `wasm_fetch`, ...)
   */
  async run() {
    this.shown?.now(); // a hidden widget asked to run loads now
    await this.started;
    if (this.loadError) throw this.loadError;
    if (!this.view) throw new AttentionError({ code: "error", slot: "", message: S.loadFailed("the widget is not on a page"), hint: "Put the element on the page (document.body.append(el)) before calling run()." });
    const outcome = await this.view.run();
    if (!outcome.ok) throw new AttentionError(outcome.error);
    return outcome.detail;
  }

  /**
   * The current setup as the library reads it, `null` until the element has loaded.
   * @type {{className: string, config: object} | null}
   * @readonly
   */
  get setup() {
    return this.view ? { className: this.view.state.className, config: currentConfig(this.lab, this.view.state) } : null;
  }
}

if (!customElements.get("attention-lab")) customElements.define("attention-lab", AttentionLabElement);

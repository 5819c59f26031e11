// <attention-lab>: the whole lab as one custom element in Shadow DOM. One script tag and one element:
//
//   <script type="module" src="app/attention-lab-element.js"></script>
//   <attention-lab call="MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)" locked="class d_out num_heads"
//                  hidden="compare code"></attention-lab>
//
// @attr class-name      the module class (any of lab.classes: the chapter's five and the two bonus
//                       classes); default in the strings table (MultiHeadAttention)
// @attr d_in, d_out, context_length, dropout, num_heads, qkv_bias   slot values, as Python literal text
// @attr call            a whole Python call, read like the call box ("MultiHeadAttention(3, 2, 6, 0.0, 2)")
// @attr seed            torch.manual_seed(seed) before the constructor (default 123)
// @attr tokens          a sentence: word tokens with seeded embeddings of width d_in
// @attr num_tokens      that many random tokens, torch.rand(num_tokens, d_in)
// @attr source          book | sentence | random (default book: the book's six 3-d tokens)
// @attr batch           1 to 8 stacked copies (default 2)
// @attr mode            "train" or "eval" (default train)
// @attr locked          space-separated slot names (and class, seed, tokens, batch, mode) a reader cannot change
// @attr hidden          space-separated panels not shown: presets setup facts tokens predict trace compare checkpoint code
//                       (an empty hidden keeps its usual meaning: the whole element is hidden)
// @attr url-state       keep the state in the page URL (slot names as keys); back/forward restore it. One
//                       widget per page does: the first connected; any other shows a notice and does not
// @attr autorun         "off" to wait for the Run button instead of running small setups at once
// @fires run-complete   after every run: detail {className, config, pythonCall, training, outputShape, output, stages, durationMs}
// @fires run-error      a run failed, or run() was called on a setup that cannot run: detail {code, slot, message, hint}
// @csspart lab, panel, presets, setup, facts, tokens, predict, run, trace, compare, checkpoint, code (each panel also has part "panel")
// @csspart input, call-box, button, run-button, stage-card, output-card, heatmap, diagnostic, error, warning, info
// Taken off the page, the element stops its run and its worker (nothing else holds it); put back, it
// carries on with the same state.
// Theme with CSS custom properties on the element: --al-accent, --al-bg, --al-panel, --al-ink, --al-muted, --al-line, --al-font.
import { AttentionError, loadAttentionLab } from "../lib/attention-lab.js";
import { h } from "./dom.js";
import { S } from "./strings.js";
import { PANELS, buildSkeleton } from "./template.js";
import { LOCKABLE, LabApp } from "./lab-app.js";
import { callPatch, currentConfig, initialState, partialPatch, slotsPatch } from "./lab-model.js";
import { STATE_ATTRS, claimUrl, hasUrlState, readState, readUrlState, releaseUrl, slotNames, urlPrefix, withoutLocked } from "./url-state.js";

const STYLE_URL = new URL("./style.css", import.meta.url).href;
const WORKER_URL = new URL("./run-worker.js", import.meta.url).href;

/** A space-separated attribute as a set, keeping only the names in `allowed`. */
function nameSet(text, allowed) {
  return new Set(String(text ?? "").split(/\s+/).filter((n) => allowed.includes(n)));
}

export class AttentionLabElement extends HTMLElement {
  static get observedAttributes() {
    return [...STATE_ATTRS, "locked", "hidden"];
  }

  connectedCallback() {
    this.ownsUrl = this.hasAttribute("url-state") && claimUrl(this, urlPrefix(this));
    if (!this.shadowRoot) this.started = this.boot();
    else if (this.view) { // re-inserted: carry on where it was
      this.view.resume(this.ownsUrl);
      this.showUrlNotice();
    }
  }

  /** Removed from the page: the run in flight and the worker stop, so the widget and its memory can go. */
  disconnectedCallback() {
    releaseUrl(this);
    this.ownsUrl = false;
    this.view?.stop();
  }

  /** A url-state widget that another one on the page beat to the URL says so (it is not an error). */
  showUrlNotice() {
    this.shadowRoot.getElementById("url-notice").hidden = !this.hasAttribute("url-state") || this.ownsUrl;
  }

  /** The attributes read as widget state (validated exactly like the URL). */
  readAttributes(lab) {
    const get = (key) => {
      const name = key === "class" ? "class-name" : key;
      return this.hasAttribute(name) ? this.getAttribute(name) : null;
    };
    return readState(get, lab);
  }

  async boot() {
    const root = this.attachShadow({ mode: "open" });
    // Several widgets on one page need distinct landmark names: the element's aria-label or id.
    const others = document.querySelectorAll("attention-lab").length > 1;
    const skeleton = buildSkeleton(this.getAttribute("aria-label") || this.id || (others ? String([...document.querySelectorAll("attention-lab")].indexOf(this) + 1) : ""));
    skeleton.hidden = true;
    const link = h("link", { rel: "stylesheet", href: STYLE_URL });
    const show = () => { skeleton.hidden = false; };
    link.addEventListener("load", show);
    link.addEventListener("error", show);
    root.append(link, skeleton);
    const status = root.getElementById("status");
    status.textContent = S.loading;
    let lab;
    try {
      lab = await loadAttentionLab();
    } catch (err) {
      status.textContent = S.loadFailed(err?.message ?? String(err));
      status.classList.add("status-error");
      this.dataset.loadError = "true";
      show();
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
    let call = this.hasAttribute("call") ? this.getAttribute("call").slice(0, 400) : null;
    if (urlState && hasUrlState(location.search, lab, prefix)) {
      // The call attribute is the exercise; the URL then changes only what it does not lock.
      if (call !== null && locked.size) {
        const start = { ...initialState(), ...partialPatch(initialState(), initial) };
        const read = callPatch(lab, start, call, new Set());
        initial = { ...initial, className: read.className ?? start.className, slotTexts: read.slotTexts ?? start.slotTexts };
      }
      call = null;
      const fromUrl = withoutLocked(readUrlState(location.search, lab, prefix).state, locked); // locks win over the URL
      initial = { ...initial, ...fromUrl, slotTexts: { ...(initial.slotTexts ?? {}), ...(fromUrl.slotTexts ?? {}) } };
      problems = [...problems, ...readUrlState(location.search, lab, prefix).problems];
    }
    this.view = new LabApp(root, this, lab, {
      initial,
      locked,
      hidden: nameSet(this.getAttribute("hidden"), PANELS),
      urlState,
      urlPrefix: prefix,
      layout: compact ? "compact" : "",
      // A compact widget waits for the reader's Run (predict first) unless autorun="on".
      autorun: compact ? this.getAttribute("autorun") === "on" : this.getAttribute("autorun") !== "off",
      workerUrl: WORKER_URL,
    });
    this.showUrlNotice();
    // Slot attributes: their names are the core's, so they are watched once it has loaded.
    new MutationObserver((records) => {
      for (const r of records) this.attributeChangedCallback(r.attributeName, r.oldValue, this.getAttribute(r.attributeName));
    }).observe(this, { attributes: true, attributeOldValue: true, attributeFilter: slotNames(lab) });
    await this.view.start(problems, call);
    if (!this.isConnected) this.view.stop(); // removed while it was starting
  }

  attributeChangedCallback(name, old, value) {
    const view = this.view;
    if (!view || old === value) return;
    if (name === "hidden") {
      view.setHidden(nameSet(value, PANELS));
      return;
    }
    if (name === "locked") return; // read once: an exercise does not unlock itself
    if (name === "call") {
      view.setState(callPatch(this.lab, view.state, String(value ?? "").slice(0, 400), view.locked), { edit: true });
      return;
    }
    // A changed attribute is an edit like the URL's: what the exercise locks stays as it is.
    const state = withoutLocked(readState((key) => ((key === "class" ? "class-name" : key) === name ? value : null), this.lab).state, view.locked);
    const patch = partialPatch(view.state, state);
    const next = { ...view.state, ...patch };
    view.setState({ ...patch, ...slotsPatch(this.lab, next.className, next.slotTexts) }, { edit: true, discrete: true });
  }

  /**
   * Runs the forward pass of the current setup. Resolves with run-complete's detail once the trace is
   * on screen; called during a run, it waits for that run (and runs again if the setup changed since).
   * Rejects with an AttentionError {code, slot, message, hint} when the run fails, is cancelled, or the
   * setup cannot run (then run-error fires too, with the same fields: the first error, e.g.
   * heads_divisibility). Called before the widget has loaded, it waits for it.
   */
  async run() {
    await this.started;
    if (!this.view) throw new AttentionError({ code: "error", slot: "", message: S.loadFailed(this.dataset.loadError ? "see the widget" : "the widget is not on a page"), hint: "" });
    const outcome = await this.view.run();
    if (!outcome.ok) throw new AttentionError(outcome.error);
    return outcome.detail;
  }

  /** The current setup: {className, config} as the library reads it. */
  get setup() {
    return this.view ? { className: this.view.state.className, config: currentConfig(this.lab, this.view.state) } : null;
  }
}

if (!customElements.get("attention-lab")) customElements.define("attention-lab", AttentionLabElement);

// "Step with the KV cache" (the book's ch04/03_kv-cache): the module on screen, fed the tokens on
// screen one at a time with a cache. Each step appends one key and one value per key/value head and
// gives one row of attention weights over every token so far, (1, T_past + 1); the output row equals
// the full run's row within 1e-6 (a latent class appends one latent row c_kv instead and re-projects
// every key and value from them). The cache's tokens and bytes, and what MultiHeadAttention of the same
// width would hold at as many tokens, follow each step. Which classes take a cache, and every number,
// come from the core (module.newCache refuses a class without a causal mask over its own keys).
import { h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { buildInput, seedValue } from "./lab-model.js";
import { sci } from "./format.js";

/** Row `at` of a (1, T, d) tensor. */
function row(t, at) {
  const d = t.shape[t.shape.length - 1];
  return t.data.slice(at * d, at * d + d);
}

export function setupCacheSteps(app) {
  const { lab } = app;
  const intro = h("p", { dataset: { testid: "cache-intro" } });
  const step = h("button", { type: "button", part: "button", dataset: { testid: "cache-step" }, on: { click: () => advance() } }, S.cacheStep);
  const reset = h("button", { type: "button", part: "button", class: "small", dataset: { testid: "cache-reset" }, on: { click: () => start() } }, S.cacheReset);
  const status = h("p", { class: "verdict", "aria-live": "polite", dataset: { testid: "cache-status" } });
  const factsValue = h("dd", { dataset: { testid: "cache-facts" } }, "—");
  const facts = h("dl", { class: "cache-facts" }, h("dt", {}, S.cacheFactsLabel), factsValue);
  const body = h("tbody");
  const table = h("div", { class: "table-scroll" }, h("table", { class: "ways-table cache-table", dataset: { testid: "cache-table" } },
    h("caption", { class: "sr-only" }, S.cacheCaption),
    h("thead", {}, h("tr", {}, ...S.cacheColumns.map((c) => h("th", { scope: "col" }, c)))), body));
  const box = h("div", { class: "ways-box", dataset: { testid: "cache-steps" } }, intro, h("p", {}, step, " ", reset), status, facts, table);
  /** The run in progress: {key, module, cache, x, whole, at, total, latentDim}. */
  let run = null;

  function stop() {
    run?.cache.dispose();
    run?.module.dispose();
    run = null;
  }

  /** A fresh module (the page's seed) and an empty cache for the setup and tokens on screen. */
  /** The cache's tokens and bytes against MultiHeadAttention of the same width (the core's numbers). */
  function showFacts() {
    const c = run?.cache;
    factsValue.textContent = c && c.tokens > 0 ? S.cacheFacts(c.tokens, c.bytes, c.bytesMha, run.latentDim) : "—";
    if (c) Object.assign(factsValue.dataset, { tokens: String(c.tokens), bytes: String(c.bytes), bytesMha: String(c.bytesMha) });
  }

  function start() {
    stop();
    replace(body);
    factsValue.textContent = "—";
    const d = app.derived.description;
    if (!d?.ok || app.derived.blocked) {
      status.textContent = S.cacheNeedsValid;
      step.disabled = true;
      return;
    }
    const config = app.derived.config;
    const module = lab.create(app.state.className, config, { generator: lab.manualSeed(seedValue(app.lab, app.state)) });
    let cache;
    try {
      cache = module.newCache();
    } catch (err) {
      module.dispose();
      status.textContent = err.message;
      step.disabled = true;
      return;
    }
    const x = buildInput(lab, app.state, config, app.tokensFor(config.d_in));
    const [, total, dIn] = x.shape;
    const first = { shape: [1, total, dIn], data: x.data.slice(0, total * dIn) };  // batch item 0
    run = { key: app.derived.key, module, cache, x: first, whole: module.forward(first, { training: false }).output, at: 0, total, latentDim: d.latentDim ?? null };
    step.disabled = false;
    status.textContent = S.cacheReady(total, module.className);
  }

  function advance() {
    if (!run || run.key !== app.derived.key) start();
    if (!run || run.at >= run.total) return;
    const { module, cache, x, whole } = run;
    const d = x.shape[2];
    const token = { shape: [1, 1, d], data: x.data.slice(run.at * d, run.at * d + d) };
    let result;
    try {
      result = module.forward(token, { training: false, cache, trace: true });
    } catch (err) {
      status.textContent = err.message;
      step.disabled = true;
      return;
    }
    const weights = result.trace.find((s) => s.id === "attn_weights");
    const heads = weights.shape.length === 4 ? weights.shape[1] : 1;
    const keys = weights.shape[weights.shape.length - 1];
    const head0 = Array.from(weights.data.slice(0, keys));
    const out = result.output.data;
    const full = row(whole, run.at);
    const diff = out.reduce((m, v, i) => Math.max(m, Math.abs(v - full[i])), 0);
    body.append(h("tr", { dataset: { position: String(run.at), keys: String(keys) } },
      h("th", { scope: "row", class: "num" }, String(run.at)),
      h("td", { class: "num" }, S.cacheShape(weights.shape)),
      h("td", { class: "num" }, `${cache.tokens} · ${cache.bytes.toLocaleString("en-US")} B`),
      h("td", { class: "num" }, `${cache.bytesMha.toLocaleString("en-US")} B`),
      h("td", { class: "num cache-row" }, head0.map((w) => w.toFixed(3)).join("  ")),
      h("td", { class: diff <= 1e-6 ? "agree num" : "disagree num" }, sci(diff))));
    run.at += 1;
    status.textContent = (run.latentDim != null ? S.cacheStatusLatent : S.cacheStatus)(run.at, run.total, heads, cache.tokens, cache.bytes);
    showFacts();
    if (run.at >= run.total) step.disabled = true;
  }

  return {
    box,
    refresh() {
      intro.textContent = S.cacheIntro + (app.derived.description?.latentDim != null ? S.cacheIntroLatent : "");
      if (run && run.key !== app.derived.key) {
        stop();
        replace(body);
        status.textContent = S.cacheChanged;
        step.disabled = false;
      } else if (!run && !status.textContent) {
        status.textContent = S.cacheIdle;
      }
    },
    stop,
  };
}

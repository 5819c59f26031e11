// "Generate" in the GPT-2 section: model.generate on the panel's file and tokens (in the worker when
// there is one), the book's chapter 5 generate with max new tokens, temperature, top-k, eos id and a
// seed (torch.manual_seed), the KV cache on or off. Tokens appear one by one with their probability and
// the five most likely alternatives, the cache's size as it grows, where each new token's position
// looked in every layer x head (gpt2-generate-grid.js), a run of the same tokens the other way (with or
// without the cache) with both times per token, and the PyTorch call that gives the same ids.
import { h, replace } from "./dom.js";
import { S } from "./strings-gpt2.js";
import { generateGPT2 } from "./checkpoint-load.js";
import { errorBox } from "./diagnostic-view.js";
import { attentionGrid } from "./gpt2-generate-grid.js";
import { modelCode } from "./gpt2-code.js";

/** A labelled number input. */
function numberField(id, label, value, { min, step, placeholder } = {}) {
  const input = h("input", { id, type: "number", value, min, step, placeholder, inputmode: "decimal", dataset: { testid: id } });
  return { input, node: h("label", { class: "gen-field", for: id }, h("span", {}, label), input) };
}

/** A field's number, or null when it is empty. */
const valueOf = (f) => (f.input.value.trim() === "" ? null : Number(f.input.value));

/** Mean milliseconds per new token of a run's steps. */
/** The first new token's time (it reads the whole prompt: the prefill) and the mean over the tokens after it. */
const times = (steps) => ({ first: steps[0]?.ms ?? 0, rest: steps.slice(1).reduce((a, s) => a + s.ms, 0) / Math.max(1, steps.length - 1), after: Math.max(0, steps.length - 1) });

/**
 * @param app    the widget's app (lab, runner)
 * @param input  () => Promise<{file, tokens: {ids, words}, numHeads, decode} | null>: what the panel runs on
 */
export function setupGenerate(app, input) {
  // run: the last generation on screen ({given, options, tokenIds, steps, labels, done}); pick: the new
  // token whose attention the grid shows (null: the newest)
  const state = { seq: 0, controller: null, run: null, pick: null };
  const maxNew = numberField("gen-max", S.genMax, "10", { min: "1", step: "1" });
  const temperature = numberField("gen-temperature", S.genTemperature, "0", { min: "0", step: "0.1" });
  const topK = numberField("gen-topk", S.genTopK, "", { min: "1", step: "1", placeholder: "None" });
  const eos = numberField("gen-eos", S.genEos, "", { min: "0", step: "1", placeholder: "None" });
  const seed = numberField("gen-seed", S.genSeed, "123", { step: "1" });
  const cache = h("input", { id: "gen-cache", type: "checkbox", checked: true, dataset: { testid: "gen-cache" } });
  const runButton = h("button", { type: "button", class: "primary", part: "button", dataset: { testid: "gen-run" } }, S.genRun);
  const cancelButton = h("button", { type: "button", class: "small", part: "button", hidden: true, dataset: { testid: "gen-cancel" } }, S.cancel);
  const status = h("p", { class: "muted", role: "status", dataset: { testid: "gen-status" } });
  const text = h("p", { class: "gen-text", dataset: { testid: "gen-text" } });
  const list = h("ol", { class: "gen-steps", dataset: { testid: "gen-steps" } });
  const grid = attentionGrid({ onFollow: () => pick(null) });
  const compareButton = h("button", { type: "button", class: "small", part: "button", hidden: true, dataset: { testid: "gen-compare-run" } });
  const compare = h("div", { class: "gen-compare", "aria-live": "polite", dataset: { testid: "gen-compare" } });
  const code = h("pre", { class: "gen-code", dataset: { testid: "gen-code" } });
  const error = h("div", { class: "diagnostics", "aria-live": "assertive", dataset: { testid: "gen-error" } });
  const node = h("section", { class: "gpt2-generate", "aria-labelledby": "gen-title", dataset: { testid: "gpt2-generate" } },
    h("h4", { id: "gen-title" }, S.genTitle),
    h("p", { class: "muted" }, S.genIntro),
    h("div", { class: "gen-options" }, maxNew.node, temperature.node, topK.node, eos.node, seed.node,
      h("label", { class: "gen-field", for: "gen-cache" }, cache, h("span", {}, S.genCache))),
    h("div", { class: "run-row" }, runButton, cancelButton), error, status, text, list, grid.node,
    h("div", { class: "run-row" }, compareButton), compare, code);
  runButton.addEventListener("click", () => generate());
  cancelButton.addEventListener("click", () => state.controller?.abort());
  compareButton.addEventListener("click", () => runCompare());

  /** Starts a run (ends the one in flight): its sequence number and signal. */
  function begin() {
    state.controller?.abort();
    const controller = new AbortController();
    state.controller = controller;
    runButton.disabled = true;
    compareButton.disabled = true;
    cancelButton.hidden = false;
    return { seq: ++state.seq, signal: controller.signal };
  }
  function end(seq) {
    if (seq !== state.seq) return;
    runButton.disabled = false;
    compareButton.disabled = false;
    cancelButton.hidden = true;
  }

  /** The grid on the picked new token (or the newest). */
  function showGrid() {
    const r = state.run;
    if (!r || r.steps.length === 0) return;
    const i = state.pick ?? r.steps.length - 1;
    const read = r.given.tokens.ids.length + i;  // the ids the token was read from
    const T = r.steps[i].attention?.shape[2] ?? read;
    grid.show(r.steps[i], i, { keyLabel: (j) => r.labels[read - T + j], tokenLabel: r.labels[read], pinned: state.pick !== null });
    for (const b of text.querySelectorAll(".gen-token")) b.setAttribute("aria-pressed", String(Number(b.dataset.index) === i));
  }
  function pick(i) {
    state.pick = i;
    showGrid();
  }

  async function generate() {
    const given = await input();
    if (!given) return;
    const { seq, signal } = begin();
    const options = { maxNewTokens: valueOf(maxNew), temperature: valueOf(temperature) ?? 0, topK: valueOf(topK), eosId: valueOf(eos), seed: valueOf(seed) ?? 123, cache: cache.checked };
    const piece = (id) => (given.decode ? given.decode([id]) : ` #${id}`);
    const label = (id) => (given.decode ? given.decode([id]).replace(/ /g, "␣") : `#${id}`);
    const run = { given, options, steps: [], labels: given.tokens.ids.map(label), tokenIds: null, nCtx: null };
    state.run = run;
    state.pick = null;
    for (const n of [error, list, code, compare]) replace(n);
    grid.reset();
    compareButton.hidden = true;
    delete text.dataset.state;
    delete list.dataset.state;
    replace(text, h("span", { class: "gen-prompt" }, given.decode ? given.decode(given.tokens.ids) : given.tokens.ids.map((id) => `#${id}`).join(" ")));
    status.textContent = S.genReading;
    node.dataset.tokens = "0";
    try {
      const r = await generateGPT2(app.lab, app.runner, given.file, {
        ids: given.tokens.ids, numHeads: given.numHeads, options: { ...options, attention: true }, signal,
        onToken: (s) => {
          if (seq !== state.seq) return;
          const i = run.steps.length;
          run.steps.push(s);
          run.labels.push(label(s.token));
          node.dataset.tokens = String(run.steps.length);
          text.append(h("button", {
            type: "button", class: "gen-token", title: S.genTokenTitle(s.prob), "aria-pressed": "false",
            dataset: { testid: "gen-token", id: String(s.token), index: String(i) }, on: { click: () => pick(i) },
          }, piece(s.token)));
          list.append(h("li", { dataset: { id: String(s.token) } },
            h("code", { class: "piece" }, label(s.token)), given.decode ? h("span", { class: "token-id", dataset: { testid: "gen-id" } }, String(s.token)) : null,
            " ", h("span", { class: "gpt2-prob" }, S.gpt2Prob(s.prob)),
            h("span", { class: "muted gen-alternatives" }, S.genAlternatives(s.top.map((t) => `${label(t.id)} ${S.gpt2Prob(t.prob)}`))),
            h("span", { class: "muted" }, S.genCacheLine(s.cacheTokens, s.cacheBytes, s.ms))));
          status.textContent = S.genProgress(run.steps.length, options.maxNewTokens);
          if (state.pick === null) showGrid();
        },
      });
      if (seq !== state.seq) return;
      run.tokenIds = r.tokenIds;
      run.nCtx = r.nCtx;
      status.textContent = S.genDone(r.steps.length, r.stoppedBy, r.resident, options.cache);
      code.textContent = [...modelCode(r.config, given.file?.name ?? "model.safetensors"),
        S.genCode({ ...options, nCtx: r.nCtx, ids: given.tokens.ids, text: given.decode ? given.decode(given.tokens.ids) : null })].join("\n");
      compareButton.textContent = S.genCompareRun(!options.cache);
      compareButton.hidden = false;
      node.dataset.runs = String(Number(node.dataset.runs ?? 0) + 1);
    } catch (err) {
      if (seq !== state.seq) return;
      const cancelled = err?.code === "cancelled";
      // what was written stays, marked as cut short, and the status says where
      status.textContent = S.genStoppedAt(cancelled, run.steps.length, options.maxNewTokens);
      if (run.steps.length > 0) {
        text.dataset.state = list.dataset.state = cancelled ? "cancelled" : "failed";
        text.append(h("span", { class: "gen-cut", dataset: { testid: "gen-cut" } }, S.genCut(cancelled)));
      }
      replace(error, errorBox(S.genError, cancelled ? { code: "cancelled", message: S.genCancelled, hint: "" } : err, { testid: "gen-diag", showCode: true }));
    } finally {
      end(seq);
    }
  }

  /** The same prompt and options the other way (without the cache after a cached run, or with it). */
  async function runCompare() {
    const first = state.run;
    if (!first?.tokenIds) return;
    const { seq, signal } = begin();
    const options = { ...first.options, cache: !first.options.cache };
    replace(compare, h("p", { class: "muted" }, S.genCompareProgress(0, options.maxNewTokens, options.cache)));
    let n = 0;
    try {
      const r = await generateGPT2(app.lab, app.runner, first.given.file, {
        ids: first.given.tokens.ids, numHeads: first.given.numHeads, options, signal,
        onToken: () => {
          if (seq === state.seq) replace(compare, h("p", { class: "muted" }, S.genCompareProgress(++n, options.maxNewTokens, options.cache)));
        },
      });
      if (seq !== state.seq) return;
      const cached = options.cache ? r.steps : first.steps;
      const uncached = options.cache ? first.steps : r.steps;
      const same = r.tokenIds.length === first.tokenIds.length && r.tokenIds.every((id, i) => id === first.tokenIds[i]);
      const differsAt = same ? -1 : r.tokenIds.findIndex((id, i) => id !== first.tokenIds[i]) - first.given.tokens.ids.length;
      replace(compare,
        h("table", { class: "params gen-times", dataset: { testid: "gen-times" } },
          h("caption", {}, S.genTimesCaption),
          h("tbody", {},
            h("tr", { dataset: { cache: "true" } }, h("th", { scope: "row" }, S.genWithCache), h("td", {}, S.genMsFirst(times(cached).first)), h("td", {}, S.genMsPerToken(times(cached).rest, times(cached).after))),
            h("tr", { dataset: { cache: "false" } }, h("th", { scope: "row" }, S.genWithoutCache), h("td", {}, S.genMsFirst(times(uncached).first)), h("td", {}, S.genMsPerToken(times(uncached).rest, times(uncached).after))))),
        h("p", { class: "muted", dataset: { testid: "gen-times-note" } }, S.genTimesNote),
        h("p", { class: same ? "verdict agree" : "verdict disagree", dataset: { testid: "gen-same", same: String(same) } },
          same ? S.genSameIds(r.tokenIds.length - first.given.tokens.ids.length) : S.genOtherIds(differsAt + 1)));
    } catch (err) {
      if (seq !== state.seq) return;
      replace(compare, errorBox(S.genError, err?.code === "cancelled" ? { code: "cancelled", message: S.genCancelled, hint: "" } : err, { testid: "gen-compare-diag", showCode: true }));
    } finally {
      end(seq);
    }
  }

  return {
    node,
    reset() {
      state.controller?.abort();
      state.seq++;
      state.run = null;
      for (const n of [error, text, list, code, compare]) replace(n);
      grid.reset();
      status.textContent = "";
      runButton.disabled = false;
      compareButton.hidden = true;
      cancelButton.hidden = true;
    },
  };
}

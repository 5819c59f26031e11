// "Generate" in the GPT-2 section: model.generate on the panel's file and tokens (in the worker when
// there is one), the book's chapter 5 generate with max new tokens, temperature, top-k and a seed
// (torch.manual_seed), the KV cache on or off. Tokens appear one by one with their probability and the
// five most likely alternatives, the cache's size as it grows, and the PyTorch call that gives the same ids.
import { h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { generateGPT2 } from "./checkpoint-load.js";
import { errorBox } from "./diagnostic-view.js";

/** A labelled number input. */
function numberField(id, label, value, { min, step, placeholder } = {}) {
  const input = h("input", { id, type: "number", value, min, step, placeholder, inputmode: "decimal", dataset: { testid: id } });
  return { input, node: h("label", { class: "gen-field", for: id }, h("span", {}, label), input) };
}

/** A field's number, or null when it is empty. */
const valueOf = (f) => (f.input.value.trim() === "" ? null : Number(f.input.value));

/**
 * @param app    the widget's app (lab, runner)
 * @param input  () => Promise<{file, tokens: {ids, words}, numHeads, decode} | null>: what the panel runs on
 */
export function setupGenerate(app, input) {
  const state = { seq: 0, controller: null };
  const maxNew = numberField("gen-max", S.genMax, "10", { min: "1", step: "1" });
  const temperature = numberField("gen-temperature", S.genTemperature, "0", { min: "0", step: "0.1" });
  const topK = numberField("gen-topk", S.genTopK, "", { min: "1", step: "1", placeholder: "None" });
  const seed = numberField("gen-seed", S.genSeed, "123", { step: "1" });
  const cache = h("input", { id: "gen-cache", type: "checkbox", checked: true, dataset: { testid: "gen-cache" } });
  const runButton = h("button", { type: "button", class: "primary", part: "button", dataset: { testid: "gen-run" } }, S.genRun);
  const cancelButton = h("button", { type: "button", class: "small", part: "button", hidden: true, dataset: { testid: "gen-cancel" } }, S.cancel);
  const status = h("p", { class: "muted", role: "status", dataset: { testid: "gen-status" } });
  const text = h("p", { class: "gen-text", dataset: { testid: "gen-text" } });
  const list = h("ol", { class: "gen-steps", dataset: { testid: "gen-steps" } });
  const code = h("pre", { class: "gen-code", dataset: { testid: "gen-code" } });
  const error = h("div", { class: "diagnostics", "aria-live": "assertive", dataset: { testid: "gen-error" } });
  const node = h("section", { class: "gpt2-generate", "aria-labelledby": "gen-title", dataset: { testid: "gpt2-generate" } },
    h("h4", { id: "gen-title" }, S.genTitle),
    h("p", { class: "muted" }, S.genIntro),
    h("div", { class: "gen-options" }, maxNew.node, temperature.node, topK.node, seed.node,
      h("label", { class: "gen-field", for: "gen-cache" }, cache, h("span", {}, S.genCache))),
    h("div", { class: "run-row" }, runButton, cancelButton), error, status, text, list, code);
  runButton.addEventListener("click", () => generate());
  cancelButton.addEventListener("click", () => state.controller?.abort());

  async function generate() {
    const given = await input();
    if (!given) return;
    state.controller?.abort();
    const controller = new AbortController();
    state.controller = controller;
    const seq = ++state.seq;
    const options = { maxNewTokens: valueOf(maxNew), temperature: valueOf(temperature) ?? 0, topK: valueOf(topK), seed: valueOf(seed) ?? 123, cache: cache.checked };
    const piece = (id) => (given.decode ? given.decode([id]) : ` #${id}`);
    const label = (id) => (given.decode ? given.decode([id]).replace(/ /g, "␣") : `#${id}`);
    replace(error);
    replace(list);
    replace(text, h("span", { class: "gen-prompt" }, given.decode ? given.decode(given.tokens.ids) : given.tokens.ids.map((id) => `#${id}`).join(" ")));
    replace(code);
    status.textContent = S.genReading;
    runButton.disabled = true;
    cancelButton.hidden = false;
    node.dataset.tokens = "0";
    let count = 0;
    try {
      const r = await generateGPT2(app.lab, app.runner, given.file, {
        ids: given.tokens.ids, numHeads: given.numHeads, options, signal: controller.signal,
        onToken: (s) => {
          if (seq !== state.seq) return;
          count += 1;
          node.dataset.tokens = String(count);
          text.append(h("span", { class: "gen-token", title: S.genTokenTitle(s.prob), dataset: { testid: "gen-token", id: String(s.token) } }, piece(s.token)));
          list.append(h("li", { dataset: { id: String(s.token) } },
            h("code", { class: "piece" }, label(s.token)), " ", h("span", { class: "gpt2-prob" }, S.gpt2Prob(s.prob)),
            h("span", { class: "muted gen-alternatives" }, S.genAlternatives(s.top.map((t) => `${label(t.id)} ${S.gpt2Prob(t.prob)}`))),
            h("span", { class: "muted" }, S.genCacheLine(s.cacheTokens, s.cacheBytes, s.ms))));
          status.textContent = S.genProgress(count, options.maxNewTokens);
        },
      });
      if (seq !== state.seq) return;
      status.textContent = S.genDone(r.steps.length, r.stoppedBy, r.resident, options.cache);
      code.textContent = S.genCode({ ...options, nCtx: r.nCtx, ids: given.tokens.ids });
      node.dataset.runs = String(Number(node.dataset.runs ?? 0) + 1);
    } catch (err) {
      if (seq !== state.seq) return;
      status.textContent = "";
      replace(error, errorBox(S.genError, err?.code === "cancelled" ? { code: "cancelled", message: S.genCancelled, hint: "" } : err, { testid: "gen-diag", showCode: true }));
    } finally {
      if (seq === state.seq) {
        runButton.disabled = false;
        cancelButton.hidden = true;
      }
    }
  }

  return {
    node,
    reset() {
      state.controller?.abort();
      state.seq++;
      for (const n of [error, text, list, code]) replace(n);
      status.textContent = "";
      runButton.disabled = false;
      cancelButton.hidden = true;
    },
  };
}

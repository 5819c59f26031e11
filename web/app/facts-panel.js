// The facts panel: what follows from the slots before anything runs (head_dim, output width and its
// rule, the mask's size, the key/value cache per token, the run's memory against the core's budget,
// every parameter), all from the edit's Setup (lab.setup: its description, memory estimate and budget,
// computed once in derive()).
import { h, replace } from "./dom.js";
import { S } from "./strings.js";
import { bytesText, mib, shapeText, thousands } from "./format.js";

export function setupFactsPanel(app) {
  const { $ } = app;
  return {
    render({ description: d, hide, memory, budget, reason }) {
      $("fact-headdim").textContent = d.headDim != null ? String(d.headDim) : "—";
      $("fact-width").textContent = hide ? S.outputHidden : d.outputWidth != null ? String(d.outputWidth) : "—";
      $("fact-width").classList.toggle("concealed", hide);
      $("fact-rule").textContent = hide ? "…" : d.outputWidthRule || "—";
      // The mask by the core's rule for the class: a buffer (its dtype and size), built per forward, or none.
      const mask = d.class && S.maskFact[d.class.mask];
      $("fact-mask").textContent = !mask || d.maskBytes == null ? "—"
        : mask(d.class.maskBufferDtype ? d.config.context_length : d.slidingWindowSize, d.class.maskBufferDtype, bytesText(d.maskBytes));
      // What a KV cache of this module holds per token, against multi-head attention of the same width.
      // A latent class caches its latent alone (the core's latentDim and bytes).
      const ratio = d.kvCacheBytesPerTokenMha / d.kvCacheBytesPerToken;
      $("fact-kv").textContent = d.kvCacheBytesPerToken == null ? "—"
        : d.latentDim != null ? S.kvCacheLatent(d.latentDim, bytesText(d.kvCacheBytesPerToken), bytesText(d.kvCacheBytesPerTokenMha), ratio)
          : S.kvCache(d.keyValueHeads, d.headDim, bytesText(d.kvCacheBytesPerToken), bytesText(d.kvCacheBytesPerTokenMha), ratio);
      $("fact-memory").textContent = memory === null ? S.runMemoryUnknown(reason) : S.runMemoryOf(bytesText(memory), mib(budget));
      const params = d.parameters ?? [];
      replace($("params-body"), params.map((p) =>
        h("tr", {}, h("th", { scope: "row" }, h("code", {}, p.name)), h("td", {}, shapeText(p.shape)), h("td", { class: "num" }, thousands(p.count)))));
      $("param-total").textContent = d.parameterCount != null ? thousands(d.parameterCount) : "—";
      $("facts-unavailable").hidden = Boolean(d.parameters);
      $("params-table").closest(".table-scroll").hidden = !d.parameters;
    },
  };
}

// The strings of the GPT-2 section (the whole model and generation, gpt2-panel.js and its parts), which
// the page fetches with that section's code once a file is read: part of the one strings table
// (strings.js), kept apart like strings-panels.js's so that neither the first view nor the panels
// fetched right after it download them. S here is the whole table: strings-panels.js plus these.
import { S as PANELS } from "./strings-panels.js";

export const S = {
  ...PANELS,
  gpt2Title: "The whole model on your tokens",
  gpt2Intro: "Every block of the file runs in turn (read, run, released: one block in memory at a time), in a worker so the page stays responsive. Each small heatmap is one head’s attention pattern: row = query token, column = key token, darker = more weight.",
  gpt2Run: "Run the whole model",
  gpt2Reading: "Reading the file…",
  gpt2Step: (step, layer, done, total) =>
    step === "embedding" ? `Token and position embeddings (step ${done} of ${total})`
      : step === "block" ? `Block ${layer} done (step ${done} of ${total})`
        : `Next-token logits (step ${done} of ${total})`,
  gpt2Error: "The whole model could not run",
  gpt2Cancelled: "The run was cancelled.",
  gpt2Stale: (cancelled, words) =>
    `${cancelled ? "This run was cancelled" : "This run failed"}: the patterns and next tokens below are still those of the previous run, on ${words.length} token${words.length === 1 ? "" : "s"} (${words.slice(0, 12).join(" ")}${words.length > 12 ? " …" : ""}).`,
  gpt2TokensChanged: (words) =>
    `The tokens changed: the patterns and next tokens below are those of the previous tokens (${words.slice(0, 12).join(" ")}${words.length > 12 ? " …" : ""}). Run the whole model again for the new ones.`,
  gpt2NextTitle: "The five most likely next tokens",
  gpt2ClassesTitle: (n) => `The ${n} classes of the classifier’s head`,
  gpt2Class: (id) => `class ${id}`,
  gpt2ClassesNote: "softmax of out_head’s logits at the last position: this file’s head is a classifier’s (the book’s chapter 6 out_head = Linear(emb_dim, num_classes)), not the vocabulary.",
  gpt2NextNote: (layout) =>
    `softmax of the logits at the last position (${layout === "book" ? "final_norm, then out_head" : "ln_f, then the tied wte"}): if these make sense, every block ran correctly.`,
  gpt2Prob: (p) => `${(100 * p).toFixed(p >= 0.001 ? 1 : 3)}%`,
  gpt2GridCaption: (layers, heads, n) => `Attention patterns: ${layers} layers × ${heads} heads on ${n} tokens (pick one for its head view)`,
  gpt2GridAveraged: (cells, n) => `Each pattern is ${cells} × ${cells} cells, each the mean weight of about ${Math.round(n / cells)} × ${Math.round(n / cells)} query-key pairs.`,
  gpt2LayerHead: "layer ╲ head",
  gpt2CellLabel: (layer, head) => `Layer ${layer}, head ${head}`,
  gpt2HeadTitle: (layer, head) => `Layer ${layer}, head ${head}`,
  gpt2HeadNote: "Each query token (left) to the keys it attends to (right): the thicker the line, the more weight. Weights under 1% are not drawn.",
  gpt2HeadLabel: (layer, head) => `Head view of layer ${layer}, head ${head}`,
  gpt2LineTitle: (query, key, w) => `${query} → ${key}: ${w.toFixed(3)}`,
  gpt2HeadMore: (shown, n) => `The first ${shown} of ${n} tokens are drawn.`,
  gpt2TraceLayer: (layer) => `Trace layer ${layer} below, with its real input`,
  genTitle: "Generate text",
  genIntro: "The model writes one token at a time, as the book’s generate (chapter 5) does: greedy at temperature 0, else softmax(logits / temperature) over the top-k logits and torch.multinomial on torch.manual_seed(seed), the same tokens PyTorch picks. With the KV cache each layer keeps its keys and values, so a new token computes one position instead of the whole text again.",
  genMax: "max new tokens",
  genTemperature: "temperature",
  genTopK: "top-k",
  genEos: "eos id",
  genSeed: "seed",
  genCache: "KV cache",
  genRun: "Generate",
  genReading: "Reading the file…",
  genProgress: (n, total) => `Token ${n} of ${total}`,
  genDone: (n, stoppedBy, resident, cache) =>
    `${n} new token${n === 1 ? "" : "s"}${stoppedBy === "eos" ? ", stopped at the end-of-text token" : ""}; ${cache ? "with the KV cache" : "without the cache (the whole text again for each token)"}; ` +
    (resident ? "the weights stayed in memory between tokens." : "the weights were read again from the file for each token (they do not fit the memory budget), which is slower."),
  genTokenTitle: (p) => `probability ${(100 * p).toFixed(2)}%`,
  genAlternatives: (list) => ` · most likely: ${list.join(", ")}`,
  genCacheLine: (tokens, bytes, ms) => ` · cache ${tokens} tokens, ${bytes < 1048576 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`} · ${ms.toFixed(0)} ms`,
  genCode: ({ maxNewTokens, temperature, topK, eosId, seed, nCtx, ids, text }) =>
    `# the book's chapter 5 generate (ch05/01_main-chapter-code), the same ids; the KV cache (ch04/03_kv-cache) does not change them\n` +
    `torch.manual_seed(${seed})${temperature > 0 ? "" : "  # greedy at temperature 0: nothing is drawn"}\n` +
    (text === null ? `idx = torch.tensor([[${ids.join(", ")}]])\n` : `idx = text_to_token_ids(${JSON.stringify(text)}, tokenizer)  # [[${ids.join(", ")}]]\n`) +
    `out = generate(model, idx, max_new_tokens=${maxNewTokens}, context_size=${nCtx}, temperature=${Number.isInteger(temperature) ? temperature.toFixed(1) : temperature}, top_k=${topK ?? "None"}, eos_id=${eosId ?? "None"})` +
    (text === null ? "" : "\nprint(token_ids_to_text(out, tokenizer))"),
  genError: "The model could not generate",
  genCancelled: "The generation was cancelled.",
  // total: the max new tokens asked for, which may be no number at all (an empty field: the run was refused at once)
  genStoppedAt: (cancelled, n, total) => {
    const how = cancelled ? "Cancelled" : "Stopped by an error";
    if (n === 0) return `${how} before the first new token.`;
    const of = Number.isInteger(total) && total >= n ? total : null;
    return `${how} after ${n}${of === null ? "" : ` of ${of}`} new token${(of ?? n) === 1 ? "" : "s"}: the tokens written so far stay, marked as cut short.`;
  },
  genCut: (cancelled) => ` ⟨${cancelled ? "cancelled" : "stopped"} here⟩`,
  genGridTitle: "Where each new token came from: one attention row per layer × head",
  genGridCaption: (n, token, last, keys) =>
    `New token ${n}, ${token}: the attention row of the position that produced it (${last}) over the ${keys} token${keys === 1 ? "" : "s"} it sees, ` +
    "left to right, in every layer (rows) and head (columns). Each row is scaled to its own largest weight (darkest). Pick a new token above to see its rows.",
  genCellTitle: (layer, head, key, w) => `Layer ${layer}, head ${head}: most weight on ${key} (${w.toFixed(3)})`,
  genFollow: "Follow the newest token",
  genCompareRun: (withCache) => (withCache ? "Run the same tokens with the KV cache" : "Run the same tokens without the cache"),
  genCompareProgress: (n, total, withCache) => `${withCache ? "With the KV cache" : "Without the cache"}: token ${n} of ${total}…`,
  genTimesCaption: "Time per new token: the first, which reads the whole prompt (the prefill), then the mean over the others",
  genMsFirst: (ms) => `first ${ms < 10 ? ms.toFixed(2) : ms.toFixed(0)} ms`,
  genTimesNote: "The first new token reads the whole prompt with or without the cache. After it, the cache computes one position per token instead of the whole text again, so it saves more the longer the text and the larger the model; on a model this small each token is mostly fixed overhead, and the cache can look no faster or even slower.",
  genWithCache: "with the KV cache",
  genWithoutCache: "without the cache",
  genMsPerToken: (ms, n) => (n === 0 ? "no token after it" : `then ${ms < 10 ? ms.toFixed(2) : ms.toFixed(0)} ms per token (${n} token${n === 1 ? "" : "s"})`),
  genSameIds: (n) => `Both runs wrote the same ${n} token id${n === 1 ? "" : "s"}: the cache changes the time, not the tokens.`,
  genOtherIds: (k) => `The ids differ from new token ${k} on.`,
};

// The options objects of the public API, each with the one list of the names it has: the facade
// (attention-lab.js, head-split.js) reads an options object through readOptions with its key here,
// and any other name is refused with the nearest valid one ("did you mean temperature?"), so that a
// misspelt option is never ignored silently. tests/node/options.test.mjs checks each list against the
// names the facade reads and the names the .d.ts documents.

/** The names of each options object, by the call that takes it (the call as a reader writes it). */
export const OPTION_NAMES = Object.freeze({
  loadAttentionLab: ["wasmUrl", "wasmBinary", "wasmPaths", "threads", "checkpoints"],
  "lab.check": ["inputShape", "training"],
  "lab.setup": ["inputShape", "training", "trace"],
  "lab.run": ["seed", "training", "trace"],
  "lab.create": ["generator"],
  "lab.fromParameters": ["generator"],
  "lab.copyWeights": ["tokens"],
  "lab.convert": ["layout"],
  "lab.estimateBytes": ["trace"],
  "lab.reserveMemory": ["trace"],
  "lab.loadCheckpoint": ["layer", "num_heads", "context_length", "into"],
  "lab.checkpointInput": ["tokenIds", "layer", "num_heads", "signal"],
  "lab.loadGPT2": ["num_heads"],
  "module.forward": ["training", "generator", "trace", "cache"],
  "module.headShares": ["training"],
  "module.forwardShare": ["training"],
  "module.projectHeads": ["training"],
  "module.newCache": ["window"],
  "trace.heatmap": ["batch", "head", "width", "height"],
  "trace.slice": ["offsets", "sizes"],
  "model.estimateBytes": ["attention"],
  "model.run": ["onProgress", "signal", "attention"],
  "model.attentionInput": ["onProgress", "signal"],
  "model.generate": ["maxNewTokens", "temperature", "topK", "eosId", "generator", "cache", "resident", "window", "attention", "onToken", "signal"],
  createHeadSplit: ["workers", "workerUrl"],
  "split.forward": ["training"],
  "copy plan entry": ["copy", "transpose"],  // each entry of lab.copyWeights's and lab.copyCode's plan
});
for (const names of Object.values(OPTION_NAMES)) Object.freeze(names);

/** Levenshtein distance of a and b (insertions, deletions, substitutions of one character). */
function editDistance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The candidate nearest `word`, ignoring case, within max(2, a third of its length) edits; "" when
 * none is that near. The rule of the core's did_you_mean (core/src/diagnostics.cpp), which names the
 * slot meant by a misspelt slot: "tempreature" -> temperature, "max_new_tokens" -> maxNewTokens.
 */
export function nearestName(word, candidates) {
  if (word.length === 0 || word.length > 200) return "";
  const w = word.toLowerCase();
  let best = "";
  let bestDistance = Math.max(2, Math.floor(w.length / 3)) + 1;
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

/**
 * The refusal of the first of `keys` (an options object's own names) that `where` (a key of
 * OPTION_NAMES) has no option of, as AttentionError's fields: code "unknown_option", the name as the
 * slot, a did-you-mean and the options there are, the object called `what` (default `where`). null
 * when every name is one of its options.
 */
export function unknownOption(where, keys, what = where) {
  const names = OPTION_NAMES[where];
  const unknown = keys.find((k) => !names.includes(k));
  if (unknown === undefined) return null;
  const short = unknown.length > 40 ? `${unknown.slice(0, 40)}…` : unknown;
  const guess = nearestName(unknown, names);
  return {
    code: "unknown_option",
    slot: short,
    message: `${what} has no option ${JSON.stringify(short)}${guess ? `: did you mean ${guess}?` : ""}`,
    hint: `${guess ? `Rename it to ${guess}. ` : ""}The options of ${what} are ${names.join(", ")}.`,
  };
}

// The strings of the panels that load after the first output (compare, checkpoint): part of the one
// strings table (strings.js), kept apart so the first view does not download them. S here is the whole
// table: strings.js plus these.
import { S as FIRST } from "./strings.js";

/** Blocks 0 .. layer-1, read right for one block and for many. */
const blocksBefore = (layer) => (layer === 1 ? "block 0" : `blocks 0 to ${layer - 1}`);

export const S = {
  ...FIRST,
  defaultSentence: "Your journey starts with one step",
  compareNeedsMulti: "Pick MultiHeadAttentionWrapper or MultiHeadAttention in the setup to compare it with its equivalent.",
  compareNeedsValid: "Fix the setup first: the comparison uses its module and tokens.",
  compareTooLarge: "This setup is too large to compare here (both modules run on the main thread); use fewer tokens.",
  converterHeading: "Equivalent configuration",
  waysIntro: (source, n) => `The book’s chapter 3 bonus notebook writes ${source} ${n} ways. Each rewrite below is built with its own seed, given ${source}’s weights by the book’s map (packed rows, transposes, an identity where it has an extra projection), and run on the same tokens in eval mode.`,
  waysRun: "Run all of them",
  cacheIntro: "Generation feeds a model one token at a time. With a KV cache (the book’s ch04/03_kv-cache) each step computes the new token’s query, key and value only, appends the key and value to the cache, and attends over every token so far: one row of attention weights, (1, T_past + 1). Step through the tokens on screen (batch item 0, eval mode, the page’s seed) and compare each output row with the full run’s.",
  cacheIntroLatent: " This class caches its latent c_kv instead (ch04/05_mla): each step appends one latent row and re-projects the keys and values of every token so far from them.",
  cacheStep: "Next token (with the cache)",
  cacheReset: "Start over",
  cacheCaption: "Each cached step: its attention weights, the cache after it, and how far its output is from the full run’s row",
  cacheColumns: ["Position", "attn_weights", "Cache: tokens · bytes", "MultiHeadAttention of this width", "Head 0’s weights over the tokens so far", "max |Δ| to the full run"],
  cacheShape: (shape) => `(${shape.join(", ")})`,
  cacheReady: (n, className) => `${className} with an empty cache: ${n} tokens to feed, one at a time.`,
  cacheStatus: (done, n, heads, tokens, bytes) => `${done} of ${n} tokens fed: the cache holds ${tokens} keys and values per key/value head (${bytes.toLocaleString("en-US")} bytes); each step computed one new row per head (${heads}).`,
  // a latent class caches c_kv alone and re-projects every key and value from it at each step
  cacheStatusLatent: (done, n, heads, tokens, bytes) => `${done} of ${n} tokens fed: the cache holds ${tokens} latent rows c_kv (${bytes.toLocaleString("en-US")} bytes); each step re-projected the keys and values of all ${tokens} from them and computed one new row per head (${heads}).`,
  cacheFactsLabel: "The cache now",
  /** The cache's size as it grows, against MultiHeadAttention of the same width at as many tokens (both numbers from the core). */
  cacheFacts: (tokens, bytes, mhaBytes, latentDim) => {
    const held = latentDim != null ? `the latent c_kv, ${latentDim} float${latentDim === 1 ? "" : "s"} per token` : "keys and values, float32";
    const than = mhaBytes > bytes ? `, ${Number((mhaBytes / bytes).toFixed(2))}× more` : mhaBytes === bytes ? ", the same" : "";
    return `${tokens} token${tokens === 1 ? "" : "s"} · ${bytes.toLocaleString("en-US")} bytes (${held}). MultiHeadAttention of the same width would hold ${mhaBytes.toLocaleString("en-US")} bytes for ${tokens} token${tokens === 1 ? "" : "s"}${than}.`;
  },
  cacheIdle: "Press the button to feed the first token.",
  cacheChanged: "The setup or the tokens changed: the next step starts a new cache.",
  cacheNeedsValid: "Fix the setup above first: the cache steps run the module on screen.",
  waysVerdict: (agree, n, call) => `${agree} of ${n} rewrites agree with ${call} after the copy.`,
  waysCaption: "Each rewrite after the copy: does it agree with MultiHeadAttention, and why not",
  waysColumns: ["Class", "In the book’s repository", "Agrees?", "max |Δ| of the outputs", "Why"],
  waysAgree: "agrees",
  waysDisagree: "differs",
  waysRefused: "cannot be built",
  waysNaN: "NaN",
  converterRule: {
    // keyed by how the module being converted makes its heads
    modules: ({ h, d_out: d, to: total }) => `The wrapper’s d_out is per head: ${h} heads × ${d} = ${total}, the fused module’s total d_out.`,
    fused: ({ h, d_out: total, to: d }) => `The fused module’s d_out is the total: ${total} shared by ${h} heads = ${d} per head, the wrapper’s d_out.`,
  },
  converterUse: (call) => `Switch the setup to ${call}`,
  layoutLabel: "How the heads are stacked into the fused weights",
  layoutStacked: "stacked (correct)",
  layoutInterleaved: "interleaved (the head-merge mistake)",
  layoutHint: "Stacked: head h takes rows h·head_dim … h·head_dim + head_dim − 1 of each fused weight. Interleaved builds the common mistake on purpose (with head_dim 1 the two are the same).",
  compareButton: "Build both and compare",
  compareA: "A: your setup",
  compareB: "B: the equivalent",
  compareAgree: "A and B agree at every stage (within 1e-6).",
  compareDisagree: (id) => `A and B disagree; the first difference appears at ${id}.`,
  compareStage: "Stage",
  compareDiff: "Largest |A − B|",
  compareCaption: "Stage by stage, both modules in eval mode on the same tokens",
  compareOutputRow: (word) => `Output, first row (${word})`,
  compareCode: "The same in PyTorch",
  compareError: "The comparison failed",

  copyDirectionLegend: "Direction",
  copyDirection: (from, to, book) => `${from} → ${to}${book ? " (the book’s exercise)" : ""}`,
  copyCodeTitle: (from, to, book) => (book ? `# Exercise 3.1: ${from}'s weights into ${to}` : `# Exercise 3.1 backwards: ${from}'s matrices into ${to}`),
  copyIntro: (fromCall, fromSeed, toCall, toSeed) =>
    `Builds ${fromCall} after torch.manual_seed(${fromSeed}) and ${toCall} after torch.manual_seed(${toSeed}), copies the matrices you tick from the first into the second, then runs both on the same tokens.`,
  copySizesFromSlots: "d_in and d_out (and SelfAttention_v2’s qkv_bias) come from the slots above.",
  copySizesFallback: "The slots above are not valid sizes, so this uses d_in = 3, d_out = 2.",
  copyPlanCaption: "Which matrices to copy, and whether to transpose each",
  copyPreviewTitle: "The copy in PyTorch (follows the boxes)",
  copyStale: "The direction, the boxes or the setup changed since this copy: press Copy and compare to update it.",
  copyFromTitle: (cls, seed) => `From: ${cls} (seed ${seed})`,
  copyToTitle: (cls, seed) => `To: ${cls} (seed ${seed}), after the copy`,
  /** By how the class stores its weights (the core's `weights` fact). */
  copyRoles: {
    matrix: "Matrices stored (d_in, d_out), used as x @ W.",
    linear: "nn.Linear weights stored (d_out, d_in), used as x @ W.T.",
  },
  copyMatrix: "Matrix",
  copyCopy: "copy",
  copyTranspose: "transpose (.T)",
  copyButton: "Copy and compare",
  copyAction: "What happened",
  copyShapes: (from, to) => `Shape in ${from} → in ${to}`,
  copyReportCaption: "What happened to each matrix",
  copyActions: {
    copied: "copied as is (no .T)",
    transposed: "copied transposed (.T)",
    not_copied: "left at its own initial values",
    shape_mismatch: "shape mismatch: not copied",
  },
  copyLooksTransposed: "looks transposed",
  copyAgree: "The two modules agree: every output value is within 1e-6.",
  copyDisagree: (names, fromClass) =>
    names.length
      ? `The two modules disagree. Check ${names.join(", ")}: nn.Linear stores weight as (d_out, d_in) and computes x @ W.T, SelfAttention_v1 keeps (d_in, d_out) and computes x @ W, so each matrix needs .T ${fromClass === "SelfAttention_v2" ? "on its way into SelfAttention_v1" : "on its way into SelfAttention_v2"}.`
      : "The two modules disagree.",
  copyShapesDiffer: "The outputs have different shapes, so they cannot agree.",
  copyMaxDiff: (v) => `Largest absolute difference between the outputs: ${v}`,
  copySquareTitle: "A silent mistake",
  copySquare: (names, d, diff, first) =>
    `${names.join(" and ")} ${names.length === 1 ? "was" : "were"} copied without .T. With d_in = d_out = ${d} the matrix is square, so its shape (${d}, ${d}) fits either way and PyTorch accepts the copy without any error — but the matrix lands transposed. Only comparing the outputs catches it: they differ by up to ${diff} (first at ${first}).`,
  copyPytorch: "The same in PyTorch",
  copyStage: "Stage",
  copyStageDiff: "Largest difference",
  copyStagesShort: "Largest difference per stage",
  copyStagesCaption: "Stage by stage (both modules in eval mode): every stage agrees.",
  copyFirstDiff: (id) => `Stage by stage (both modules in eval mode): the first difference appears at ${id}.`,
  copyTokensCurrent: (n, dIn) => `Compared on the page’s current tokens (${n} × ${dIn}, from Tokens above).`,
  copyTokensBook: (n) => `Compared on the book’s ${n} tokens.`,
  copyTokensSeeded: (n, dIn) => `Compared on ${n} seeded tokens of width ${dIn}.`,
  copyError: "The copy failed",
  ckptDropTitle: "Drop a .safetensors file on this panel, or choose one:",
  ckptFileLabel: "GPT-2 checkpoint (.safetensors)",
  ckptNoFile: "No file chosen yet.",
  ckptFileName: (name, size) => `${name} — ${size}`,
  ckptLayerLabel: "Layer (the block h.N to load)",
  ckptLayerHint: "0 is the first transformer block.",
  ckptLayerRange: (last) => (last === 0 ? "This file has one layer, layer 0." : `This file has layers 0 to ${last}.`),
  ckptHeadsLabel: "num_heads (optional)",
  ckptHeadsHint: (sizes) => `Leave empty for the file's __metadata__ n_head when it has one, else a GPT-2 width's: ${sizes.map((g) => `${g.n_embd} → ${g.n_head}`).join(", ")}.`,
  ckptContextLabel: "context_length (optional)",
  ckptContextHint: "Only needed when the file has neither wpe.weight nor a mask buffer to give it.",
  ckptFieldBad: "Use a whole number (0 or more for the layer, 1 or more otherwise), or leave it empty.",
  ckptTargetLegend: "Load into",
  ckptTargetNew: "a new MultiHeadAttention(d, d, context_length, 0.0, num_heads, qkv_bias=True) built from the file",
  ckptTargetCurrent: "the current module from the setup above",
  ckptTargetNote: (call) => `The current module is ${call}: the file must fit it exactly (all or nothing; num_heads and context_length come from it).`,
  ckptTargetNeedsMha: "Loading into the current module needs a valid MultiHeadAttention in the setup above.",
  ckptLoad: "Load the layer",
  ckptReading: (name) => `Reading the header of ${name}…`,
  ckptLoadError: "The checkpoint could not be loaded",
  ckptOptionsChanged: "The options changed since the last attempt: press Load (or Enter) to load the file with them.",
  ckptLoaded: (layer, name, call) => `Loaded layer ${layer} of ${name} into ${call}.`,
  ckptBytesRead: (read, size) => `Read ${read} of the file’s ${size}: the header and the slices this layer needs.`,
  ckptSourcesTitle: "The source of each setting",
  ckptSourceNames: { d: "d_in = d_out", num_heads: "num_heads", context_length: "context_length", prefix: "key prefix", layers: "layers in the file", vocab: "vocabulary" },
  ckptUsedTitle: (n) => `Keys used (${n})`,
  ckptTransposed: "transposed: Conv1D keeps (in, out), nn.Linear (out, in)",
  ckptMissingTitle: (n) => `Missing (${n})`,
  ckptMissingNone: "Nothing a GPT-2 attention layer needs is missing.",
  ckptMissingNote: "A GPT-2 layer normally has it; the module keeps no such parameter or its own initial value.",
  ckptIgnoredTitle: (n) => `Keys ignored (${n}), and why`,
  ckptIgnoredKey: "Key",
  ckptIgnoredReason: "Why it was not used",
  ckptIgnoredMore: (n) => `… and ${n} more keys, not listed.`,
  ckptInterrupted: "The widget was taken off the page while it read the file; choose Load (or Run) again.",
  ckptParamsCaption: "The loaded module’s parameters",
  ckptCode: "The same in PyTorch",
  ckptRunTitle: (layer) => `Run layer ${layer} on your tokens`,
  ckptRunIntro: (layer) =>
    layer === 0
      ? "The layer’s input is ln_1(wte[ids] + wpe[:num_tokens]), read from the file: exactly what GPT-2’s first attention sees."
      : `The layer’s input is what ${blocksBefore(layer)} ${layer === 1 ? "leaves" : "leave"}, through layer ${layer}’s ln_1: the page runs ${layer === 1 ? "that block" : "those blocks"} first, one at a time, so the file must hold the whole model.`,
  ckptKindLegend: "Tokens",
  ckptKindText: "Text, tokenized with GPT-2’s BPE (r50k_base)",
  ckptKindIds: "Token ids, comma-separated (for files with a small vocabulary)",
  ckptTextLabel: "Text",
  ckptIdsLabel: "Token ids",
  ckptIdsHint: "Whole numbers separated by commas, e.g. 11, 0, 7.",
  ckptIdsBad: "Type whole numbers (0 or more) separated by commas.",
  ckptTokenizing: "Loading GPT-2’s vocabulary…",
  ckptTokenizerFailed: (msg) => `GPT-2’s tokenizer could not be loaded (${msg}). Type token ids instead.`,
  ckptTokensCaption: (n) => `${n} GPT-2 token${n === 1 ? "" : "s"} (piece and id; ␣ is a space):`,
  ckptTokensMore: (n) => `… and ${n} more`,
  ckptNoTokens: "Type at least one token.",
  ckptRun: "Run the layer",
  ckptRunError: "The layer could not run",
  ckptTraceFor: (layer, call, n, ids) => `Layer ${layer}: ${call} on ${n} token${n === 1 ? "" : "s"} [${ids}], eval mode.`,
  ckptStagesNav: "Stages of the loaded layer",
  ckptAgreement: (layer, { maxDiff, heads, tokens }) => (maxDiff <= 1e-5
    ? `This is the whole model’s block ${layer}: its attention weights equal those of the whole-model run above on the same tokens (${heads} heads, first ${tokens} tokens; largest difference ${maxDiff === 0 ? "0: bit for bit" : maxDiff.toExponential(1)}).`
    : `Its attention weights differ from the whole model’s block ${layer} on the same tokens by up to ${maxDiff.toExponential(1)} (${heads} heads, first ${tokens} tokens).`),
  ckptAgreementHow: (layer) => `To see that this layer is the whole model’s block ${layer}, run the whole model above on the same tokens, then trace layer ${layer} from its grid.`,
  ckptTraceName: (layer) => `(GPT-2 layer ${layer})`,
  ckptInputWhy: (layer) => (layer === 0
    ? "ln_1(wte[ids] + wpe[:num_tokens]): what layer 0’s attention reads, one row per token."
    : `ln_1 of the residual stream after ${blocksBefore(layer)}: what layer ${layer}’s attention really reads, one row per token.`),

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
  gpt2NextNote: "softmax of the logits at the last position (ln_f, then the tied wte): if these make sense, every block ran correctly.",
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

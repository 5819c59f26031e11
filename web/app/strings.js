// Every string the page and the <attention-lab> widget show a reader, in one table so they can be
// translated. Plain strings are used as text; functions build sentences from numbers and names.
// Nothing here is ever parsed as HTML: the widget sets these with textContent only.

import { isolate as iso, thousands as n } from "./format.js";

// Counts in sentences carry thousands separators (n()); values shown as Python (shapes, slot = value) do not.
/** A GPT-2 preset's title from its slot texts: "768 wide, 12 heads of 64, context 1024". */
function gpt2Title(slots) {
  return `${slots.d_out} wide, ${slots.num_heads} heads of ${Number(slots.d_out) / Number(slots.num_heads)}, context ${slots.context_length}`;
}
/** A mask's fill (ClassFacts.maskFill) in a sentence: −inf, or float32's most negative value. */
const fillName = (fill = -Infinity) => (fill === -Infinity ? "−inf" : "torch.finfo(float32).min");

export const S = {
  loading: "Loading the attention core…",
  loadFailed: (msg) => `The attention core could not be loaded: ${msg}`,
  trustedTypes: (policy) => `the page requires Trusted Types and does not allow the policy "${policy}", through which the widget starts its background Worker`,
  trustedTypesHint: (policy) => `Add ${policy} to the trusted-types directive of the page's Content-Security-Policy, beside your own policies (e.g. trusted-types ${policy} your-policy): the widget passes only its own run-worker.js through it. Meanwhile large runs and checkpoints run on the page's thread.`,
  widgetLabel: "attention-lab: an attention module, slot by slot",

  presetsHeading: "Presets",
  presets: {
    bookToy: "Book toy (3→2)",
    exercise32: "Exercise 3.2",
    gpt2Small: "GPT-2 small",
    gpt2Medium: "GPT-2 medium",
    gpt2Large: "GPT-2 large",
    gpt2XL: "GPT-2 XL",
    gqaToy: "GQA toy (4 heads, 2 groups)",
    swaToy: "Sliding window toy (3)",
    gqaSmall: "GQA 768 (4 groups)",
    mqaSmall: "MQA 768 (1 group)",
    swaSmall: "Sliding window 768 (4)",
    mlaToy: "MLA toy (latent 2)",
    mlaSmall: "MLA 768 (latent 96)",
    combinedQkvSmall: "Packed qkv (768)",
    einsumSmall: "Einsum (768)",
    sdpaSmall: "scaled_dot_product_attention (768)",
    sdpaNoFlashSmall: "SDPA, inverted mask (a bug)",
    flexSmall: "FlexAttention (768)",
    nnMhaSmall: "nn.MultiheadAttention (768)",
    pkgMhaSmall: "llms_from_scratch’s MHA (768)",
  },
  // A preset's title: the call it makes (from the core), on which tokens, and what to see in it. Only
  // what the call does not say is written here; the GPT-2 sizes' titles come from their slots.
  presetTitle: (call, bookTokens, what) => `${call}${bookTokens ? " on the book’s six tokens" : ""}${what ? `: ${what}` : ""}`,
  presetTitles: {
    exercise32: "two heads whose outputs are 1 wide each",
    // the GPT-2 sizes' titles from their presets' slots (the core's one size table)
    gpt2Small: gpt2Title,
    gpt2Medium: gpt2Title,
    gpt2Large: gpt2Title,
    gpt2XL: gpt2Title,
    gqaSmall: "12 query heads, 4 key/value heads",
    mqaSmall: "multi-query attention",
    mlaSmall: "latent_dim = max(16, 768 // 8) = 96",
  },
  presetsHint: "A preset fills every slot and runs the forward pass. GPT-2 presets use the sentence with seeded embeddings of width d_in.",
  presetNote: (name, note) => `${name}: ${note}.`,
  presetsLocked: "Presets are off: this exercise locks some slots.",

  setupHeading: "1. Set up the module",
  classLabel: "Class",
  classGroup: (book) => `Chapter ${book.chapter}${book.section ? "" : " bonus"}: ${book.folder}`,
  callLabel: "Call (paste one, or edit the slots below)",
  callHint: "Positional values fill the slots left to right; keywords like dropout=0.1 fill a slot by name. nn. prefixes, True/False, 0. and .0, trailing commas and # comments are fine.",
  callLocked: (names) => `This exercise locks ${names}: a call that names other values keeps the locked ones, and says so under the box.`,
  // The lock notice: what a call, an attribute or a link asked of a locked value ({name, kept, asked, by}), and why it did not change.
  lockHeld: ({ name, kept, asked, by }) => {
    const who = by.startsWith("attr:") ? `the ${by.slice(5)} attribute` : { call: "the call", "call-attr": "the call attribute", url: "the link", fix: "the fix" }[by] ?? by;
    if (name === "class") return `The class stays ${kept}: it is locked by this exercise (${who} names ${asked}).`;
    if (name === "tokens") return `The tokens stay as they are: they are locked by this exercise (${who} asks for others).`;
    return `${name} stays ${kept || "empty"}: it is locked by this exercise (${who} ${asked ? `asks for ${asked}` : "leaves it out"}).`;
  },
  keywordForm: "Keyword form",
  namedHeading: "Each value, named",
  sourceNames: { positional: "positional", keyword: "keyword", default: "default", missing: "missing" },
  unknownSlot: "not a slot of this class",
  slotsHeading: "Slots",
  slotPosition: (n) => `slot ${n}`,
  slotWord: "slot ",
  slotDefault: (v) => `default ${v}`,
  slotRequired: "required",
  slotTypes: { int: "int", float: "float", bool: "bool", "int | None": "int or None", "torch.dtype | None": "dtype or None" },
  slotLocked: "locked",
  slotLockedNote: "Locked by this exercise.",
  consequenceLabel: "So: ",
  consequences: {
    dInV1: (dIn, dOut) => `each token is ${dIn} numbers wide; W_query is (d_in, d_out) = (${dIn}, ${dOut}), used as x @ W_query.`,
    dIn: (dIn, dOut) => `each token is ${dIn} numbers wide; W_query.weight is (d_out, d_in) = (${dOut}, ${dIn}), used as x @ W.T.`,
    dOutHidden: (dOut) => `each head’s queries, keys and values are ${dOut} wide.`,
    // keyed by how the class makes its heads (the core's describe(...).class.heads)
    dOut: {
      single: ({ dOut }) => `each context vector is ${dOut} wide, and d_k = ${dOut} in the scaling.`,
      modules: ({ h, dOut, width }) => `per head: each of the ${h} heads outputs ${dOut}, so the output is ${h} x ${dOut} = ${width} wide.`,
      fused: ({ h, headDim, dOut, square }) => `the total width, shared by ${h} heads of head_dim ${headDim}; the output projection is (${dOut}, ${dOut})${square ? "; this class needs d_in = d_out" : ""}.`,
    },
    numHeads: {
      single: () => "",
      modules: ({ h, dOut }) => `${h} separate CausalAttention heads, each ${dOut} wide, concatenated on the last axis.`,
      fused: ({ h, headDim, dOut }) => `head_dim = d_out / num_heads = ${dOut} / ${h} = ${headDim}.`,
    },
    // keyed by the mask buffer's dtype ("" when the class has none: then the forward never reads context_length)
    contextLength: ({ ctx, bytes, dtype }) => dtype ? `a ${n(ctx)} × ${n(ctx)} ${dtype} mask buffer (${bytes}); at most ${n(ctx)} tokens.`
      : `stored, but the forward never reads it: more than ${n(ctx)} tokens still run.`,
    dropoutOff: "no weight is dropped.",
    dropoutIgnored: "stored, but this class’s forward applies no dropout (FlexAttention has none).",
    dropoutEval: (p) => `no effect in eval mode (in train mode each weight is zeroed with probability ${p}).`,
    dropoutAll: "in train mode every weight is zeroed (p = 1): the output carries no attention, and PyTorch draws no random numbers for it.",
    dropoutTrain: (p, scale) => `in train mode each weight is zeroed with probability ${p}; survivors ×1/(1−p) = ${scale}.`,
    biasOn: (dOut, perHead) => `query, key and value each add a bias of ${dOut}${perHead ? " per head" : ""}.`,
    biasOff: "query, key and value are plain matrix products (no bias).",
    latentDim: (latent, isDefault, dOut) =>
      `c_kv = W_DKV(x) is ${n(latent)} numbers per token${isDefault ? " (None: the default for this d_out)" : ""}; W_DKV.weight is (${latent}, d_in), W_UK.weight and W_UV.weight (${dOut}, ${latent}); a KV cache keeps these ${n(latent)} instead of 2 × ${n(dOut)} keys and values.`,
  },

  factsHeading: "2. Before you run",
  headDim: "head_dim",
  headDimNote: "d_k in the 1/√d_k scaling",
  outputWidth: "Output width",
  outputWidthRule: "Rule",
  outputHidden: "hidden until you run (you chose to predict first)",
  maskSize: "Mask",
  // The mask fact by the core's mask rule (describe(...).class.mask) and buffer dtype.
  maskFact: {
    none: () => "none (this class does not mask)",
    causal_buffer: (side, dtype, size) => `causal: a ${n(side)} × ${n(side)} ${dtype} buffer = ${size}`,
    causal_tokens: (window) => window ? `sliding window of ${n(window)} keys, built for the tokens given (no buffer)` : "causal, built for the tokens given (no buffer)",
    inverted_buffer: (side, dtype, size) => `a ${n(side)} × ${n(side)} ${dtype} buffer = ${size}, passed where True means “attend”: inverted, each query sees only later keys`,
  },
  runMemory: "A traced run needs about",
  runMemoryUnknown: (reason) => (reason ? `— until the run can start (${reason.replace(/\.$/, "")})` : "—"),
  // The core's estimate (module, forward, trace and the page's copy of it) against the core's one budget.
  runMemoryOf: (bytes, budget) => `${bytes}, of the ${budget} MiB budget`,
  paramsCaption: "Parameters (PyTorch named_parameters() order)",
  paramName: "Name",
  paramShape: "Shape",
  paramCount: "Count",
  paramTotal: "Total",
  factsUnavailable: "Fix the errors in the setup to see the derived sizes.",

  diagLevels: { error: "Error", warning: "Warning", info: "Note" },
  pytorchPrefix: "PyTorch itself: ",
  pytorchSilent: "PyTorch itself: runs without complaint.",
  seeSlot: (name) => `see ${name}`,
  tryValues: "Try:",
  fixTo: (slot, value) => `${slot} = ${value}`,
  backToClass: (className) => `back to ${className}`,

  tokensHeading: "3. Tokens",
  // layout="compact" (compact-layout.js): the one-line summaries of the collapsed boxes
  compactFactsSummary: "head_dim, the output width and its rule, the parameters: open when you have predicted, or to check.",
  compactTokens: (source, batch, seed, training) => `${source}${batch === null ? "" : `, batch ${batch}`}, seed ${iso(String(seed))}, ${training ? "train" : "eval"}`,
  sourceLegend: "Embeddings",
  sourceBook: "The book’s six tokens (3-d embeddings)",
  sourceSentence: "My sentence, seeded embeddings of width d_in",
  sourceRandom: "Random tokens: torch.rand(num_tokens, d_in)",
  sourceCustom: "My own numbers (edited in the grid below)",
  sentenceLabel: "Sentence (split on spaces; a repeated word reuses its embedding)",
  countLabel: "num_tokens",
  countHint: (ctx) => (ctx ? `at most context_length = ${ctx}` : "how many random tokens"),
  fillContext: (count) => `Fill the context (${n(count)} random tokens)`,
  fillContextSwitch: (count, from) => `Fill the context with ${n(count)} random tokens (instead of ${from})`,
  sourceShort: { book: "the book’s tokens", sentence: "the sentence", custom: "your grid" },
  bookSentence: "Your journey starts with one step",
  bookNeedsDin3: (dIn) =>
    `The book’s embeddings are 3 numbers wide, but d_in is ${dIn}. Use seeded embeddings, or set d_in to 3.`,
  customNeedsShape: (rows, cols, dIn) =>
    `Your grid is ${rows} × ${cols}, but d_in is ${dIn}. Start a new grid from the current tokens, or set d_in back to ${cols}.`,
  useSeeded: "Use seeded embeddings",
  wordCount: (count) => `${n(count)} token${count === 1 ? "" : "s"}`,
  batchLabel: "Batch size b",
  batchOption: (b) => (b === 1 ? "1 sequence" : `${b} stacked copies`),
  batchNote: "b copies of the sequence, like the book’s torch.stack((inputs, inputs)).",
  batchDisabled: "SelfAttention_v1 and _v2 take one sequence (num_tokens, d_in), with no batch axis.",
  seedLabel: "Seed (torch.manual_seed)",
  seedNote: "The module is built right after torch.manual_seed(seed); seeded embeddings use their own generator with the same seed.",
  seedError: (range) => `Use a whole number from ${range.lowest} to ${range.highest}.`,
  modeLegend: "Mode",
  modeTrain: "train (a fresh module)",
  modeEval: "eval (model.eval())",
  dropoutNote:
    "Dropout only acts in train mode with dropout > 0. The masks match PyTorch’s default CPU kernel; PyTorch builds that use MKL on Intel CPUs may draw a different dropout mask.",
  gridHeading: "Edit the embeddings",
  gridCaption: (n, d) => `Token embeddings x, shape (num_tokens=${n}, d_in=${d}): edit any number`,
  gridTooLarge: (rows, d) => `The grid is editable up to 16 tokens × 16 numbers; these tokens are ${n(rows)} × ${n(d)}.`,
  gridCell: (word, j) => `${word}, dimension ${j}`,
  gridBad: (n) => `${n} cell${n === 1 ? " is" : "s are"} not a number.`,
  reasonGrid: "a number in the embedding grid is not valid.",

  predictHeading: "4. Predict, then run",
  // The example is never the setup's own answer (predict-panel.js picks it).
  predictLabel: (example) => `Output shape you expect (e.g. ${example}, or just the width)`,
  predictHint: "Optional. After the run the page says whether your prediction held, and why.",
  quizLabel: "Hide the output width until I run",
  predictBad: (example, width) => `Write a shape such as ${example}, or a single width such as ${width}.`,
  predictHeld: (shape) => `Your prediction held: the output is ${shape}.`,
  predictMissed: (pred, shape) => `Your prediction ${pred} did not hold: the output is ${shape}.`,
  predictWhyWidth: (rule) => `Width: ${rule}.`,
  predictWhyPerHead: "Here d_out is per head, so the heads’ outputs are concatenated to num_heads x d_out.",
  predictWhyHeadDim: "That is head_dim, the width of one head; the heads are merged back to d_out.",
  predictWhyShared: "Here d_out is the total width: the heads share it.",
  predictWhyBatch: (b) => `The first axis is the batch: ${b} stacked cop${b === 1 ? "y" : "ies"} of the sequence.`,
  predictWhyNoBatch: "SelfAttention_v1 and _v2 take one sequence, so there is no batch axis.",
  predictWhyTokens: (n) => `One row per token: num_tokens = ${n}.`,

  runButton: "Run forward pass",
  // lab.kernel and lab.threads: which WebAssembly binary runs, on how many threads (issue 21.3, 21.2)
  // (a large setup runs in a worker: threads is null until the worker has loaded)
  runReady: (kernel, threads = 1, inWorker = false) =>
    `Ready: the forward pass runs in your browser (WebAssembly SIMD${kernel === "relaxed_madd" ? ", fused multiply-add" : ""}${threads === null ? "" : threads > 1 ? `, ${threads} threads` : ", one thread"}${inWorker ? ", in a worker" : ""}).`,
  runBlocked: (reason) => `Run is disabled: ${reason}`,
  reasonErrors: (n) => `${n} error${n === 1 ? "" : "s"} in the setup (marked in red above).`,
  reasonNoWords: "type at least one word.",
  reasonCount: "num_tokens must be a whole number from 1 to 4096.",
  reasonBookDin: "the book’s tokens need d_in = 3.",
  reasonSeed: (range) => `the seed must be a whole number from ${range.lowest} to ${range.highest}.`,
  reasonInput: "the tokens do not fit the module (see Tokens).",
  reasonMemory: "the run needs more memory than this page allows (see Tokens).",
  reasonLoading: "the attention core is still loading.",
  reasonCustomShape: "the embedding grid does not match d_in.",
  running: "Running…",
  runningFor: (s) => `Running the forward pass… ${s} s`,
  rendering: (i, n) => `Drawing stage ${i} of ${n}…`,
  cancel: "Cancel",
  cancelled: "The run was cancelled.",
  workerFailed: "the background run failed",
  runError: "The run stopped with an error",
  memoryLarge: (mib) => `This run needs about ${mib} MiB; it runs in the background and the page stays usable.`,

  traceHeading: "5. Every stage of the forward pass",
  traceEmpty: "Press Run to trace the forward pass.",
  traceStale: (call) => `These results are for ${iso(call)}. The setup changed: press Run to update them.`,
  heatmapSharedScale: (lo, hi) => `Every heatmap of this stage uses one colour scale, from ${lo} to ${hi}, so heads and batch items compare by colour.`,
  scrollCue: "Scroll sideways for more columns →",
  staleBanner: "The setup has changed since these results were made.",
  staleBlocked: (reason) => `The setup has changed since these results were made, and cannot run yet: ${reason}`, // each reason ends with its own period
  staleRun: "Run the new setup",
  traceFor: (call, tokens, mode) => `${iso(call)} on ${tokens}, ${mode} mode.`,
  tokensBook: (sentence) => `“${sentence}” (book embeddings)`,
  tokensSentence: (sentence) => `“${iso(sentence)}” (seeded embeddings)`,
  tokensRandom: (count) => `${n(count)} random tokens`,
  tokensCustom: (n) => `${n} tokens from the grid`,
  batchSuffix: (b) => `, batch ${b}`,
  modeNames: { train: "train", eval: "eval" },
  stagesNav: "Stages",
  outputSummary: (shape, width, rule) => `Output: ${shape} — width ${width}: ${rule}`,
  shapeLabel: "Shape",
  summaryLabel: (min, max, mean) => `min ${min} · max ${max} · mean ${mean}`,
  wholeTensor: "All values: ",
  summaryMasked: (count, fill) => ` · ${n(count)} masked (${fillName(fill)})`,
  truncated: (rows, cols, shownRows, shownCols) =>
    `Showing ${shownRows} of ${rows} rows and ${shownCols} of ${cols} columns.`,
  rowSum: "row sum",
  rowSumsOne: "Every row sums to 1: softmax turns each row of scores into weights.",
  exactZeros: (each, size, total, fill) => `${n(each)} of the ${n(size)} weights in each query × key slice ${each === 1 ? "is" : "are"} exactly 0 (shown as 0, ${n(total)} in all): the masked positions, because ${fillName(fill) === "−inf" ? "exp(−inf) = 0" : "exp(torch.finfo(float32).min − the row’s max) underflows to 0"}.`,
  scaleNote: (dk, scale, source) => `Scaled by 1/√d_k = 1/√${dk} = ${scale} before the softmax; d_k = ${source}.`,
  dkSources: {
    single: (d) => `keys.shape[-1] = d_out = ${d}`,
    fused: (d) => `keys.shape[-1] = head_dim = d_out / num_heads = ${d}`,
    modules: (d) => `keys.shape[-1] = the head’s d_out = ${d}`,
  },
  rowSumsDropout: (p, scale) =>
    `Dropout (p = ${p}) zeroed some weights and scaled the survivors by 1/(1−p) = ${scale}, so rows no longer sum to 1; they do on average.`,
  rowSumsNoDropout: (why) => `Dropout is off here (${why}), so the weights pass through unchanged and rows still sum to 1.`,
  dropoutOffEval: "eval mode",
  dropoutOffZero: "dropout = 0.0",
  keptHeading: (scale) => `Kept mask: each weight is multiplied by ${scale} (kept) or 0 (dropped)`,
  keptNote: (kept, total, p) => `${kept} of ${total} unmasked weights kept (${total ? Math.round((100 * kept) / total) : 0}%; expected ${Math.round(100 * (1 - p))}%). A masked weight is 0 either way (shown as —).`,
  // On the latent stage: the low-rank factorisation the latent is (tested natively: within 1e-5).
  latentNote: (latent, dOut) =>
    `W_UK(W_DKV(x)) = x @ (W_UK.weight @ W_DKV.weight).T (+ W_UK.weight @ W_DKV.bias + W_UK.bias with qkv_bias): this module equals a MultiHeadAttention whose W_key.weight is W_UK.weight @ W_DKV.weight and W_value.weight is W_UV.weight @ W_DKV.weight, (${dOut}, d_in) matrices of rank at most ${latent}. The latent saves the cache, not the arithmetic.`,
  maskNote: (fill) => `1 marks a future position (key after query). Before softmax it becomes ${fillName(fill)}; after softmax its weight is exactly 0.`,
  maskNoteWindow: (w, fill) => `1 marks a hidden key: a future position (key after query), or a key ${w} or more positions before the query (outside the window of ${w}). Before softmax it becomes ${fillName(fill)}; after softmax its weight is exactly 0.`,
  maskNoteInverted: "1 marks a hidden key, and here that is every key at or before the query: the mask is inverted. A boolean attn_mask means “attend” in scaled_dot_product_attention but “hide” in nn.MultiheadAttention and masked_fill; the fix is ~mask or is_causal=True.",
  rowSumsNaN: (rows, n) => `${rows} of the ${n} rows ${rows === 1 ? "is" : "are"} NaN: that query sees no key at all (every score −inf), and softmax of a row of −inf is 0/0. Every later stage inherits the NaN.`,
  maskedCount: (each, size, total, fill) => `${n(each)} of the ${n(size)} scores in each query × key slice set to ${fillName(fill)} (${n(total)} in all).`,
  concatHeading: "Where each head lands",
  concatHead: (h, from, to) => `head ${h} → columns ${from}–${to}`,
  concatHeadOne: (h, col) => `head ${h} → column ${col}`,
  // keyed by how the class makes its heads (describe(...).class.heads)
  concatNote: {
    fused: (h, hd) => `context_vec.transpose(1, 2) puts the heads next to each other; .view(b, num_tokens, d_out) lays head h in columns h·${hd} … h·${hd}+${hd - 1}.`,
    modules: (h, d) => `torch.cat([head(x) for head in self.heads], dim=-1): each head adds ${d} column${d === 1 ? "" : "s"}.`,
  },
  heatmapLabel: (title) => `Heatmap of ${title}`,
  heatmapHover: "Hover a cell, or focus the map and use the arrow keys, to read a value.",
  heatmapKeys: (title) => `${title}: use the arrow keys to read values`,
  heatmapScaled: (rows, cols, shown, px) => `${n(rows)} × ${n(cols)} values shown on ${shown} × ${shown} pixels${px !== shown ? ` (${px} × ${px} at this screen’s density)` : ""}: each pixel shows the largest value it covers.`,
  logScale: "(log scale)",
  legendMasked: "grey: exactly 0",
  cornerAttention: "query ╲ key",
  headCaption: (axis, i) => (axis === "num_kv_groups" ? `key/value head ${i}` : `${axis} ${i}`),
  batchTab: (axis, i) => `${axis} = ${i}`,
  headTab: (i) => `head ${i}`,
  sliceLabel: (axis) => `Choose ${axis}`,
  masked: "masked",
  exportLabel: "Download",
  exportStage: (id) => `Download ${id}`,
  exportFormats: { json: "JSON", csv: "CSV", npy: ".npy" },
  exportHeatmap: { png: "PNG", svg: "SVG" },
  exportHeatmapLabel: (name, fmt) => `Download the heatmap of ${name} as ${fmt}`,
  exportStageLabel: (id, fmt) => `Download ${id} as ${fmt}`,
  nonFiniteStage: "Numbers went bad here:",
  kvCacheLabel: "Key/value cache per token",
  kvCache: (heads, headDim, bytes, mhaBytes, ratio) => (ratio > 1
    ? `${bytes} (${heads} key/value head${heads === 1 ? "" : "s"} of ${headDim}, keys and values), ${Number(ratio.toFixed(2))}× less than MultiHeadAttention of this width (${mhaBytes})`
    : `${bytes} (keys and values, float32), per token and layer`),
  // A class whose keys and values are re-projected from a latent caches the latent alone.
  kvCacheLatent: (latent, bytes, mhaBytes, ratio) =>
    `${bytes} (the latent c_kv: latent_dim = ${n(latent)} floats, float32; keys and values are re-projected from it), ${Number(ratio.toFixed(2))}× less than MultiHeadAttention of this width (${mhaBytes})`,
  groupMapHeading: (kv, q, size) => `${kv} key/value head${kv === 1 ? "" : "s"} for ${q} query heads: each shared by ${size}`,
  groupMapItem: (g, from, to) => (from === to ? `k/v ${g} → query head ${from}` : `k/v ${g} → query heads ${from}–${to}`),
  /** The class a widget starts on (with the book's toy sizes) when nothing else is given. */
  defaultClass: "MultiHeadAttention",
  stageWhy: {
    input: "The token embeddings the module reads: one row per token.",
    queries: "What each token is looking for.",
    keys: "What each token offers to be matched against.",
    values: "What each token passes on once it is attended to.",
    c_kv: "One small vector per token, the only thing a KV cache of this module keeps: keys and values are re-projected from it.",
    attn_scores: "Every query dotted with every key: row i says how strongly token i matches each token.",
    mask: "1 marks a key the query may not see (a later token; with a sliding window, also one too far back): the title gives this module’s rule.",
    attn_scores_masked: "Hidden positions set to −inf so softmax gives them weight exactly 0.",
    // (a class whose mask fills torch.finfo(float32).min instead: stageWhyFinfo)
    attn_weights: "Scaled by 1/√d_k, then softmax along each row.",
    attn_weights_dropout: "Dropout on the weights (train mode only).",
    context_vec: "Each token’s weighted sum of the values.",
    heads_concat: "The heads side by side on the last axis.",
    out_proj: "A final linear layer mixes the heads (its formula shows whether it adds a bias).",
    output: "What the module returns.",
  },
  /** attn_scores_masked's why for a class whose ClassFacts.maskFill is finite (GatedMultiHeadAttention). */
  stageWhyFinfo: "Hidden positions filled with the most negative float32 (torch.finfo(torch.float32).min), so exp gives exactly 0 unless a whole row is masked (that row would get equal weights, not the NaN of −inf).",

  compareHeading: "6. Compare two modules, or check your own",
  compareLegend: "What to compare",
  compareConvert: "MultiHeadAttentionWrapper ↔ MultiHeadAttention (same weights)",
  compareCopy: "SelfAttention_v2 ⇄ SelfAttention_v1: copy the weights (exercise 3.1)",
  compareWays: "The same MultiHeadAttention, eight ways (the chapter 3 bonus rewrites)",
  compareCache: "Step with the KV cache: one token at a time (ch04/03_kv-cache)",
  compareCheck: "Check your own module: the file your notebook saves",

  ckptHeading: "7. Real GPT-2 weights",
  ckptIntro:
    "Load one layer’s attention from a GPT-2 checkpoint: a .safetensors file (for example model.safetensors of the Hugging Face gpt2 repository) or a file torch.save wrote (pytorch_model.bin, a .pth), told apart by its bytes. The page reads only the file’s header and the few slices it needs, in your browser: the file is never read whole and never leaves your computer.",
  errorCode: "Error code: ",
  unknownError: "something went wrong",

  codeHeading: "8. The same in PyTorch",
  codeIntro: "This code reproduces exactly what is on screen: the seed, the constructor, the input, the forward pass (and the comparison, when one is shown). The classes are the book’s chapter 3 code.",
  codeCopy: "Copy the code",
  codeCopied: "Copied.",
  codeCopyFailed: "Select the code and copy it by hand (the clipboard is not available here).",
  codeNoRun: "# Fix the setup to see the code.",

  urlBadClass: (name) => `The link names an unknown class “${iso(name)}”; showing MultiHeadAttention instead.`,
  urlStateTaken: "Another attention-lab on this page already keeps its state in the URL; this one does not (give each widget its own url-prefix to share the URL).",
  urlBadValue: (key) => `The link’s value for ${key} was not usable and was ignored.`,
  urlTooLong: (key, length, most) => `The link’s value for ${key} is ${n(length)} characters long (at most ${most}) and was ignored.`,
  urlTokensCut: (length, kept) => `The link’s tokens were ${n(length)} characters long: only the first ${n(kept)} are used.`,
  urlPrefixBad: (prefix, fix, clash) =>
    `url-prefix="${prefix}" is not used: a prefix must end with a character other than a letter, a digit or _ (such as -), or its keys could be another widget's${clash ? ` (${clash})` : ""}. Try url-prefix="${fix}".`,
};

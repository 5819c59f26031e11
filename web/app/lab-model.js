// The widget's state and what follows from it, as plain functions of (lab, state): the module's
// config as the library reads it, the tokens, the input shape, the run key, the calls. No DOM here:
// panels render from these, and change the state only through the app's setState (lab-app.js).
import { S } from "./strings.js";
import { callText, f32Text, pyValue, slotValueFromText } from "./format.js";
import { DEFAULTS } from "./url-state.js";

export const MAX_TOKENS = 4096;

/** Slot texts every widget starts from (switching class keeps every value with the same name). */
const SLOT_START = { d_in: "3", d_out: "2", context_length: "6", dropout: "0.0", num_heads: "2", qkv_bias: "False" };

/** The fields a URL, the attributes or back/forward may set (everything else is the session's). */
const SETUP_KEYS = ["className", "seed", "source", "tokens", "count", "custom", "batch", "training"];

/**
 * The state a widget starts from. `call` is the call box's text and `parsed` the library's reading
 * of it (null when the slots changed in a way the call cannot carry; the slots are read directly then).
 */
export function initialState() {
  return {
    className: DEFAULTS.className,
    slotTexts: { ...SLOT_START },
    seed: DEFAULTS.seed,
    source: DEFAULTS.source,
    tokens: DEFAULTS.tokens,
    count: DEFAULTS.count,
    custom: null,
    batch: DEFAULTS.batch,
    training: DEFAULTS.training,
    call: "",
    parsed: null,
    preset: null,
    held: [], // what the last change asked of locked values and did not get: [{name, kept, asked, by}] (the lock notice)
    prediction: "",
    quiz: false,
    quizFrom: -1,
    runError: null,
    lastRun: null,
    running: false,
  };
}

/** A partial state (from the URL or attributes) as a patch over `s`. */
export function partialPatch(s, p) {
  const patch = {};
  for (const key of SETUP_KEYS) if (p[key] !== undefined) patch[key] = p[key];
  if (p.slotTexts) patch.slotTexts = { ...s.slotTexts, ...p.slotTexts };
  const custom = patch.custom ?? s.custom;
  if (custom && !custom.words) {
    const w = (patch.tokens ?? s.tokens).trim().split(/\s+/).filter(Boolean);
    patch.custom = { ...custom, words: w.length === custom.rows ? w : null };
  }
  return patch;
}

/** The patch that resets the setup to the start (back/forward to an entry without state). */
export function resetPatch() {
  const { className, slotTexts, seed, source, tokens, count, custom, batch, training } = initialState();
  return { className, slotTexts, seed, source, tokens, count, custom, batch, training, runError: null };
}

/**
 * New slot texts (and class): the call box is rewritten from the slots and parsed, so slots and call
 * box share one reading of the values (an int slot written 3.0 is a float to Python, as in the call
 * box). Slot text that would change the call's structure (commas, parentheses, "=") is read directly.
 */
export function slotsPatch(lab, className, slotTexts) {
  const specs = lab.slots(className);
  const call = callText(className, specs, slotTexts);
  const safe = specs.every((spec) => !/[,()=#'"\\\n]/.test(String(slotTexts[spec.name] ?? "")));
  return { className, slotTexts, call, parsed: safe ? lab.parseCall(call) : null };
}

/** Required slots with no text yet start from the class's first preset (the core's); a locked slot stays as it is. */
export function withEmptySlotsFilled(lab, className, slotTexts, locked = new Set()) {
  const texts = { ...slotTexts };
  const preset = lab.classFacts(className)?.presets[0];
  for (const spec of lab.slots(className)) {
    const empty = String(texts[spec.name] ?? "").trim() === "";
    if (empty && spec.default === undefined && !locked.has(spec.name) && preset?.slots[spec.name] !== undefined) texts[spec.name] = preset.slots[spec.name];
  }
  return texts;
}

/**
 * A call from the call box, the call attribute or a fix button (`by` says which, for the lock notice).
 * Only a complete call is read: while it does not parse (a syntax error: mid-word, before its ")"), the
 * class and the slots stay as they were and only the call's syntax errors show. A complete call sets the
 * class and every slot, except what `locked` holds: a locked slot keeps its value (the module runs with
 * it), a locked class keeps everything, and `held` ({name, kept, asked, by}) says what the call asked
 * of them. The box keeps the reader's text either way.
 */
export function callPatch(lab, s, text, locked, by = "call") {
  const parsed = lab.parseCall(text);
  if (!parsed.className || !lab.classes.includes(parsed.className)) return { call: text, parsed, held: [] };
  if (parsed.diagnostics.some((d) => d.code === "syntax")) return { call: text, parsed: unread(parsed.diagnostics.filter((d) => !d.slots?.length)), held: [] };
  if (parsed.className !== s.className && locked.has("class")) {
    return { call: text, parsed: unread([]), held: [{ name: "class", kept: s.className, asked: parsed.className, by }] };
  }
  const className = parsed.className;
  const slotTexts = { ...s.slotTexts };
  const held = [];
  for (const spec of lab.slots(className)) {
    const slot = parsed.slots.find((x) => x.name === spec.name);
    let slotText = "";
    if (slot && slot.source !== "default" && slot.text !== "") slotText = slot.text.trim();
    else if (slot && slot.value !== null && slot.value !== undefined) slotText = pyValue(slot.value, spec.type);
    const kept = String(s.slotTexts[spec.name] ?? "").trim();
    if (!locked.has(spec.name)) slotTexts[spec.name] = slotText;
    else if (slotText !== kept && slotValueFromText(slotText, spec.type) !== slotValueFromText(kept, spec.type)) held.push({ name: spec.name, kept, asked: slotText, by });
  }
  if (!held.length) return { call: text, parsed, className, slotTexts, held };
  // The module runs with the slots (the locked values among them), read through the call they make; the
  // call's own diagnostics that name no slot of the class (an unknown keyword) still show.
  const names = new Set(lab.slots(className).map((x) => x.name));
  const own = parsed.diagnostics.filter((d) => !(d.slots ?? []).some((x) => names.has(x)));
  const effective = slotsPatch(lab, className, slotTexts).parsed;
  return { call: text, className, slotTexts, held, parsed: effective ? { ...effective, diagnostics: [...own, ...effective.diagnostics] } : unread(own) };
}

/** A reading of the call box that sets nothing: its diagnostics show, the slots are read as they are (no class matches ""). */
function unread(diagnostics) {
  return { className: "", config: {}, slots: [], diagnostics };
}

/** The module's config as the library reads it: from the parsed call, else slot by slot. */
export function currentConfig(lab, s) {
  if (s.parsed && s.parsed.className === s.className) return { ...s.parsed.config };
  const config = {};
  for (const spec of lab.slots(s.className)) {
    const value = slotValueFromText(s.slotTexts[spec.name], spec.type);
    if (value !== undefined) config[spec.name] = value;
  }
  return config;
}

/** The call with keywords for every slot the reader set away from its default. */
export function keywordCall(lab, s) {
  const args = [];
  for (const spec of lab.slots(s.className)) {
    const raw = String(s.slotTexts[spec.name] ?? "").trim();
    if (raw === "") continue;
    const value = slotValueFromText(raw, spec.type);
    if (spec.default !== undefined && value === spec.default) continue;
    // As typed, as the call box has it (dropout=1024 is an int to Python, not 1024.0); True/False spelled out.
    args.push(`${spec.name}=${typeof value === "boolean" ? pyValue(value, spec.type) : raw}`);
  }
  return `${s.className}(${args.join(", ")})`;
}

/** The seed as a number, or null when it is not a whole number in the core's range (lab.seedRange). */
export function seedValue(lab, s) {
  const t = String(s.seed).trim();
  if (!/^-?\d+$/.test(t)) return null;
  const n = Number(t);
  return n >= lab.seedRange.lowest && n <= lab.seedRange.highest ? n : null;
}

export function countValue(s) {
  const t = String(s.count).trim();
  if (!/^\d+$/.test(t)) return null;
  const n = Number(t);
  return n >= 1 && n <= MAX_TOKENS ? n : null;
}

/** The token labels (words) in order; null when they cannot be known yet. */
export function words(s) {
  if (s.source === "book") return S.bookSentence.split(" ");
  if (s.source === "sentence") return s.tokens.trim().split(/\s+/).filter(Boolean);
  if (s.source === "random") {
    const n = countValue(s);
    return n === null ? null : Array.from({ length: n }, (_, i) => String(i));
  }
  const c = s.custom;
  if (!c) return null;
  return c.words && c.words.length === c.rows ? c.words : Array.from({ length: c.rows }, (_, i) => String(i));
}

/** True for classes that take one sequence (num_tokens, d_in) with no batch axis (the library says which). */
export function singleSequence(lab, className) {
  return lab.inputShape(className, 1, 1, 1).length === 2;
}

/** The input's shape for this setup, or null when the tokens do not fit d_in (yet). */
export function inputShape(lab, s, config) {
  const w = words(s);
  if (!w || !w.length || !positiveInt(config.d_in)) return null;
  if (s.source === "book" && config.d_in !== 3) return null;
  if (s.source === "custom" && s.custom && s.custom.cols !== config.d_in) return null;
  return lab.inputShape(s.className, w.length, config.d_in, s.batch);
}

/** The (num_tokens, d_in) embeddings before batching; throws on bad custom numbers. */
export function baseTokens(lab, s, dIn) {
  const w = words(s);
  if (s.source === "book") return lab.bookTokens();
  if (s.source === "sentence") {
    if (typeof lab.sentenceTokens === "function") return lab.sentenceTokens(w, dIn, seedValue(lab, s));
    return lab.seededTokens(w.length, dIn, seedValue(lab, s));
  }
  if (s.source === "random") return lab.seededTokens(w.length, dIn, seedValue(lab, s));
  const c = s.custom;
  const data = new Float32Array(c.rows * c.cols);
  c.texts.forEach((row, r) => row.forEach((t, j) => { data[r * c.cols + j] = Number(t); }));
  return { shape: [c.rows, c.cols], data };
}

/** The input tensor: the tokens (`base`, else made now), stacked `batch` times for the batched classes (torch.stack). */
export function buildInput(lab, s, config, base = baseTokens(lab, s, config.d_in)) {
  const shape = inputShape(lab, s, config);
  if (shape.length === 2 || shape[0] === 1) return { shape, data: base.data };  // one batch item: the tokens themselves, not a copy
  const b = shape[0];
  const data = new Float32Array(b * base.data.length);
  for (let i = 0; i < b; i++) data.set(base.data, i * base.data.length);
  return { shape, data };
}

/** What a run is made from: two runs with the same key give the same numbers. */
export function runKey(lab, s, config) {
  const tokens = s.source === "sentence" ? s.tokens : s.source === "random" ? s.count : s.source === "custom" ? JSON.stringify(s.custom?.texts) : "";
  return JSON.stringify([s.className, config, s.seed, s.source, tokens, singleSequence(lab, s.className) ? 1 : s.batch, s.training]);
}

/** A tensor (num_tokens, d_in) as rows of printed float32 texts. */
export function gridTexts(t) {
  return Array.from({ length: t.shape[0] }, (_, r) => Array.from({ length: t.shape[1] }, (_, j) => f32Text(t.data[r * t.shape[1] + j])));
}

/** Cells of the reader's own grid that do not hold a number. */
export function badCells(s) {
  if (s.source !== "custom" || !s.custom) return 0;
  return s.custom.texts.flat().filter((t) => !isNumberText(t)).length;
}

export function positiveInt(v) {
  return typeof v === "number" && Number.isInteger(v) && v > 0;
}

export function isNumberText(t) {
  return /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(String(t)) && Number.isFinite(Number(t));
}

// Widget state <-> key/value text (the page URL's query, or the <attention-lab> element's attributes).
// Keys are the book's slot names, e.g.
//   ?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12&seed=123
// Every value read here is only ever used as input text (validated like typing), never as HTML.

import { S } from "./strings.js";

export const DEFAULTS = Object.freeze({
  className: S.defaultClass,
  seed: "123",
  source: "book", // "book" | "sentence" | "random" | "custom"
  tokens: "Your journey starts with one step",
  count: "6",
  batch: 2,
  training: true,
});

/** Every slot name of every class, in the core's order (the page keeps no list of its own). */
export function slotNames(lab) {
  return [...new Set(lab.classes.flatMap((name) => lab.slots(name).map((spec) => spec.name)))];
}

/** Element attributes that are not slot names (slot names come from the core, once it has loaded). */
export const STATE_ATTRS = ["class-name", "call", "seed", "tokens", "num_tokens", "source", "batch", "mode"];
export const SOURCES = ["book", "sentence", "random", "custom"];
export const MAX_BATCH = 8;
/** The editable grid's limits (also the most numbers a URL carries for it). */
export const GRID_MAX = 16;
const MAX_TEXT = 2000; // a pasted URL never makes an input absurdly long
/** The longest slot value or seed a link carries (longer ones are ignored, and the notice says why). */
export const MAX_VALUE = 40;

/** The first `most` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair (an emoji). */
export function cutText(text, most) {
  if (text.length <= most) return text;
  const code = text.charCodeAt(most - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? most - 1 : most);
}

// One widget per URL prefix keeps its state in the page URL: the first <attention-lab url-state> connected
// with that url-prefix ("" by default). Any other with the same prefix behaves as if it had no url-state
// (and says so) until it is connected again with the prefix free. Widgets with distinct prefixes (and the
// host page's own keys) share the URL: each reads and writes only its own keys.
const urlOwners = new Map();

/** The longest url-prefix read (a longer one is cut). */
export const MAX_PREFIX = 40;

/** The element's url-prefix attribute as used: "" when absent, at most MAX_PREFIX characters. */
export function urlPrefix(widget) {
  return String(widget.getAttribute("url-prefix") ?? "").trim().slice(0, MAX_PREFIX);
}

/** The keys a widget has whatever its class (besides the slot names, which come from the core). */
const STATE_KEYS = ["class", "seed", "tokens", "num_tokens", "source", "x", "batch", "mode"];

/**
 * Why `prefix` cannot be a url-prefix ("" when it can). Keys are read exactly (prefix + key), so a
 * prefix must end with a character that no key holds (not a letter, digit or _): then no prefixed key is
 * another widget's (url-prefix="num_" would read num_ + tokens = num_tokens, the unprefixed widget's).
 */
export function urlPrefixProblem(prefix) {
  if (prefix === "" || !/[A-Za-z0-9_]$/.test(prefix)) return "";
  const clash = STATE_KEYS.find((k) => STATE_KEYS.some((other) => other !== k && other === prefix + k));
  return S.urlPrefixBad(prefix, `${prefix.replace(/_+$/, "")}-`, clash ? `${prefix} + ${clash} = ${prefix}${clash}` : "");
}

/** True when `widget` now keeps its state under `prefix` in the page URL: it did already, or no connected widget does. */
export function claimUrl(widget, prefix = "") {
  if (!urlOwners.get(prefix)?.isConnected) urlOwners.set(prefix, widget);
  return urlOwners.get(prefix) === widget;
}

/** `widget` left the page: the next widget that asks for its prefix may keep the URL. */
export function releaseUrl(widget) {
  for (const [prefix, owner] of urlOwners) if (owner === widget) urlOwners.delete(prefix);
}

/** Every key a widget reads from and writes to the URL (before its prefix): the state's keys, the core's slot names. */
export function urlKeys(lab) {
  return [...STATE_KEYS, ...slotNames(lab)];
}

/** True when the query string `search` holds any of the widget's keys under `prefix`. */
export function hasUrlState(search, lab, prefix = "") {
  const q = new URLSearchParams(search);
  return urlKeys(lab).some((k) => q.has(prefix + k));
}

/**
 * Reads key/value pairs (`get(key)` returns a string or null). Returns {state, problems}: state has
 * only the keys that were given and usable; problems lists keys whose values were unusable.
 * `lab` is the library facade: its classes and their slot names are the keys read.
 */
export function readState(get, lab) {
  const classes = lab.classes;
  const state = {};
  const problems = [];
  const name = get("class");
  if (name !== null) {
    if (classes.includes(name)) state.className = name;
    else problems.push({ key: "class", value: name.slice(0, 80) });
  }
  const slotTexts = {};
  // A value cut short would be another value (and another error): a too long one is ignored, and said so.
  for (const slot of slotNames(lab)) {
    const v = get(slot);
    if (v !== null && v.length > MAX_VALUE) problems.push({ key: slot, tooLong: v.length });
    else if (v !== null) slotTexts[slot] = v;
  }
  if (Object.keys(slotTexts).length) state.slotTexts = slotTexts;
  const seed = get("seed");
  if (seed !== null && seed.length > MAX_VALUE) problems.push({ key: "seed", tooLong: seed.length });
  else if (seed !== null) state.seed = seed;
  const tokens = get("tokens");
  if (tokens !== null) {
    state.source = "sentence";
    state.tokens = cutText(tokens, MAX_TEXT);
    if (state.tokens.length < tokens.length) problems.push({ key: "tokens", cut: tokens.length, kept: state.tokens.length });
  }
  const count = get("num_tokens");
  if (count !== null) {
    state.count = count.slice(0, 10);
    if (tokens === null) state.source = "random";
  }
  const source = get("source");
  if (source !== null) {
    if (SOURCES.includes(source) && source !== "custom") state.source = source;
    else if (source !== "custom") problems.push({ key: "source", value: source.slice(0, 40) });
  }
  // The book's tokens are 3 numbers wide: a link with another d_in and no tokens of its own runs on
  // the book's sentence with seeded embeddings of width d_in, instead of landing on an error.
  if (state.source === undefined && slotTexts.d_in !== undefined && slotTexts.d_in.trim() !== "3") state.source = "sentence";
  const x = get("x");
  if (x !== null) {
    const grid = parseGrid(x);
    if (grid) {
      state.source = "custom";
      state.custom = grid;
    } else problems.push({ key: "x", value: x.slice(0, 40) });
  }
  const batch = get("batch");
  if (batch !== null) {
    const b = /^\d+$/.test(batch) ? Number(batch) : NaN;
    if (b >= 1 && b <= MAX_BATCH) state.batch = b;
    else problems.push({ key: "batch", value: batch.slice(0, 40) });
  }
  const mode = get("mode");
  if (mode !== null) {
    if (mode === "train" || mode === "eval") state.training = mode === "train";
    else problems.push({ key: "mode", value: mode.slice(0, 40) });
  }
  return { state, problems };
}

/**
 * A partial state without what `locked` holds: a locked exercise keeps its class, slots, seed, tokens,
 * batch and mode whatever a URL, back/forward or a changed attribute says (locks win over the URL).
 */
export function withoutLocked(state, locked) {
  const out = { ...state };
  if (locked.has("class")) delete out.className;
  if (out.slotTexts) {
    out.slotTexts = { ...out.slotTexts };
    for (const slot of locked) delete out.slotTexts[slot];
  }
  if (locked.has("seed")) delete out.seed;
  if (locked.has("tokens")) for (const key of ["source", "tokens", "count", "custom"]) delete out[key];
  if (locked.has("batch")) delete out.batch;
  if (locked.has("mode")) delete out.training;
  return out;
}

/**
 * What a partial state read from a URL or an attribute (`read`, before withoutLocked) asks of the values
 * `locked` holds in state `s` and does not get: [{name, kept, asked, by}] for the lock notice (`by`:
 * "url", or "attr:<attribute>").
 */
export function lockConflicts(read, s, locked, by) {
  const held = [];
  const differ = (a, b) => String(a ?? "").trim() !== String(b ?? "").trim();
  const add = (name, kept, asked) => held.push({ name, kept: String(kept ?? "").trim(), asked: String(asked ?? "").trim(), by });
  if (locked.has("class") && read.className !== undefined && read.className !== s.className) add("class", s.className, read.className);
  for (const [slot, text] of Object.entries(read.slotTexts ?? {})) if (locked.has(slot) && differ(text, s.slotTexts[slot])) add(slot, s.slotTexts[slot], text);
  if (locked.has("seed") && read.seed !== undefined && differ(read.seed, s.seed)) add("seed", s.seed, read.seed);
  if (locked.has("batch") && read.batch !== undefined && read.batch !== s.batch) add("batch", s.batch, read.batch);
  if (locked.has("mode") && read.training !== undefined && read.training !== s.training) add("mode", s.training ? "train" : "eval", read.training ? "train" : "eval");
  const tokenKeys = ["source", "tokens", "count", "custom"];
  if (locked.has("tokens") && tokenKeys.some((k) => read[k] !== undefined && JSON.stringify(read[k]) !== JSON.stringify(s[k]))) add("tokens", "", "");
  return held;
}

/** Reads the widget's keys (each under `prefix`) from the query string of a URL; other keys are not its own. */
export function readUrlState(search, lab, prefix = "") {
  const q = new URLSearchParams(search);
  return readState((k) => (q.has(prefix + k) ? q.get(prefix + k) : null), lab);
}

/**
 * "0.43,0.15,0.89;0.55,0.87,0.66" -> {rows, cols, texts: [["0.43", ...], ...]}: every value a finite
 * number, every row the same length, at most GRID_MAX x GRID_MAX; null otherwise.
 */
export function parseGrid(text) {
  if (text.length > GRID_MAX * GRID_MAX * 32) return null;
  const rows = text.split(";").map((r) => r.split(",").map((c) => c.trim()));
  const cols = rows[0].length;
  if (!rows.length || rows.length > GRID_MAX || cols < 1 || cols > GRID_MAX) return null;
  for (const r of rows) {
    if (r.length !== cols) return null;
    for (const c of r) if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(c)) return null;
  }
  return { rows: rows.length, cols, texts: rows };
}

export function gridText(custom) {
  return custom.texts.map((r) => r.map((c) => c.trim()).join(",")).join(";");
}

/**
 * The query string for a state: slots in signature order, the rest only when not default. With
 * `{keep, prefix, keys}` the keys of `keep` (the page's current query) that are not the widget's stay as they
 * are and in their place, and the widget's own keys (`keys`, see urlKeys) are written under `prefix` after them.
 */
export function writeUrlState(state, specs, { keep = "", prefix = "", keys = [] } = {}) {
  const q = new URLSearchParams();
  q.set("class", state.className);
  for (const spec of specs) {
    const text = String(state.slotTexts[spec.name] ?? "").trim();
    if (text === "") continue;
    if (spec.name === "qkv_bias" && (text === "False" || text === "false")) continue;
    q.set(spec.name, text);
  }
  q.set("seed", String(state.seed).trim());
  if (state.source === "sentence" || state.source === "custom") q.set("tokens", state.tokens);
  if (state.source === "random") q.set("num_tokens", String(state.count).trim());
  if (state.source === "custom" && state.custom) q.set("x", gridText(state.custom));
  if (state.batch !== DEFAULTS.batch) q.set("batch", String(state.batch));
  if (state.training !== DEFAULTS.training) q.set("mode", state.training ? "train" : "eval");
  const out = new URLSearchParams(keep);
  for (const k of keys) out.delete(prefix + k);
  for (const [k, v] of q) out.append(prefix + k, v);
  return `?${out.toString()}`;
}

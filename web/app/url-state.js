// Page state <-> URL query. Keys are the book's slot names, e.g.
// ?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12&seed=123
// Values read from the URL are only ever used as input text (validated like typing), never as HTML.

export const DEFAULTS = Object.freeze({
  className: "MultiHeadAttention",
  seed: "123",
  source: "book", // "book" | "seeded"
  tokens: "Your journey starts with one step",
  batch: 2,
  training: true,
});

const SLOT_NAMES = ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"];
const MAX_TEXT = 2000; // a pasted URL never makes an input absurdly long

/**
 * Reads the query string. Returns {state, problems}: state has only the keys present in the URL;
 * problems lists keys whose values were unusable (reported to the reader, then ignored).
 */
export function readUrlState(search, classes) {
  const q = new URLSearchParams(search);
  const state = {};
  const problems = [];
  if (q.has("class")) {
    const name = q.get("class");
    if (classes.includes(name)) state.className = name;
    else problems.push({ key: "class", value: name.slice(0, 80) });
  }
  const slotTexts = {};
  for (const name of SLOT_NAMES) {
    if (q.has(name)) slotTexts[name] = q.get(name).slice(0, 40);
  }
  if (Object.keys(slotTexts).length) state.slotTexts = slotTexts;
  if (q.has("seed")) state.seed = q.get("seed").slice(0, 40);
  if (q.has("tokens")) {
    state.source = "seeded";
    state.tokens = q.get("tokens").slice(0, MAX_TEXT);
  }
  if (q.has("batch")) {
    const b = q.get("batch");
    if (b === "1" || b === "2") state.batch = Number(b);
    else problems.push({ key: "batch", value: b.slice(0, 40) });
  }
  if (q.has("mode")) {
    const m = q.get("mode");
    if (m === "train" || m === "eval") state.training = m === "train";
    else problems.push({ key: "mode", value: m.slice(0, 40) });
  }
  return { state, problems };
}

/** The query string for a state: slots in signature order, the rest only when not default. */
export function writeUrlState(state, specs) {
  const q = new URLSearchParams();
  q.set("class", state.className);
  for (const spec of specs) {
    const text = String(state.slotTexts[spec.name] ?? "").trim();
    if (text === "") continue;
    if (spec.name === "qkv_bias" && (text === "False" || text === "false")) continue;
    q.set(spec.name, text);
  }
  q.set("seed", String(state.seed).trim());
  if (state.source === "seeded") q.set("tokens", state.tokens);
  if (state.batch !== DEFAULTS.batch) q.set("batch", String(state.batch));
  if (state.training !== DEFAULTS.training) q.set("mode", state.training ? "train" : "eval");
  return `?${q.toString()}`;
}

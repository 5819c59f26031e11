// Pure formatting helpers (no DOM): numbers, shapes and the Python call text.

const THOUSANDS = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** 2360064 -> "2,360,064" */
export function thousands(n) {
  return THOUSANDS.format(n);
}

/** 144 -> "144 bytes", 4194304 -> "4,194,304 bytes (4.0 MiB)" */
export function bytesText(n) {
  if (n < 1024) return `${thousands(n)} bytes`;
  const unit = n < 1048576 ? ["KiB", 1024] : ["MiB", 1048576];
  return `${thousands(n)} bytes (${(n / unit[1]).toFixed(1)} ${unit[0]})`;
}

/** A tensor value with 4 decimals; −inf/+inf/NaN spelled out; -0 shown as 0; 1e21 and more (float32's finfo.min) as −3.4028e+38. */
export function num(v, digits = 4) {
  if (v === -Infinity) return "−inf";
  if (v === Infinity) return "inf";
  if (Number.isNaN(v)) return "NaN";
  const s = Math.abs(v) >= 1e21 ? v.toExponential(digits) : v.toFixed(digits);  // (toFixed spells out every digit up there)
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s.replace("-", "−");
}

/** A small difference such as 5.96e-8, or 0. */
export function sci(v) {
  if (v === 0) return "0";
  if (!Number.isFinite(v)) return num(v);
  return Math.abs(v) >= 1e-3 ? num(v, 6) : v.toExponential(2).replace("-", "−");
}

/** The shapes the predict box's example is taken from: the first whose width is not the answer's (so neither is the answer). */
const EXAMPLES = [[4, 5, 8], [3, 7, 6]];

/**
 * The example the predict box shows, {shape: "(4, 5, 8)", width: "8"}: never the setup's own answer
 * (`answer`, the output shape, or null when it is not known), nor its width.
 */
export function predictExample(answer) {
  const width = answer?.[answer.length - 1];
  const shape = EXAMPLES.find((e) => e[e.length - 1] !== width);
  return { shape: shapeText(shape), width: String(shape[shape.length - 1]) };
}

/** [2, 6, 2] -> "(2, 6, 2)" */
export function shapeText(shape) {
  return `(${shape.join(", ")})`;
}

/** [2, 2, 6, 1] with axes -> "(b=2, num_heads=2, num_tokens=6, head_dim=1)" */
export function namedShape(shape, axes) {
  return `(${shape.map((n, i) => (axes?.[i] ? `${axes[i]}=${n}` : String(n))).join(", ")})`;
}

/** A value written the way Python prints it: True/False, 0.0 for floats, ints plain. */
export function pyValue(value, type) {
  if (value === null) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") {
    if (type === "float" && Number.isFinite(value) && Number.isInteger(value)) return `${value}.0`;
    return String(value);
  }
  return String(value);
}

const NUMBER_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Text typed in a slot -> the value handed to the library.
 * Returns undefined for an empty slot (so the Python default applies, or "missing" is reported).
 * Text that is not a number or True/False is passed through as a string: the library reports it.
 */
export function slotValueFromText(text, type) {
  const t = String(text ?? "").trim();
  if (t === "") return undefined;
  if (t === "True" || t === "true") return true;
  if (t === "False" || t === "false") return false;
  if (t === "None") return null;  // slots whose value may be None (a default of None)
  if (NUMBER_RE.test(t)) {
    // An int slot written like a float (3.0) stays text so the library can say PyTorch rejects it.
    if (type === "int" && /[.eE]/.test(t)) return t;
    return Number(t);
  }
  return t;
}

/** Slot text as it should appear inside the call (floats keep a decimal point). */
export function callArgText(text, type) {
  const t = String(text ?? "").trim();
  const v = slotValueFromText(t, type);
  if (typeof v === "number" || typeof v === "boolean") return pyValue(v, type);
  return t;
}

/**
 * The positional call text for a class and its slot texts, e.g. "MultiHeadAttention(3, 2, 6, 0.0, 2)".
 * A trailing slot equal to its default (qkv_bias=False) is left out; after an empty slot the rest
 * are written as keywords so nothing shifts position.
 */
export function callText(className, specs, slotTexts) {
  const args = [];
  let keywordMode = false;
  const last = lastWritten(specs, slotTexts);
  for (const spec of specs) {
    if (spec.position > last) break;
    const raw = String(slotTexts[spec.name] ?? "").trim();
    // An empty slot, or one at its default, is left out; what follows it is then written by keyword.
    if (raw === "" || (spec.default !== undefined && slotValueFromText(raw, spec.type) === spec.default)) {
      keywordMode = true;
      continue;
    }
    const text = callArgText(raw, spec.type);
    args.push(keywordMode ? `${spec.name}=${text}` : text);
  }
  return `${className}(${args.join(", ")})`;
}

function lastWritten(specs, slotTexts) {
  let last = 0;
  for (const spec of specs) {
    const raw = String(slotTexts[spec.name] ?? "").trim();
    if (raw === "") continue;
    const value = slotValueFromText(raw, spec.type);
    if (spec.default !== undefined && value === spec.default) continue;
    last = spec.position;
  }
  // Keep every required slot position so a missing one shows up in the call.
  for (const spec of specs) if (spec.default === undefined) last = Math.max(last, spec.position);
  return last;
}

/** Summary over the finite values of `data` (masked −inf counted apart, as `negInf` and `masked`: the core's StageSummary). */
export function summarize(data, start = 0, end = data.length) {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let finite = 0;
  let negInf = 0;
  for (let i = start; i < end; i++) {
    const v = data[i];
    if (v === -Infinity) {
      negInf++;
      continue;
    }
    if (!Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    finite++;
  }
  return { min: finite ? min : NaN, max: finite ? max : NaN, mean: finite ? sum / finite : NaN, negInf, masked: negInf, count: end - start };
}

/** The shortest decimal text that reads back as the same float32 (0.43 for the float32 nearest 0.43). */
export function f32Text(v) {
  if (!Number.isFinite(v)) return v > 0 ? "inf" : v < 0 ? "-inf" : "nan";
  const target = Math.fround(v);
  for (let p = 1; p <= 9; p++) {
    const s = target.toPrecision(p);
    if (Math.fround(Number(s)) === target) return String(Number(s));
  }
  return String(target);
}

/** Mebibytes, rounded for a sentence: 0.4, 12, 1,536. */
export function mib(bytes) {
  const m = bytes / 1048576;
  return m < 10 ? m.toFixed(1) : thousands(Math.round(m));
}

/**
 * Text a reader or a link supplied, isolated for the Unicode bidirectional algorithm (FSI ... PDI, what
 * <bdi> does): a U+202E inside it cannot reverse the sentence around it.
 */
export function isolate(text) {
  return `\u2068${text}\u2069`;
}

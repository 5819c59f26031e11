// The facade's input readers: every JS argument read into plain values (numbers, strings, plain arrays,
// Float32Arrays) before a call into WASM, so no user code (a getter, a toString) runs inside a call;
// and the core's {ok, error, value} answers read back out (unwrap, deepFreeze).
import { unknownOption } from "./options.js";
import { AttentionError, isTypedArray, reading, typedBuffer, typedLength, typedName, typedOffset, valueText } from "./values.js";

/** A core call's {ok, error, value} as its value; AttentionError when the core refused. */
export function unwrap(result) {
  if (!result.ok) throw new AttentionError(result.error);
  return result.value;
}

/**
 * An optional option as the core reads it (NumberOption): given or not (null and undefined are not), a
 * number (its value) or true/false (value 1 or 0); anything else reaches the core as text.
 */
export function numberOption(v) {
  const p = v === null || v === undefined ? undefined : plainValue(v);
  return { given: p !== undefined, number: typeof p === "number", boolean: typeof p === "boolean", value: typeof p === "number" ? p : p === true ? 1 : 0 };
}

/** The primitive inside a String, Number or Boolean object (read from its internal slot: no user code, no Proxy trap); undefined otherwise. */
function boxedValue(v) {
  for (const valueOf of [String.prototype.valueOf, Number.prototype.valueOf, Boolean.prototype.valueOf]) {
    try {
      return valueOf.call(v);
    } catch {
      // not that kind of box
    }
  }
  return undefined;
}

/** A string argument as a string: a string, a String object or a number/boolean; null when it is anything else. */
export function plainString(v) {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  const boxed = v !== null && typeof v === "object" ? boxedValue(v) : undefined;
  return typeof boxed === "string" ? boxed : null;
}

/**
 * An options argument of the call `where` (a key of options.js's OPTION_NAMES, e.g. "model.generate")
 * as a plain object of its own enumerable values (read once, here): undefined and null give {};
 * anything else that is not an object is AttentionError "bad_options"; a name the call has no option
 * of (a misspelt "tempreature") is "unknown_option" with the nearest valid name, never ignored.
 * `what`: how its messages name the object (default `where`).
 */
export function readOptions(options, where, what = where) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object") {
    throw new AttentionError({ code: "bad_options", slot: where.slice(where.lastIndexOf(".") + 1), message: `the options of ${where} must be an object, got ${valueText(options)}`, hint: "Pass an object such as {training: false}, or nothing." });
  }
  const plain = reading(`${where} options`, () => ({ ...options }));
  const unknown = unknownOption(where, Object.keys(plain), what);
  if (unknown !== null) throw new AttentionError(unknown);
  return plain;
}

/** model.run's `attention` option as a plain string for the core, which checks it ("full" when absent). */
export function attentionMode(v) {
  if (v === undefined || v === null) return "full";
  return typeof v === "string" ? v : `<${typeof v}>`;
}

/** A slot value as a plain value: numbers, strings, booleans, null stay; anything else becomes "<type>". */
export function plainValue(v) {
  if (v === null || v === undefined || typeof v === "number" || typeof v === "string" || typeof v === "boolean") return v;
  const boxed = typeof v === "object" ? boxedValue(v) : undefined;
  return boxed !== undefined ? boxed : `<${typeof v}>`;
}

/** A config as a plain object of plain values (own enumerable keys, read once, here). */
export function plainConfig(config) {
  if (config === null || typeof config !== "object") return {};
  return reading("config", () => {
    const out = {};
    // defineProperty: a key such as "__proto__" stays an own key that the core can name
    for (const key of Object.keys(config)) Object.defineProperty(out, key, { value: plainValue(config[key]), enumerable: true, writable: true, configurable: true });
    return out;
  });
}

/** A shape as a plain array: sizes that are not numbers become NaN, which the core refuses by name. */
export function plainShape(shape, what = "shape") {
  return reading(what, () => {
    const length = Array.isArray(shape) ? shape.length : 0;
    if (length > 64) return [NaN];
    return Array.from({ length }, (_, i) => (typeof shape[i] === "number" ? shape[i] : NaN));
  });
}

/**
 * A copy plan {W_query: {copy, transpose}, ...} as plain entries [{name, copy, transpose, object}]; an
 * entry that is not an object is marked so the core names it, and a name an entry has not
 * ({tranpose: true}) is unknown_option naming the entry.
 */
export function plainPlan(plan) {
  if (plan === null || typeof plan !== "object") return [];
  return reading("plan", () =>
    Object.keys(plan).map((name) => {
      const e = plan[name];
      const object = e !== null && typeof e === "object";
      const { copy, transpose } = object ? readOptions(e, "copy plan entry", `the copy plan entry ${name}`) : {};
      return { name, copy: copy === true, transpose: transpose === true, object };
    }));
}

/**
 * Reads a TensorLike into {shape: number[], data: Float32Array} (a fresh view or copy that nothing
 * outside can change); AttentionError on a bad tensor. Sizes are checked before anything is copied.
 */
export function toTensor(t, what = "x") {
  if (t === null || typeof t !== "object") throw notATensor(what);
  const { shape: rawShape, data: rawData } = reading(what, () => ({ shape: t.shape, data: t.data }));
  if (!Array.isArray(rawShape) || rawData === null || rawData === undefined) throw notATensor(what);
  const shape = plainShape(rawShape, `${what}.shape`);
  const numel = shape.reduce((n, d) => n * d, 1);
  const typed = isTypedArray(rawData);
  const length = typed ? typedLength.call(rawData) : Array.isArray(rawData) ? rawData.length : reading(`${what}.data`, () => (typeof rawData === "object" && typeof rawData.length === "number" ? rawData.length : NaN));
  if (!(length === numel)) {
    const valid = shape.every((d) => Number.isInteger(d) && d >= 0);
    throw new AttentionError({
      code: valid ? "tensor_size" : "tensor_shape",
      slot: what,
      message: valid ? `${what} has shape (${shape.join(", ")}) (${numel} values) but data holds ${Number.isFinite(length) ? length : "no readable length"}` : `${what}.shape is not a list of sizes`,
      hint: valid ? "Give exactly as many values as the product of the shape, row-major." : "Sizes are whole numbers, 0 or more.",
    });
  }
  let data;
  if (typed && typedName.call(rawData) === "Float32Array") {
    data = new Float32Array(typedBuffer.call(rawData), typedOffset.call(rawData), length);  // a view: no copy, no own properties
  } else if (typed) {
    data = reading(`${what}.data`, () => new Float32Array(rawData));  // BigInt64Array throws here
  } else {
    data = reading(`${what}.data`, () => Float32Array.from({ length }, (_, i) => rawData[i]));
  }
  return { shape, data };
}

function notATensor(what) {
  return new AttentionError({
    code: "tensor_shape",
    slot: what,
    message: `${what} must be a tensor {shape, data}`,
    hint: "For example {shape: [6, 3], data: new Float32Array(18)} (row-major).",
  });
}

export function deepFreeze(v) {
  if (v !== null && typeof v === "object") {
    for (const key of Object.keys(v)) deepFreeze(v[key]);
    Object.freeze(v);
  }
  return v;
}

/** A trace query's index or size as a number for the core, which checks it (NaN when it is none). */
export function plainNumber(v, fallback) {
  if (v === undefined || v === null) return fallback;
  const p = plainValue(v);
  return typeof p === "number" ? p : NaN;
}

/** A list of numbers for a trace query (offsets, sizes), read once here. */
export function plainNumbers(v, what) {
  if (!Array.isArray(v)) throw new AttentionError({ code: "trace_range", slot: what, message: `${what} must be an array with one whole number per axis, got ${valueText(v)}`, hint: "For example {offsets: [0, 0, 0, 0], sizes: [1, 1, 12, 12]}." });
  return reading(what, () => Array.from({ length: Math.min(v.length, 64) }, (_, i) => plainNumber(v[i], NaN)));
}

/**
 * Token ids as a plain array of numbers (read once, here). A value that is no number ("1", null) is
 * refused here, by position, since only JS knows its type; the core refuses the numbers that are no
 * ids (1.5, NaN, outside the vocabulary) and too many of them: it gets at most one id past its limit.
 */
export function readTokenIds(tokenIds) {
  return reading("tokenIds", () => {
    if (tokenIds == null) return [];
    const refuse = (message) => new AttentionError({ code: "checkpoint_token", slot: "tokens", message, hint: "Token ids are whole numbers, e.g. [15496, 11] for \"Hello,\"." });
    if (typeof tokenIds !== "object" || !Number.isSafeInteger(tokenIds.length)) throw refuse(`tokenIds must be an array of token ids, got ${valueText(tokenIds)}`);
    const ids = Array.from({ length: Math.min(tokenIds.length, 100001) }, (_, i) => tokenIds[i]);
    const at = ids.findIndex((id) => typeof id !== "number");
    if (at >= 0) throw refuse(`token ${at} is ${valueText(ids[at])}, not a number`);
    return ids;
  });
}

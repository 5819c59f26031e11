// The facade's one error type and how it reads a caller's values without running the caller's code
// (a getter, a Proxy trap, a toString): shared by attention-lab.js and the loader (load-core.js,
// wasm-source.js). A leaf module: it imports nothing.

/** The one error type of the library: `.code` is stable, `.slot` names the slot, `.hint` says how to fix it. */
export class AttentionError extends Error {
  constructor({ code, slot = "", message, hint = "", diagnostics = [] }) {
    super(message);
    this.name = "AttentionError";
    this.code = code;
    this.slot = slot;
    this.hint = hint;
    this.diagnostics = diagnostics;
  }
}

/** True when `err` is Trusted Types refusing a script URL (the browser's TypeError: "This document requires 'TrustedScriptURL' assignment"). */
export function isTrustedTypesRefusal(err) {
  return /TrustedScriptURL|Trusted ?Types?\b/i.test(String(err?.message ?? err));
}

/** Whether err is this library's error (a thrown Proxy runs no trap here). */
export function isAttentionError(err) {
  try {
    return err instanceof AttentionError;
  } catch {
    return false;
  }
}

/**
 * Runs `read`, which may run user code (a getter, a Proxy trap, an iterator, a toString), and turns
 * anything it throws into AttentionError "unreadable_argument" naming `what`. Used only by the facade,
 * before any call into WASM.
 */
export function reading(what, read) {
  try {
    return read();
  } catch (err) {
    if (isAttentionError(err)) throw err;
    let thrown = "a value was thrown";
    try {
      if (err instanceof Error && typeof err.name === "string") thrown = `${err.name.slice(0, 40)} thrown`;
    } catch {
      // a thrown Proxy: say nothing more of it
    }
    throw new AttentionError({
      code: "unreadable_argument",
      slot: what,
      message: `${what} could not be read (${thrown} while reading it)`,
      hint: "Pass plain values: numbers, strings, booleans, arrays, Float32Arrays and plain objects.",
    });
  }
}

/** A short text for a value, without running any user code (no toString). */
export function valueText(v) {
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return String(v);
  if (typeof v === "bigint") return `${v}n`;
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** AttentionError "seed" for a seed that is not a number (the core refuses numbers outside its range: lab.seedRange). */
export function notASeed(seed) {
  return new AttentionError({ code: "seed", slot: "seed", message: `the seed must be a whole number, got ${valueText(seed)}`, hint: "torch.manual_seed takes an int, e.g. 123." });
}

// The typed arrays' own getters: a typed array with an own `length` (or `buffer`) property cannot lie to them.
const TypedArray = Object.getPrototypeOf(Float32Array.prototype);
export const typedLength = Object.getOwnPropertyDescriptor(TypedArray, "length").get;
export const typedBuffer = Object.getOwnPropertyDescriptor(TypedArray, "buffer").get;
export const typedOffset = Object.getOwnPropertyDescriptor(TypedArray, "byteOffset").get;
export const typedName = Object.getOwnPropertyDescriptor(TypedArray, Symbol.toStringTag).get;
export const typedByteLength = Object.getOwnPropertyDescriptor(TypedArray, "byteLength").get;
const bufferLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength").get;

/** Whether v is an ArrayBuffer (its internal slot, not its prototype: a Proxy runs no trap here). */
export function isArrayBuffer(v) {
  try {
    bufferLength.call(v);
    return true;
  } catch {
    return false;
  }
}

/** Whether v is a typed array (its internal slot: a Proxy runs no trap here). */
export function isTypedArray(v) {
  try {
    typedLength.call(v);
    return true;
  } catch {
    return false;
  }
}

/** An error's name and message for a sentence (a thrown non-Error says only that). */
export function errorText(err) {
  try {
    return err instanceof Error ? `${err.name}: ${String(err.message).slice(0, 200)}` : "a value was thrown";
  } catch {
    return "a value was thrown";
  }
}

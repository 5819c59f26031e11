// What a checkpoint call is given, told apart synchronously: an opened file (CheckpointFile, a handle
// of its parsed header in WASM memory) or the bytes of one (byteReader: an ArrayBuffer, a typed array, a
// Blob or a File). Opening and reading files is file-reads.js's, loaded when a file is first read.
import { heldResults } from "./held-results.js";
import { AttentionError, isArrayBuffer, isTypedArray, typedBuffer, typedByteLength, typedOffset } from "./values.js";

/**
 * A .safetensors or torch.save file opened by lab.openCheckpoint: its header (or its zip records and
 * data.pkl) read once and parsed once and kept in WASM memory under a handle. loadCheckpoint, checkpointInput and
 * loadGPT2 given it reuse its reader and its parsed header (a GPT2Model made from it shares the header).
 */
export class CheckpointFile {
  #core;
  #handle;
  #reader;
  /** Whether v is a CheckpointFile of this library (a brand check: runs no user code). */
  static is(v) {
    return v !== null && typeof v === "object" && #handle in v;
  }
  constructor(core, reader, opened, format) {
    this.#core = core;
    this.#reader = reader;
    this.#handle = opened.handle;
    heldResults(core).hold(this, opened.handle);
    this.size = reader.size;
    this.format = format;
    this.keys = opened.keys;
    this.dataStart = opened.dataStart;
    Object.freeze(this);
  }

  /** @internal the handle of the parsed header in WASM memory */
  get _handle() {
    if (this.#handle === 0) throw new AttentionError({ code: "disposed", slot: "checkpoint", message: "this checkpoint file was disposed", hint: "Open the file again with lab.openCheckpoint." });
    return this.#handle;
  }

  /** @internal random access to the file's bytes */
  get _reader() {
    return this.#reader;
  }

  /** Frees the parsed header now (otherwise garbage collection does it); later uses throw `disposed`. A GPT2Model opened from it keeps working. */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}

/** A checkpoint source as a CheckpointFile (as it is) or a reader of its bytes; AttentionError "checkpoint_source" otherwise. */
export function sourceOf(source) {
  return CheckpointFile.is(source) ? source : byteReader(source);
}

function detachedError() {
  return new AttentionError({ code: "checkpoint_source", slot: "", message: "the checkpoint's buffer is detached (it was transferred or freed)", hint: "Read the file again, or pass a copy of its bytes." });
}

/** Random access to the bytes of an ArrayBuffer, a typed array, a Blob or a File (File.slice: never read whole). */
export function byteReader(source) {
  if (isArrayBuffer(source) || ArrayBuffer.isView(source)) {
    let bytes;
    try {
      bytes = isArrayBuffer(source) ? new Uint8Array(source) : isTypedArray(source) ? new Uint8Array(typedBuffer.call(source), typedOffset.call(source), typedByteLength.call(source)) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    } catch {
      bytes = null;  // a detached buffer (transferred to a worker, or a resized one)
    }
    if (bytes === null) throw detachedError();
    // a view, not a copy: every read goes straight into the core, which copies it once. A buffer
    // detached later (transferred to a worker) leaves the view empty: refused as at the start.
    const size = bytes.length;
    const read = async (begin, end) => {
      if (typedByteLength.call(bytes) !== size) throw detachedError();
      return bytes.subarray(begin, Math.min(end, size));
    };
    return { size, read };
  }
  if (isBlob(source)) {
    const read = async (begin, end) => {
      try {
        return new Uint8Array(await source.slice(begin, end).arrayBuffer());
      } catch (err) {
        throw new AttentionError({ code: "checkpoint_read", slot: "", message: `the file could not be read (${err?.name ?? "error"})`, hint: "The file may have been moved or changed since it was chosen; choose it again." });
      }
    };
    return { size: source.size, read };
  }
  throw new AttentionError({
    code: "checkpoint_source",
    slot: "",
    message: "a checkpoint must be an ArrayBuffer, a Blob or a File",
    hint: "Pass the File from a file picker or a drop event, or the ArrayBuffer of the file.",
  });
}

/** Whether v is a Blob or File (a throw from a Proxy trap or a getter means it is not). */
export function isBlob(v) {
  try {
    return typeof Blob !== "undefined" && v instanceof Blob && typeof v.size === "number";
  } catch {
    return false;
  }
}

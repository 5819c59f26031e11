// Reading a checkpoint's bytes, asynchronously: the byte ranges the core names (readRanges), an
// AbortSignal checked between reads and racing each read, and a file opened once (openFile, withFile).
// Loaded with checkpoint-calls.js, on the first call that reads a file.
import { CheckpointFile } from "./checkpoint-file.js";
import { unwrap } from "./inputs.js";
import { AttentionError } from "./values.js";

/** Throws AttentionError "cancelled" when `signal` (an AbortSignal, or anything else: ignored) has fired. */
export function checkSignal(signal) {
  let aborted = false;
  try {
    aborted = signal != null && typeof signal === "object" && signal.aborted === true;
  } catch {
    aborted = false;
  }
  if (aborted) throw cancelledError();
}

function cancelledError() {
  return new AttentionError({ code: "cancelled", slot: "", message: "the run was cancelled", hint: "" });
}

/**
 * `pending` (a read), or AttentionError "cancelled" as soon as `signal` fires: the signal races the
 * read, so a read that never settles cannot hold a run (and its model) for ever. Anything that is not
 * an AbortSignal-like object with addEventListener is only checked between reads (checkSignal).
 */
function raceSignal(pending, signal) {
  let listen = false;
  try {
    listen = signal != null && typeof signal === "object" && typeof signal.addEventListener === "function" && typeof signal.removeEventListener === "function";
  } catch {
    listen = false;
  }
  if (!listen) return pending;
  let onAbort = null;
  const aborted = new Promise((_, reject) => {
    onAbort = () => reject(cancelledError());
    try {
      signal.addEventListener("abort", onAbort, { once: true });
    } catch {
      onAbort = null;  // a signal that cannot be listened to: checked between reads only
    }
  });
  return Promise.race([pending, aborted]).finally(() => {
    try {
      if (onAbort) signal.removeEventListener("abort", onAbort);
    } catch {
      // nothing to undo
    }
  });
}

/** The bytes of `reads` ({name, begin, end}) from `reader`, by name: `signal` checked before and after each read, and racing it. */
export async function readRanges(reader, reads, signal) {
  const buffers = {};
  for (const { name, begin, end } of reads) {
    checkSignal(signal);
    buffers[name] = await raceSignal(reader.read(begin, end), signal);
  }
  checkSignal(signal);
  return buffers;
}

/**
 * Opens `reader`'s file, told apart by its first bytes (checkpointFormat): a safetensors file's header
 * is read and parsed once (checkpointOpen); a torch.save file is read step by step, the core naming the
 * ranges each step needs (a zip's end record, central directory, local headers, data.pkl; the legacy
 * format's pickles at its start: never a tensor's bytes), then parsed once (torchSaveOpen).
 */
export async function openFile(core, reader) {
  const first = await reader.read(0, Math.min(8, reader.size));
  if (unwrap(core.checkpointFormat(first, reader.size)) === "torch") {
    const read = { "file start": first }; // the first step's read, done: it tells a zip from the legacy format
    for (let reads = unwrap(core.torchSaveReads(read, reader.size)); reads.length > 0; reads = unwrap(core.torchSaveReads(read, reader.size))) {
      Object.assign(read, await readRanges(reader, reads));
    }
    return new CheckpointFile(core, reader, unwrap(core.torchSaveOpen(read, reader.size)), "torch");
  }
  const headerLength = unwrap(core.checkpointHeaderLength(first, reader.size));
  const header = await reader.read(8, 8 + headerLength);
  return new CheckpointFile(core, reader, unwrap(core.checkpointOpen(header, reader.size)), "safetensors");
}

/**
 * Runs `use(file)` on a CheckpointFile: `source` itself (kept open: `use` starts with file._handle,
 * which throws "disposed" for a disposed one), or one opened from `source`, a reader (sourceOf), for
 * this call alone and disposed after it.
 */
export async function withFile(core, source, use) {
  if (CheckpointFile.is(source)) return use(source);
  const file = await openFile(core, source);
  try {
    return await use(file);
  } finally {
    file.dispose();
  }
}

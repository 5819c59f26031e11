// Why a widget could not start, as a coded AttentionError the host page can act on (el.run() rejects with
// it, the load-error event carries it, the status line shows it): a Content-Security-Policy that does not
// let WebAssembly compile ("wasm_csp", a CompileError the library reports as a broken binary), Trusted
// Types refusing a script URL ("trusted_types"), else the library's own code (wasm_fetch, wasm_binary...).
import { AttentionError } from "../lib/attention-lab.js";
import { S } from "./strings.js";
import { isTrustedTypesRefusal, trustedTypesError } from "./worker-url.js";

/** The smallest WebAssembly module: the magic "\0asm" and version 1. */
const EMPTY_MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

/** False when this page may not compile WebAssembly at all: its CSP refuses even the empty module. */
export async function wasmCompiles() {
  if (typeof WebAssembly !== "object") return true; // no WebAssembly here: not the CSP's doing (the load's own error says so)
  try {
    await WebAssembly.compile(EMPTY_MODULE);
    return true;
  } catch {
    return false;
  }
}

/** The coded error of a failed core load `err` (what loadAttentionLab rejected with). */
export async function loadFailure(err) {
  if (isTrustedTypesRefusal(err)) return trustedTypesError();
  if (!(await wasmCompiles())) return new AttentionError({ code: "wasm_csp", slot: "", message: S.wasmCsp, hint: S.wasmCspHint });
  if (err instanceof AttentionError) return err;
  return new AttentionError({ code: "internal", slot: "", message: String(err?.message ?? err), hint: "Please report this with the browser's version." });
}

/** Tells the host page: load-error on the element (bubbles, composed), detail {code, message, hint}, and a console warning for its author. */
export function announceLoadError(host, error) {
  console.warn(`<attention-lab> ${error.code}: ${error.message}. ${error.hint}`);
  host.dispatchEvent(new CustomEvent("load-error", { bubbles: true, composed: true, detail: { code: error.code, message: error.message, hint: error.hint } }));
}

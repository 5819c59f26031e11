// Why a widget could not start, as a coded AttentionError the host page can act on (el.run() rejects with
// it, the load-error event carries it, the status line shows it): Trusted Types refusing a script URL
// ("trusted_types"), else the library's own code: "wasm_csp" (a Content-Security-Policy that does not let
// WebAssembly compile: the library tells it from a broken binary), wasm_fetch, wasm_binary...
import { AttentionError } from "../lib/attention-lab.js";
import { isTrustedTypesRefusal, trustedTypesError } from "./worker-url.js";

/** The coded error of a failed core load `err` (what loadAttentionLab rejected with). */
export function loadFailure(err) {
  if (isTrustedTypesRefusal(err)) return trustedTypesError();
  if (err instanceof AttentionError) return err;
  return new AttentionError({ code: "internal", slot: "", message: String(err?.message ?? err), hint: "Please report this with the browser's version." });
}

/** Tells the host page: load-error on the element (bubbles, composed), detail {code, message, hint}, and a console warning for its author. */
export function announceLoadError(host, error) {
  console.warn(`<attention-lab> ${error.code}: ${error.message}. ${error.hint}`);
  host.dispatchEvent(new CustomEvent("load-error", { bubbles: true, composed: true, detail: { code: error.code, message: error.message, hint: error.hint } }));
}

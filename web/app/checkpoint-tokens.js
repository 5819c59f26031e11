// The checkpoint panel's tokens: GPT-2 BPE text (the vendored gpt-tokenizer, loaded on first use) or
// token ids typed directly, with the pieces shown as chips. The panel asks for {ids, words} to run on.
import { h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { errorBox } from "./diagnostic-view.js";

/** Token chips shown at most (the run takes them all). */
const CHIPS_MAX = 64;

let tokenizerPromise = null;
/** GPT-2's BPE (r50k_base), copied from the pinned npm package by scripts/vendor.mjs; loaded on first use. */
function loadTokenizer() {
  tokenizerPromise ??= import("../vendor/gpt-tokenizer/encoding/r50k_base.js").catch((err) => {
    tokenizerPromise = null;
    throw err;
  });
  return tokenizerPromise;
}

/**
 * The tokens' fields. `runError` is the panel's error box (a text of no tokens says so there);
 * `onChange()` is called when the reader edits the tokens (text, ids or their kind).
 * Returns {nodes (the fields, then the chips), tokenIds(), setKind(kind, tokenize), currentKind(), decoder()}.
 */
export function setupCheckpointTokens(runError, onChange) {
  const state = { tokenSeq: 0 };
  const kindRadio = (value, text) => h("label", { for: `ckpt-kind-${value}` },
    h("input", { type: "radio", name: "ckpt-kind", value, id: `ckpt-kind-${value}`, dataset: { testid: `ckpt-kind-${value}` } }),
    " ", h("span", {}, text));
  const kind = h("fieldset", { class: "radio-group" }, h("legend", {}, S.ckptKindLegend), kindRadio("text", S.ckptKindText), kindRadio("ids", S.ckptKindIds));
  const textInput = h("input", { type: "text", id: "ckpt-text", autocomplete: "off", spellcheck: "false", value: S.defaultSentence, "aria-describedby": "ckpt-pieces", part: "input", dataset: { testid: "ckpt-text" } });
  const idsInput = h("input", { type: "text", id: "ckpt-ids", autocomplete: "off", spellcheck: "false", value: "0, 1, 2", "aria-describedby": "ckpt-ids-hint ckpt-ids-error", part: "input", dataset: { testid: "ckpt-ids" } });
  const idsError = h("p", { id: "ckpt-ids-error", class: "field-error", hidden: true }, S.ckptIdsBad);
  const textBox = h("div", { class: "field" }, h("label", { for: "ckpt-text" }, S.ckptTextLabel), textInput);
  const idsBox = h("div", { class: "field" }, h("label", { for: "ckpt-ids" }, S.ckptIdsLabel), idsInput,
    h("p", { id: "ckpt-ids-hint", class: "muted" }, S.ckptIdsHint), idsError);
  const pieces = h("div", { id: "ckpt-pieces", class: "ckpt-pieces", "aria-live": "polite", dataset: { testid: "ckpt-pieces" } });
  const nodes = [h("div", { class: "ckpt-tokens" }, kind, textBox, idsBox), pieces];
  for (const radio of kind.querySelectorAll("input[name=ckpt-kind]")) radio.addEventListener("change", () => {
    setKind(radio.value);
    onChange();
  });
  let tokenTimer = 0;
  textInput.addEventListener("input", () => {
    onChange();
    clearTimeout(tokenTimer);
    tokenTimer = setTimeout(() => showPieces(), 150);
  });
  idsInput.addEventListener("input", () => {
    idsError.hidden = true;
    idsInput.removeAttribute("aria-invalid");
    onChange();
  });

  /** Text or ids; the tokenizer (about 0.6 MB) loads only once text is to be tokenized. */
  function setKind(value, tokenize = true) {
    kind.querySelector(`#ckpt-kind-${value}`).checked = true;
    textBox.hidden = value !== "text";
    idsBox.hidden = value !== "ids";
    if (value === "text" && tokenize) showPieces();
    else replace(pieces);
  }
  const currentKind = () => (kind.querySelector("#ckpt-kind-ids").checked ? "ids" : "text");

  /** Token ids for the run (null after showing why there are none). */
  async function tokenIds() {
    if (currentKind() === "ids") {
      const parts = idsInput.value.split(/[\s,]+/).filter(Boolean);
      const ok = parts.length > 0 && parts.every((p) => /^\d{1,9}$/.test(p));
      idsError.hidden = ok;
      if (ok) idsInput.removeAttribute("aria-invalid");
      else idsInput.setAttribute("aria-invalid", "true");
      return ok ? { ids: parts.map(Number), words: parts.map((id) => `#${Number(id)}`) } : null;
    }
    const t = await showPieces();
    if (!t) return null;
    if (!t.ids.length) {
      replace(runError, errorBox(S.ckptRunError, { code: "no_tokens", message: S.ckptNoTokens }, { testid: "ckpt-run-diag", showCode: true }));
      return null;
    }
    return t;
  }

  /** Tokenizes the text with GPT-2's BPE and shows the pieces; resolves to {ids, words} or null. */
  async function showPieces() {
    const seq = ++state.tokenSeq;
    const text = textInput.value;
    let enc;
    try {
      if (!tokenizerPromise) replace(pieces, h("p", { class: "muted" }, S.ckptTokenizing));
      enc = await loadTokenizer();
    } catch (err) {
      if (seq === state.tokenSeq) replace(pieces, errorBox(S.ckptRunError, { code: "tokenizer", message: S.ckptTokenizerFailed(err?.message ?? String(err)) }, { testid: "ckpt-tokenizer-error", showCode: true }));
      return null;
    }
    const ids = enc.encode(text);
    const strs = ids.map((id) => enc.decode([id]));
    if (seq !== state.tokenSeq) return { ids, words: strs.map(label) };
    const shown = ids.slice(0, CHIPS_MAX);
    replace(pieces,
      h("p", { class: "muted" }, S.ckptTokensCaption(ids.length)),
      h("ol", { class: "token-chips", dataset: { testid: "ckpt-chips" } },
        shown.map((id, i) => h("li", { dataset: { id: String(id) } }, h("code", { class: "piece" }, strs[i].replace(/ /g, "␣")), h("span", { class: "token-id" }, String(id)))),
        ids.length > CHIPS_MAX ? h("li", { class: "more" }, S.ckptTokensMore(ids.length - CHIPS_MAX)) : null));
    return { ids, words: strs.map(label) };
  }
  /** ids -> text when the tokens are text and the tokenizer has loaded, else null. */
  async function decoder() {
    return currentKind() === "text" && tokenizerPromise ? (await loadTokenizer()).decode : null;
  }

  setKind("text", false);
  return { nodes, tokenIds, setKind, currentKind, decoder };
}

/** A token piece as a row/column label: trimmed, but a piece of spaces stays visible. */
function label(piece) {
  return piece.trim() || piece.replace(/ /g, "␣");
}


// One diagnostic as the page shows it: level, message, hint, PyTorch's own line (or that PyTorch says
// nothing), and buttons for the fixes the core offers. Shared by the setup, tokens and run panels.
import { h } from "./dom.js";
import { S } from "./strings.js";

/**
 * @param d    a Diagnostic from the library ({severity, code, message, hint, pytorch, fixes})
 * @param app  the widget's app: a fix button sets its slot (app.setSlot); locked slots get no button
 */
export function diagBox(d, app) {
  const level = d.severity in S.diagLevels ? d.severity : "error";
  const pytorch = String(d.pytorch ?? "").trim();
  let torchLine = null;
  if (pytorch) torchLine = h("p", { class: "diag-pytorch", dataset: { testid: "diag-pytorch" } }, S.pytorchPrefix, h("code", {}, pytorch));
  else if (level === "warning") torchLine = h("p", { class: "diag-pytorch", dataset: { testid: "diag-pytorch" } }, S.pytorchSilent);
  return h("div", { class: `diag diag-${level}`, part: `diagnostic ${level}`, dataset: { code: d.code, testid: "diagnostic" } },
    h("p", { class: "diag-msg" }, h("strong", {}, `${S.diagLevels[level]}: `), d.message),
    d.hint ? h("p", { class: "diag-hint" }, d.hint) : null,
    torchLine,
    suggestions(d, app));
}

/** Buttons that apply the values the core offers as fixes, leaving out slots the reader cannot change. */
function suggestions(d, app) {
  const fixes = (d.fixes ?? []).filter((f) => !app.locked.has(f.slot));
  if (!fixes.length) return null;
  return h("p", { class: "diag-fixes" }, h("span", {}, `${S.tryValues} `),
    fixes.map(({ slot, value }) => h("button", {
      type: "button", class: "small fix", part: "button", dataset: { testid: "fix", slot, value: String(value) },
      on: { click: () => app.setSlot(slot, String(value)) },
    }, S.fixTo(slot, value))));
}

/**
 * An error thrown by a call (an AttentionError, or anything else), as an error box with a title.
 * @param options  {testid, showCode: also print the error code, after: a node after the hint}
 */
export function errorBox(title, err, { testid = "diagnostic", showCode = false, after = null } = {}) {
  const code = err?.code ?? "error";
  return h("div", { class: "diag diag-error", part: "diagnostic error", dataset: { code, testid } },
    h("p", { class: "diag-msg" }, h("strong", {}, `${title}: `), String(err?.message ?? err ?? S.unknownError)),
    err?.hint ? h("p", { class: "diag-hint" }, err.hint) : null,
    after,
    showCode ? h("p", { class: "diag-pytorch" }, S.errorCode, h("code", {}, code)) : null);
}

/** Sets the aria-invalid state of a control. */
export function setInvalid(node, invalid) {
  if (invalid) node.setAttribute("aria-invalid", "true");
  else node.removeAttribute("aria-invalid");
}

/** Puts a value into a control unless it holds it already (so typing keeps its caret). */
export function setValue(node, value) {
  if (node.value !== value) node.value = value;
}

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

/**
 * Buttons that apply the fixes the core offers: one slot's value, or a whole corrected call when
 * several slots change together; fixes that would change a locked slot are left out. An exercise whose
 * class the reader switched, left with an error only locked slots could fix, offers its class back.
 */
function suggestions(d, app) {
  const buttons = [];
  for (const f of d.fixes ?? []) {
    if (f.call) {
      if (changesLocked(f.call, app)) continue;
      buttons.push(h("button", {
        type: "button", class: "small fix", part: "button", dataset: { testid: "fix", call: f.call },
        on: { click: () => app.applyCall(f.call) },
      }, h("code", {}, f.call)));
    } else if (!app.locked.has(f.slot)) {
      buttons.push(h("button", {
        type: "button", class: "small fix", part: "button", dataset: { testid: "fix", slot: f.slot, value: String(f.value) },
        on: { click: () => app.setSlot(f.slot, String(f.value)) },
      }, S.fixTo(f.slot, f.value)));
    }
  }
  const home = app.exerciseClass;
  if (!buttons.length && d.severity === "error" && (d.fixes ?? []).length && home && app.state.className !== home && !app.locked.has("class")) {
    buttons.push(h("button", {
      type: "button", class: "small fix", part: "button", dataset: { testid: "fix-class", className: home },
      on: { click: () => app.switchClass(home) },
    }, S.backToClass(home)));
  }
  if (!buttons.length) return null;
  return h("p", { class: "diag-fixes" }, h("span", {}, `${S.tryValues} `), buttons);
}

/** Whether the whole call `call` (a fix) would change a slot, or the class, the widget locks (the library reads it). */
function changesLocked(call, app) {
  if (!app.locked.size) return false;
  const parsed = app.lab.parseCall(call);
  if (app.locked.has("class") && parsed.className !== app.state.className) return true;
  return parsed.slots.some((x) => app.locked.has(x.name) && x.source !== "default" && x.text.trim() !== String(app.state.slotTexts[x.name] ?? "").trim());
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

/** The badge a locked control carries (a slot card, the class, the seed, the batch, the tokens, the mode). */
export function lockBadge(name) {
  return h("span", { class: "slot-lock", title: S.slotLockedNote, dataset: { testid: `lock-${name}` } }, S.slotLocked);
}

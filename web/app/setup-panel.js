// The presets and the setup panel: the class, the call box (paste a call), its keyword form, the values
// as the module receives them, and one card per slot with its diagnostics and what its value leads to.
import { h, replace, replaceIfChanged } from "./dom.js";
import { S } from "./strings.js";
import { callArgText, pyValue, slotValueFromText } from "./format.js";
import { DEFAULTS } from "./url-state.js";
import { consequence } from "./consequences.js";
import { callPatch, currentConfig, keywordCall, slotsPatch } from "./lab-model.js";
import { diagBox, lockBadge, setValue } from "./diagnostic-view.js";

/** Every class's presets, as the core gives them (the page keeps no copy), with the class they set, in the core's order. */
/**
 * A preset's title: a GPT-2 size's from its slots, else the call the preset makes as the core writes it
 * (describe's pythonCall of the preset's slots), on which tokens, and the strings table's words.
 */
export function presetTitle(lab, p) {
  const t = S.presetTitles[p.key];
  if (typeof t === "function") return t(p.slots);
  const call = lab.describe(p.className, currentConfig(lab, slotsPatch(lab, p.className, p.slots))).pythonCall;
  return S.presetTitle(call, p.tokens === "book", t ?? "");
}

export function presetsOf(lab) {
  const all = lab.classes.flatMap((className) => lab.classFacts(className).presets.map((p) => ({ ...p, className, source: p.tokens })));
  return all.sort((a, b) => a.order - b.order);
}

export function setupSetupPanel(app) {
  const { lab, $, root, locked } = app;
  const edit = { edit: true };
  const discrete = { edit: true, discrete: true };
  let builtFor = null;

  const select = $("class-select");
  // One group per folder of the book's repository, in the core's order (the chapter, its bonus
  // material, the chapter 4 bonus classes): the reader sees where each class comes from.
  const groups = [];
  for (const name of lab.classes) {
    const { book } = lab.classFacts(name);
    const group = groups.find((g) => g.book.folder === book.folder) ?? groups[groups.push({ book, names: [] }) - 1];
    group.names.push(name);
  }
  replace(select, groups.map((g) => h("optgroup", { label: S.classGroup(g.book) }, ...g.names.map((name) => h("option", { value: name }, name)))));
  select.disabled = locked.has("class");
  if (locked.has("class")) root.querySelector("label[for=class-select]").append(" ", lockBadge("class"));
  select.addEventListener("change", () => app.switchClass(select.value));
  $("call-box").addEventListener("input", (e) => app.setState(callPatch(lab, app.state, e.target.value, locked, "call"), edit));

  const anyLock = locked.size > 0;
  replace($("preset-buttons"), presetsOf(lab).map((p) =>
    h("button", {
      type: "button", class: "preset", title: `${presetTitle(lab, p)}: ${p.note}`, part: "button",
      disabled: anyLock, dataset: { preset: p.key, testid: `preset-${p.key}` },
      on: { click: () => applyPreset(p) },
    }, S.presets[p.key] ?? p.key)));
  if (anyLock) $("presets-hint").textContent = S.presetsLocked;

  function applyPreset(p) {
    if (anyLock) return; // a preset sets every slot: an exercise's buttons are off
    const s = app.state;
    app.setState({
      ...slotsPatch(lab, p.className, { ...s.slotTexts, ...p.slots }),
      source: p.source, batch: p.batch, seed: DEFAULTS.seed, training: true, preset: p,
      prediction: "", // a prediction was about the setup before: the preset is another question
    }, discrete);
    if (!app.derived.blocked) return app.run();
    return undefined;
  }

  function onSlotEdit(name, text) {
    if (locked.has(name)) return;
    const s = app.state;
    app.setState(slotsPatch(lab, s.className, { ...s.slotTexts, [name]: text }), edit);
  }

  /** The slot cards for the current class (rebuilt only when the class changes). */
  function buildSlots(specs) {
    replace($("slot-fields"), specs.map((spec) => {
      const id = `slot-${spec.name}`;
      const isLocked = locked.has(spec.name);
      const control = spec.type === "bool"
        ? h("select", { id, part: "input", dataset: { testid: id, slotInput: spec.name } },
          h("option", { value: "False" }, "False"), h("option", { value: "True" }, "True"))
        : h("input", {
          id, type: "text", inputmode: spec.type === "int" ? "numeric" : "decimal", part: "input",
          autocomplete: "off", spellcheck: "false", dataset: { testid: id, slotInput: spec.name },
        });
      control.setAttribute("aria-describedby", `${id}-doc ${id}-so ${id}-diag`);
      if (isLocked) {
        if (spec.type === "bool") control.disabled = true;
        else control.readOnly = true;
        control.dataset.locked = "true";
      }
      control.addEventListener(spec.type === "bool" ? "change" : "input", () => onSlotEdit(spec.name, control.value));
      const meta = [S.slotTypes[spec.type] ?? spec.type, spec.default === undefined ? S.slotRequired : S.slotDefault(pyValue(spec.default, spec.type))];
      return h("div", { class: `slot${isLocked ? " is-locked" : ""}`, dataset: { slot: spec.name, position: spec.position } },
        h("div", { class: "slot-head" },
          h("span", { class: "slot-pos", title: S.slotPosition(spec.position) },
            h("span", { class: "sr-only" }, S.slotWord), String(spec.position)),
          h("label", { for: id }, h("code", {}, spec.name)),
          h("span", { class: "slot-meta" }, meta.join(" · ")),
          isLocked ? lockBadge(spec.name) : null),
        control,
        h("p", { id: `${id}-doc`, class: "slot-doc" }, spec.doc),
        h("p", { id: `${id}-so`, class: "slot-so", dataset: { testid: `${id}-so` } }),
        h("div", { id: `${id}-diag`, class: "slot-diagnostics", dataset: { slotDiagnostics: spec.name }, "aria-live": "polite" }));
    }));
    // The call box stays open: a call that names other values for what the exercise locks keeps them (callPatch).
    const lockedNames = [...(locked.has("class") ? ["class"] : []), ...specs.filter((x) => locked.has(x.name)).map((x) => x.name)];
    $("call-hint").textContent = lockedNames.length ? S.callLocked(lockedNames.join(", ")) : S.callHint;
  }

  /** What the last change asked of locked values and did not get, and why (state.held). */
  function renderLockNotice(held) {
    const notice = $("lock-notice");
    notice.hidden = !held.length;
    notice.textContent = held.map((x) => S.lockHeld(x)).join(" ");
    notice.dataset.names = held.map((x) => x.name).join(" ");
  }

  function renderSlotDiagnostics(specs, diags) {
    const bySlot = new Map(specs.map((x) => [x.name, []]));
    const pointers = new Map(specs.map((x) => [x.name, []]));
    for (const d of diags) {
      const names = d.slots.filter((x) => bySlot.has(x));
      // An error about a locked slot and an open one belongs beside the slot the reader can change.
      const home = names.find((x) => !locked.has(x)) ?? names[0];
      bySlot.get(home).push(diagBox(d, app));
      for (const other of names.filter((x) => x !== home)) pointers.get(other).push({ to: home, severity: d.severity });
    }
    const err = app.state.runError;
    if (err && bySlot.has(err.slot)) bySlot.get(err.slot).push(diagBox({ severity: "error", code: err.code, slots: [], message: err.message, hint: err.hint, pytorch: "" }, app));
    for (const spec of specs) {
      const boxes = bySlot.get(spec.name);
      // A pointer to the slot that holds the diagnostic: a cross-reference, not a second error.
      const notes = pointers.get(spec.name).map((p) => h("p", { class: `diag-pointer pointer-${p.severity}`, dataset: { testid: "see-slot" } }, S.seeSlot(p.to)));
      replaceIfChanged($(`slot-${spec.name}-diag`), boxes, notes); // an unchanged fix button stays mid-click
      const invalid = boxes.some((b) => b.classList.contains("diag-error")) || pointers.get(spec.name).some((p) => p.severity === "error");
      const control = $(`slot-${spec.name}`);
      if (invalid) control.setAttribute("aria-invalid", "true");
      else control.removeAttribute("aria-invalid");
      control.closest(".slot").classList.toggle("has-error", invalid);
    }
  }

  function renderNamed(specs) {
    const s = app.state;
    const typeOf = new Map(specs.map((x) => [x.name, x.type]));
    let items;
    if (s.parsed && s.parsed.className === s.className) {
      items = specs.map((spec) => s.parsed.slots.find((x) => x.name === spec.name && x.position === spec.position)
        ?? { name: spec.name, position: spec.position, value: null, source: "missing", text: "" });
      for (const x of s.parsed.slots) if (x.position === 0) items.push(x); // a loop: a pasted call can hold any number
    } else {
      let gap = false;
      items = specs.map((spec) => {
        const text = String(s.slotTexts[spec.name] ?? "").trim();
        if (text === "") {
          gap = true;
          return { name: spec.name, position: spec.position, value: spec.default ?? null, source: spec.default === undefined ? "missing" : "default", text: "" };
        }
        return { name: spec.name, position: spec.position, value: slotValueFromText(text, spec.type), source: gap ? "keyword" : "positional", text: callArgText(text, spec.type) };
      });
    }
    replace($("named-values"), items.map((item) => {
      const type = typeOf.get(item.name);
      const shown = item.text && item.source !== "default"
        ? item.text
        : item.value === null || item.value === undefined ? "—" : pyValue(item.value, type);
      return h("li", { dataset: { name: item.name, position: item.position, source: item.source } },
        h("span", { class: "named-pos" }, item.position > 0 ? S.slotPosition(item.position) : "—"),
        h("code", { class: "named-name" }, item.name),
        h("span", { class: "named-eq" }, " = "),
        h("code", { class: "named-value" }, shown),
        h("span", { class: `named-source src-${item.source}` }, item.position > 0 ? (S.sourceNames[item.source] ?? item.source) : S.unknownSlot));
    }));
  }

  /** One line under each slot: what its current value leads to. */
  function renderConsequences(specs, d) {
    const s = app.state;
    const desc = d.description;
    for (const spec of specs) {
      const text = desc.ok ? consequence(spec.name, desc.config, desc, s.training, d.hide) : "";
      const node = $(`slot-${spec.name}-so`);
      node.textContent = text ? S.consequenceLabel + text : "";
      node.hidden = !text;
    }
  }

  /** The preset's note, in view while the slots are still the preset's (what it sets, and why). */
  function renderPresetNote(s) {
    const p = s.preset;
    const holds = p && p.className === s.className && Object.entries(p.slots).every(([name, text]) => String(s.slotTexts[name] ?? "").trim() === text);
    const note = $("preset-note");
    note.hidden = !holds;
    note.textContent = holds ? S.presetNote(S.presets[p.key] ?? p.key, p.note) : "";
  }

  return {
    render(d) {
      const s = app.state;
      const specs = d.specs;
      renderPresetNote(s);
      renderLockNotice(s.held);
      if (builtFor !== s.className) {
        builtFor = s.className;
        buildSlots(specs);
      }
      select.value = s.className;
      for (const spec of specs) {
        const text = s.slotTexts[spec.name] ?? "";
        setValue($(`slot-${spec.name}`), spec.type === "bool" ? (slotValueFromText(text, "bool") === true ? "True" : "False") : text);
      }
      setValue($("call-box"), s.call);
      renderSlotDiagnostics(specs, d.configDiags);
      replaceIfChanged($("call-diagnostics"), d.callDiags.map((x) => diagBox(x, app)));
      renderNamed(specs);
      $("keyword-call").textContent = keywordCall(lab, s);
      renderConsequences(specs, d);
    },
  };
}

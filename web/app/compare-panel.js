// Compare two modules side by side:
//  - MultiHeadAttentionWrapper <-> MultiHeadAttention: the equivalent configuration (wrapper d_out per
//    head <-> fused d_out total), the converted module with the same weights (stacked, or interleaved:
//    the head-merge mistake on purpose), and the largest difference at every stage;
//  - exercise 3.1: SelfAttention_v2 (seed 789) -> SelfAttention_v1 (seed 123), copying the matrices the
//    reader ticks, optionally transposed.
import { h, replace } from "./dom.js";
import { S } from "./strings.js";
import { num, sci, shapeText } from "./format.js";
import { estimateBytes } from "./runner.js";
import { tensorLiteral } from "./python-code.js";

const MATRICES = ["W_query", "W_key", "W_value"];
const FALLBACK = { d_in: 3, d_out: 2 };
/** The library's agreement tolerance (agree is maxAbsDiff <= 1e-6). */
const AGREE = 1e-6;
const MULTI = new Set(["MultiHeadAttentionWrapper", "MultiHeadAttention"]);
const VAR = { MultiHeadAttentionWrapper: "wrapper", MultiHeadAttention: "mha" };

export function setupComparePanel(view) {
  const { lab, root } = view;
  const $ = view.$;
  // Until the reader picks one, the mode follows the class: exercise 3.1 for the SelfAttention classes.
  const state = { mode: null, layout: "stacked", result: null, copyResult: null };
  const mode = () => state.mode ?? (view.state.className.startsWith("SelfAttention") ? "copy" : "convert");
  const body = $("compare-body");

  // ---- wrapper <-> fused ----
  const converter = h("div", { class: "converter", dataset: { testid: "converter" } });
  const layout = h("select", { id: "compare-layout", part: "input", dataset: { testid: "compare-layout" } },
    h("option", { value: "stacked" }, S.layoutStacked), h("option", { value: "interleaved" }, S.layoutInterleaved));
  layout.addEventListener("change", () => { state.layout = layout.value; });
  const compareButton = h("button", { type: "button", part: "button", dataset: { testid: "compare-button" } }, S.compareButton);
  const convertResult = h("div", { class: "compare-result", "aria-live": "polite", dataset: { testid: "compare-result" } });
  const convertBox = h("div", { class: "convert-box" },
    converter,
    h("div", { class: "field" }, h("label", { for: "compare-layout" }, S.layoutLabel), layout, h("p", { class: "muted" }, S.layoutHint)),
    compareButton, convertResult);
  const convertNote = h("p", { class: "muted" });

  // ---- exercise 3.1 ----
  const boxes = {};
  const planBody = h("tbody");
  for (const name of MATRICES) {
    const copy = h("input", { type: "checkbox", id: `copy-${name}`, checked: true, dataset: { testid: `copy-${name}` } });
    const transpose = h("input", { type: "checkbox", id: `transpose-${name}`, checked: true, dataset: { testid: `transpose-${name}` } });
    copy.addEventListener("change", () => { transpose.disabled = !copy.checked; });
    boxes[name] = { copy, transpose };
    planBody.append(h("tr", {},
      h("th", { scope: "row" }, h("code", {}, name)),
      h("td", {}, h("label", { class: "check" }, copy, h("span", { class: "sr-only" }, `${S.copyCopy} ${name}`))),
      h("td", {}, h("label", { class: "check" }, transpose, h("span", { class: "sr-only" }, `${S.copyTranspose} ${name}`)))));
  }
  const copyIntro = h("p");
  const copySizes = h("p", { class: "muted" });
  const copyButton = h("button", { type: "button", id: "copy-button", part: "button", dataset: { testid: "copy-button" } }, S.copyButton);
  const copyResult = h("div", { class: "copy-result", "aria-live": "polite", dataset: { testid: "copy-result" } });
  const copyBox = h("div", { class: "copy-box" }, copyIntro, copySizes,
    h("div", { class: "table-scroll" }, h("table", { class: "copy-plan" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.copyMatrix), h("th", { scope: "col" }, S.copyCopy), h("th", { scope: "col" }, S.copyTranspose))),
      planBody)),
    copyButton, copyResult);

  for (const radio of root.querySelectorAll("input[name=compare-mode]")) {
    radio.addEventListener("change", () => { state.mode = radio.value; refresh(); view.renderCode(); });
  }

  const copySizeValues = () => {
    const c = view.currentConfig();
    const ok = (v) => Number.isInteger(v) && v > 0 && v <= 4096;
    return ok(c.d_in) && ok(c.d_out) ? { d_in: c.d_in, d_out: c.d_out } : null;
  };

  function refresh() {
    $(`compare-mode-${mode()}`).checked = true;
    const s = view.state;
    const d = view.description;
    if (mode() === "copy") {
      const sizes = copySizeValues() ?? FALLBACK;
      copyIntro.textContent = S.copyIntro(sizes.d_in, sizes.d_out);
      copySizes.textContent = copySizeValues() ? S.copySizesFromSlots : S.copySizesFallback;
      if (body.firstChild !== copyBox) replace(body, copyBox);
      return;
    }
    if (body.firstChild !== convertBox && body.firstChild !== convertNote) replace(body, convertBox);
    let note = "";
    if (!MULTI.has(s.className)) note = S.compareNeedsMulti;
    else if (!d?.ok) note = S.compareNeedsValid;
    if (note) {
      convertNote.textContent = note;
      replace(body, convertNote);
      return;
    }
    if (body.firstChild !== convertBox) replace(body, convertBox);
    const eq = lab.equivalentConfig(s.className, d.config);
    const c = d.config;
    const rule = s.className === "MultiHeadAttentionWrapper"
      ? S.converterRule.toFused(c.num_heads, c.d_out, eq.config.d_out)
      : S.converterRule.toWrapper(c.d_out, c.num_heads, eq.config.d_out);
    const canSwitch = !view.locked.size;
    replace(converter,
      h("h3", {}, S.converterHeading),
      h("p", { class: "converter-calls" }, h("code", { dataset: { testid: "converter-a" } }, d.pythonCall), h("span", { class: "swap", "aria-hidden": "true" }, " ⇄ "),
        h("code", { dataset: { testid: "converter-b" } }, eq.pythonCall)),
      h("p", { dataset: { testid: "converter-rule" } }, rule),
      canSwitch ? h("button", {
        type: "button", class: "small", part: "button", dataset: { testid: "converter-use" },
        on: { click: () => switchTo(eq) },
      }, S.converterUse(eq.pythonCall)) : null);
    const fresh = state.result && state.result.key === view.runKey(view.currentConfig());
    convertResult.classList.toggle("stale", Boolean(state.result) && !fresh);
  }

  function switchTo(eq) {
    const s = view.state;
    s.className = eq.className;
    for (const spec of lab.slots(eq.className)) {
      const v = eq.config[spec.name];
      s.slotTexts[spec.name] = typeof v === "boolean" ? (v ? "True" : "False") : spec.type === "float" && Number.isInteger(v) ? `${v}.0` : String(v);
    }
    view.buildSlots();
    view.syncControls();
    view.writeGeneratedCall();
    view.edited(true);
  }

  compareButton.addEventListener("click", () => {
    const s = view.state;
    const d = view.description;
    if (!d?.ok || s.blocked) {
      replace(convertResult, h("p", { class: "muted" }, S.compareNeedsValid));
      return;
    }
    const config = view.currentConfig();
    const x = view.buildInput(config);
    if (estimateBytes(s.className, d.config, x.shape) > 64 * 1048576) {
      replace(convertResult, h("p", { class: "muted" }, S.compareTooLarge));
      return;
    }
    try {
      const a = lab.create(s.className, config, { generator: lab.manualSeed(view.seedValue()) });
      const converted = lab.convert(a, { layout: state.layout });
      const b = converted.module;
      const cmp = lab.compare(a, b, x);
      const outA = a.forward(x, { training: false }).output;
      const outB = b.forward(x, { training: false }).output;
      const eq = lab.equivalentConfig(s.className, d.config);
      state.result = { key: view.runKey(config), code: convertCode(s.className, converted.code, state.layout, eq.pythonCall) };
      replace(convertResult, renderComparison(a, b, d.pythonCall, eq.pythonCall, outA, outB, cmp, view.words(), converted.code));
    } catch (err) {
      state.result = null;
      replace(convertResult, errorBox(S.compareError, err));
    }
    convertResult.classList.remove("stale");
    view.renderCode();
  });

  copyButton.addEventListener("click", () => {
    const { d_in, d_out } = copySizeValues() ?? FALLBACK;
    const plan = {};
    for (const name of MATRICES) plan[name] = { copy: boxes[name].copy.checked, transpose: boxes[name].transpose.checked };
    try {
      const v2 = lab.create("SelfAttention_v2", { d_in, d_out }, { generator: lab.manualSeed(789) });
      const v1 = lab.create("SelfAttention_v1", { d_in, d_out }, { generator: lab.manualSeed(123) });
      const book = d_in === 3;
      const tokens = book ? lab.bookTokens() : lab.seededTokens(6, d_in, 123);
      const report = lab.copyWeights(v2, v1, plan, { tokens });
      const lines = copyLines(report, plan, d_in, d_out, book);
      state.copyResult = { code: lines.join("\n") };
      const word = book ? S.bookSentence.split(" ")[0] : "0";
      const side = h("div", { class: "compare-cols" },
        column(S.copyFrom, `SelfAttention_v2(${d_in}, ${d_out})`, v2, v2.forward(tokens, { training: false }).output, word),
        column(S.copyTo, `SelfAttention_v1(${d_in}, ${d_out})`, v1, v1.forward(tokens, { training: false }).output, word));
      replace(copyResult, renderReport(report, lines, { d_in, book }, side));
    } catch (err) {
      state.copyResult = null;
      replace(copyResult, errorBox(S.copyError, err));
    }
    view.renderCode();
  });

  refresh();
  return {
    refresh,
    /** The PyTorch lines of the comparison on screen ("" when none is, or it is stale). */
    code() {
      if (mode() === "copy") return state.copyResult?.code ?? "";
      if (!state.result || state.result.key !== view.runKey(view.currentConfig())) return "";
      return state.result.code;
    },
  };
}

function errorBox(title, err) {
  return h("div", { class: "diag diag-error", dataset: { code: err?.code ?? "error" } },
    h("p", { class: "diag-msg" }, h("strong", {}, `${title}: `), String(err?.message ?? err)),
    err?.hint ? h("p", { class: "diag-hint" }, err.hint) : null);
}

function convertCode(className, code, layout, otherCall) {
  const a = VAR[className];
  const b = VAR[className === "MultiHeadAttention" ? "MultiHeadAttentionWrapper" : "MultiHeadAttention"];
  const lines = [
    "",
    `# Compare: ${otherCall} with the same weights${layout === "interleaved" ? " (interleaved on purpose: the head-merge mistake)" : ""}`,
    code.trimEnd(),
    `${a}.eval(); ${b}.eval()`,
    `print((${a}(batch) - ${b}(batch)).abs().max())`,
  ];
  return lines.join("\n");
}

/** One module of a side-by-side pair: its call, its parameters (name, shape) and its first output row. */
function column(title, call, module, out, word) {
  return h("div", { class: "compare-col", dataset: { testid: "compare-col" } },
    h("h3", {}, title),
    h("p", {}, h("code", {}, call)),
    h("div", { class: "table-scroll" }, h("table", { class: "params small-table" },
      h("caption", { class: "sr-only" }, `${title}: ${S.paramsCaption}`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.paramName), h("th", { scope: "col" }, S.paramShape))),
      h("tbody", {}, module.parameters().map((p) => h("tr", {}, h("th", { scope: "row" }, h("code", {}, p.name)), h("td", {}, shapeText(p.shape))))))),
    h("p", { class: "muted" }, S.compareOutputRow(word)),
    h("p", { class: "first-row" }, h("code", {}, firstRow(out))));
}

function renderComparison(a, b, callA, callB, outA, outB, cmp, words, code) {
  const word = words?.[0] ?? "0";
  const first = cmp.stages.find((st) => st.maxAbsDiff > AGREE);
  return [
    h("p", { class: `verdict ${cmp.agree ? "agree" : "disagree"}`, dataset: { testid: "compare-verdict", agree: String(cmp.agree) } },
      cmp.agree ? S.compareAgree : S.compareDisagree(first?.id ?? "output")),
    h("div", { class: "compare-cols" },
      column(S.compareA, callA, a, outA, word),
      column(S.compareB, callB, b, outB, word)),
    h("div", { class: "table-scroll" }, h("table", { class: "copy-stages", dataset: { testid: "compare-stages" } },
      h("caption", {}, S.compareCaption),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.compareStage), h("th", { scope: "col" }, S.compareDiff))),
      h("tbody", {}, cmp.stages.map((st) => h("tr", { class: st.maxAbsDiff > AGREE ? "differs" : "same", dataset: { compareStage: st.id } },
        h("th", { scope: "row" }, h("code", {}, st.id)), h("td", {}, sci(st.maxAbsDiff))))))),
    h("h3", {}, S.compareCode),
    h("pre", { class: "code", tabindex: "0" }, h("code", {}, code.trimEnd())),
  ];
}

function firstRow(out) {
  const width = out.shape[out.shape.length - 1];
  const shown = Math.min(width, 8);
  const vals = Array.from(out.data.slice(0, shown), (v) => num(v));
  return `[${vals.join(", ")}${width > shown ? ", …" : ""}]`;
}

// ---- exercise 3.1 -----------------------------------------------------------------------------------

function renderReport(report, lines, { d_in, book }, side) {
  const bodies = report.matrices.map((m) =>
    h("tbody", { class: `report-${m.action}`, dataset: { matrix: m.name, action: m.action } },
      h("tr", {},
        h("th", { scope: "row", rowspan: m.hint ? "2" : "1" }, h("code", {}, m.name)),
        h("td", { class: "action" }, S.copyActions[m.action] ?? m.action),
        h("td", { class: "shapes" }, `${shapeText(m.fromShape)} → ${shapeText(m.toShape)}`)),
      m.hint ? h("tr", { class: "hint-row" }, h("td", { colspan: "2" }, m.hint)) : null));
  const table = h("div", { class: "table-scroll" },
    h("table", { class: "copy-report", dataset: { testid: "copy-report" } },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.copyMatrix), h("th", { scope: "col" }, S.copyAction), h("th", { scope: "col" }, S.copyShapes))),
      bodies));
  const suspects = report.matrices.filter((m) => m.action !== "transposed").map((m) => m.name);
  const verdict = report.agree
    ? S.copyAgree
    : report.maxAbsDiff === null ? `${S.copyDisagree(suspects)} ${S.copyShapesDiffer}` : S.copyDisagree(suspects);
  const out = [h("p", { class: `verdict ${report.agree ? "agree" : "disagree"}`, dataset: { testid: "copy-verdict", agree: String(report.agree) } }, verdict)];
  if (report.maxAbsDiff !== null) {
    out.push(h("p", { class: "maxdiff", dataset: { testid: "copy-maxdiff", value: String(report.maxAbsDiff) } }, S.copyMaxDiff(sci(report.maxAbsDiff))));
  }
  out.push(table, side);
  const n = report.tokens?.shape?.[0] ?? 6;
  out.push(h("p", { class: "muted" }, S.copyTokens(n, d_in, book)));
  if (report.notes?.length) out.push(h("ul", { class: "notes" }, report.notes.map((note) => h("li", {}, note))));
  if (report.stages?.length) out.push(stageTable(report.stages));
  out.push(h("h3", {}, S.copyPytorch), h("pre", { class: "code", tabindex: "0", dataset: { testid: "copy-pytorch" } }, h("code", {}, lines.join("\n"))));
  return out;
}

function stageTable(stages) {
  const first = stages.find((st) => st.maxAbsDiff > AGREE);
  return h("div", { class: "copy-stages-box", dataset: { testid: "copy-stages" } },
    h("p", { class: "copy-stages-title" }, first ? S.copyFirstDiff(first.id) : S.copyStagesCaption),
    h("table", { class: "copy-stages" },
      h("caption", { class: "sr-only" }, S.copyStagesShort),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.copyStage), h("th", { scope: "col" }, S.copyStageDiff))),
      h("tbody", {}, stages.map((st) =>
        h("tr", { class: st.maxAbsDiff > AGREE ? "differs" : "same", dataset: { copyStage: st.id } },
          h("th", { scope: "row" }, h("code", {}, st.id)),
          h("td", {}, sci(st.maxAbsDiff)))))));
}

function copyLines(report, plan, dIn, dOut, book) {
  const lines = [
    "",
    "# Exercise 3.1: SelfAttention_v2's weights into SelfAttention_v1",
    "torch.manual_seed(789)",
    `sa_v2 = SelfAttention_v2(${dIn}, ${dOut})`,
    "torch.manual_seed(123)",
    `sa_v1 = SelfAttention_v1(${dIn}, ${dOut})`,
  ];
  if (report.code) lines.push(...report.code.trimEnd().split("\n"));
  else {
    for (const name of MATRICES) {
      const p = plan[name];
      if (!p.copy) lines.push(`# sa_v1.${name} keeps its own initial values`);
      else lines.push(`sa_v1.${name} = torch.nn.Parameter(sa_v2.${name}.weight${p.transpose ? ".T" : ""})`);
    }
  }
  if (book) lines.push(...tensorLiteral("tokens", report.tokens, S.bookSentence.split(" ")));
  else lines.push(`tokens = torch.rand(6, ${dIn}, generator=torch.Generator().manual_seed(123))`);
  lines.push("print(sa_v1(tokens) - sa_v2(tokens))");
  return lines;
}

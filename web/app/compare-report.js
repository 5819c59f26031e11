// What the compare panel shows after a comparison or a copy: the two modules side by side, the report
// per matrix and per stage, and the PyTorch lines that reproduce it. Pure rendering from the library's
// results (compare-panel.js owns the controls and the state).
import { h } from "./dom.js";
import { S } from "./strings-panels.js";
import { num, sci, shapeText } from "./format.js";

/** The PyTorch lines of a conversion: `a` and `b` are the two modules' variable names (the core's pythonName). */
export function convertCode(a, b, code, layout, otherCall) {
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
export function column(title, call, module, out, word, role = "") {
  return h("div", { class: "compare-col", dataset: { testid: "compare-col" } },
    h("h3", {}, title),
    h("p", {}, h("code", {}, call)),
    role ? h("p", { class: "muted" }, role) : null,
    h("div", { class: "table-scroll" }, h("table", { class: "params small-table" },
      h("caption", { class: "sr-only" }, `${title}: ${S.paramsCaption}`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.paramName), h("th", { scope: "col" }, S.paramShape))),
      h("tbody", {}, module.parameters().map((p) => h("tr", {}, h("th", { scope: "row" }, h("code", {}, p.name)), h("td", {}, shapeText(p.shape))))))),
    h("p", { class: "muted" }, S.compareOutputRow(word)),
    h("p", { class: "first-row" }, h("code", {}, firstRow(out))));
}

export function renderComparison(a, b, callA, callB, outA, outB, cmp, words, code) {
  const word = words?.[0] ?? "0";
  const first = cmp.stages.find((st) => st.maxAbsDiff > cmp.tolerance);
  return [
    h("p", { class: `verdict ${cmp.agree ? "agree" : "disagree"}`, dataset: { testid: "compare-verdict", agree: String(cmp.agree) } },
      cmp.agree ? S.compareAgree : S.compareDisagree(first?.id ?? "output")),
    h("div", { class: "compare-cols" },
      column(S.compareA, callA, a, outA, word),
      column(S.compareB, callB, b, outB, word)),
    h("div", { class: "table-scroll" }, h("table", { class: "copy-stages", dataset: { testid: "compare-stages" } },
      h("caption", {}, S.compareCaption),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.compareStage), h("th", { scope: "col" }, S.compareDiff))),
      h("tbody", {}, cmp.stages.map((st) => h("tr", { class: st.maxAbsDiff > cmp.tolerance ? "differs" : "same", dataset: { compareStage: st.id, value: String(st.maxAbsDiff) } },
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

/** The slots of `setup` that the class has ({d_in, d_out} and qkv_bias where the class has the slot). */
export function slotsOf(lab, className, setup) {
  return Object.fromEntries(lab.slots(className).filter((s) => s.name in setup).map((s) => [s.name, setup[s.name]]));
}

/** `SelfAttention_v2(3, 2)`, with qkv_bias=True when the slots ask for it and the class has the slot. */
export function callOf(lab, className, setup) {
  const bias = slotsOf(lab, className, setup).qkv_bias ? ", qkv_bias=True" : "";
  return `${className}(${setup.d_in}, ${setup.d_out}${bias})`;
}

/** The PyTorch line of each matrix, as the boxes say: the library's own text (report.code). */
export function planLines(lab, dir, plan) {
  return lab.copyCode(dir.from, dir.to, plan).trimEnd().split("\n");
}

/** The whole copy in PyTorch: both constructors after their seeds, the copy lines, the tokens, the check. */
export function copyBlock(lab, dir, setup, lines, tokenLines) {
  const facts = (className) => lab.classFacts(className);
  const a = facts(dir.from).pythonName;
  const b = facts(dir.to).pythonName;
  // the book's order: the nn.Linear module first (seed 789), then the one with plain matrices (seed 123)
  const order = [dir.from, dir.to].sort((x, y) => facts(y).bookSeed - facts(x).bookSeed);
  return [
    "",
    S.copyCodeTitle(dir.from, dir.to, dir.book),
    ...order.flatMap((className) => [`torch.manual_seed(${facts(className).bookSeed})`, `${facts(className).pythonName} = ${callOf(lab, className, setup)}`]),
    ...lines,
    ...tokenLines,
    `print((${b}(tokens) - ${a}(tokens)).abs().max())  # the largest difference`,
  ];
}

export function renderReport(lab, report, lines, tokensText, side, dir) {
  const tolerance = lab.classFacts(dir.from).tolerance;  // the core's agreement tolerance
  const bodies = report.matrices.map((m) => {
    const reversed = m.action === "shape_mismatch" && m.fromShape.length === 2 && m.toShape.length === 2
      && m.fromShape[0] === m.toShape[1] && m.fromShape[1] === m.toShape[0];
    return h("tbody", { class: `report-${m.action}`, dataset: { matrix: m.name, action: m.action } },
      h("tr", {},
        h("th", { scope: "row", rowspan: m.hint ? "2" : "1" }, h("code", {}, m.name)),
        h("td", { class: "action" }, S.copyActions[m.action] ?? m.action),
        h("td", { class: "shapes" },
          h("span", { class: "shape-pair" }, `${shapeText(m.fromShape)} → ${shapeText(m.toShape)}`),
          reversed ? h("span", { class: "tag", dataset: { testid: "looks-transposed" } }, S.copyLooksTransposed) : null)),
      m.hint ? h("tr", { class: "hint-row" }, h("td", { colspan: "2" }, m.hint)) : null);
  });
  const table = h("div", { class: "table-scroll" },
    h("table", { class: "copy-report", dataset: { testid: "copy-report" } },
      h("caption", { class: "sr-only" }, S.copyReportCaption),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.copyMatrix), h("th", { scope: "col" }, S.copyAction),
        h("th", { scope: "col" }, S.copyShapes(lab.classFacts(dir.from).pythonName, lab.classFacts(dir.to).pythonName)))),
      bodies));
  const suspects = report.matrices.filter((m) => m.action !== "transposed").map((m) => m.name);
  const verdict = report.agree
    ? S.copyAgree
    : report.maxAbsDiff === null ? `${S.copyDisagree(suspects, dir.from)} ${S.copyShapesDiffer}` : S.copyDisagree(suspects, dir.from);
  const out = [h("p", { class: `verdict ${report.agree ? "agree" : "disagree"}`, dataset: { testid: "copy-verdict", agree: String(report.agree) } }, verdict)];
  if (report.maxAbsDiff !== null) {
    out.push(h("p", { class: "maxdiff", dataset: { testid: "copy-maxdiff", value: String(report.maxAbsDiff) } }, S.copyMaxDiff(sci(report.maxAbsDiff))));
  }
  // A square matrix copied without .T: PyTorch raises nothing, only the outputs can tell.
  const square = report.matrices.filter((m) => m.action === "copied" && m.fromShape.length === 2 && m.fromShape[0] === m.fromShape[1]);
  if (square.length && !report.agree && report.maxAbsDiff !== null) {
    const first = report.stages?.find((st) => st.maxAbsDiff > tolerance)?.id ?? "output";
    out.push(h("div", { class: "diag diag-warning square-note", dataset: { testid: "copy-square", value: String(report.maxAbsDiff) } },
      h("p", { class: "diag-msg" }, h("strong", {}, `${S.copySquareTitle}: `),
        S.copySquare(square.map((m) => m.name), square[0].fromShape[0], num(report.maxAbsDiff, 4), first))));
  }
  out.push(table, side);
  out.push(h("p", { class: "muted" }, tokensText));
  if (report.notes?.length) out.push(h("ul", { class: "notes" }, report.notes.map((note) => h("li", {}, note))));
  if (report.stages?.length) out.push(stageTable(report.stages, tolerance));
  out.push(h("h3", {}, S.copyPytorch), h("pre", { class: "code", tabindex: "0", dataset: { testid: "copy-pytorch" } }, h("code", {}, lines.join("\n"))));
  return out;
}

function stageTable(stages, tolerance) {
  const first = stages.find((st) => st.maxAbsDiff > tolerance);
  return h("div", { class: "copy-stages-box", dataset: { testid: "copy-stages" } },
    h("p", { class: "copy-stages-title" }, first ? S.copyFirstDiff(first.id) : S.copyStagesCaption),
    h("table", { class: "copy-stages" },
      h("caption", { class: "sr-only" }, S.copyStagesShort),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.copyStage), h("th", { scope: "col" }, S.copyStageDiff))),
      h("tbody", {}, stages.map((st) =>
        h("tr", { class: st.maxAbsDiff > tolerance ? "differs" : "same", dataset: { copyStage: st.id, value: String(st.maxAbsDiff) } },
          h("th", { scope: "row" }, h("code", {}, st.id)),
          h("td", {}, sci(st.maxAbsDiff)))))));
}

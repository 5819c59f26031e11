// Exercise 3.1: build SelfAttention_v2 (seed 789) and SelfAttention_v1 (seed 123), copy the
// matrices the reader ticks (optionally transposed) from v2 into v1, and show whether they agree.
import { h, byId, replace } from "./dom.js";
import { S } from "./strings.js";
import { sci, shapeText } from "./format.js";

const MATRICES = ["W_query", "W_key", "W_value"];
const FALLBACK = { d_in: 3, d_out: 2 };
/** The library's agreement tolerance (CopyReport.agree is maxAbsDiff <= 1e-6). */
const AGREE = 1e-6;

/**
 * @param lab       the AttentionLab facade
 * @param getSizes  () => {d_in, d_out} | null  (current slots, null when not valid sizes)
 */
export function setupCopyPanel(lab, getSizes) {
  replace(byId("copy-heading"), S.copyHeading);
  replace(byId("copy-matrix-h"), S.copyMatrix);
  replace(byId("copy-copy-h"), S.copyCopy);
  replace(byId("copy-transpose-h"), S.copyTranspose);
  replace(byId("copy-button"), S.copyButton);

  const body = byId("copy-plan-body");
  const boxes = {};
  for (const name of MATRICES) {
    const copy = h("input", { type: "checkbox", id: `copy-${name}`, checked: true, dataset: { testid: `copy-${name}` } });
    const transpose = h("input", { type: "checkbox", id: `transpose-${name}`, checked: true, dataset: { testid: `transpose-${name}` } });
    copy.addEventListener("change", () => { transpose.disabled = !copy.checked; });
    boxes[name] = { copy, transpose };
    body.append(
      h("tr", {},
        h("th", { scope: "row" }, h("code", {}, name)),
        h("td", {}, h("label", { class: "check" }, copy, h("span", { class: "sr-only" }, `${S.copyCopy} ${name}`))),
        h("td", {}, h("label", { class: "check" }, transpose, h("span", { class: "sr-only" }, `${S.copyTranspose} ${name}`)))),
    );
  }

  const sizes = () => getSizes() ?? FALLBACK;
  const refreshIntro = () => {
    const { d_in, d_out } = sizes();
    replace(byId("copy-intro"), S.copyIntro(d_in, d_out));
    replace(byId("copy-sizes"), getSizes() ? S.copySizesFromSlots : S.copySizesFallback);
  };
  refreshIntro();

  byId("copy-button").addEventListener("click", () => {
    const { d_in, d_out } = sizes();
    const plan = {};
    for (const name of MATRICES) plan[name] = { copy: boxes[name].copy.checked, transpose: boxes[name].transpose.checked };
    const result = byId("copy-result");
    try {
      const v2 = lab.create("SelfAttention_v2", { d_in, d_out }, { generator: lab.manualSeed(789) });
      const v1 = lab.create("SelfAttention_v1", { d_in, d_out }, { generator: lab.manualSeed(123) });
      const book = d_in === 3;
      const tokens = book ? lab.bookTokens() : lab.seededTokens(6, d_in, 123);
      const report = lab.copyWeights(v2, v1, plan, { tokens });
      replace(result, renderReport(report, plan, { d_in, d_out, book }));
    } catch (err) {
      replace(result, h("div", { class: "diag diag-error", dataset: { code: err?.code ?? "error" } },
        h("p", { class: "diag-msg" }, h("strong", {}, `${S.copyError}: `), String(err?.message ?? err)),
        err?.hint ? h("p", { class: "diag-hint" }, err.hint) : null));
    }
  });

  return { refresh: refreshIntro };
}

function renderReport(report, plan, { d_in, d_out, book }) {
  // One row per matrix, its hint on a full-width row below so it reads well on a phone too.
  const bodies = report.matrices.map((m) =>
    h("tbody", { class: `report-${m.action}`, dataset: { matrix: m.name, action: m.action } },
      h("tr", {},
        h("th", { scope: "row", rowspan: m.hint ? "2" : "1" }, h("code", {}, m.name)),
        h("td", { class: "action" }, S.copyActions[m.action] ?? m.action),
        h("td", { class: "shapes" }, `${shapeText(m.fromShape)} → ${shapeText(m.toShape)}`)),
      m.hint ? h("tr", { class: "hint-row" }, h("td", { colspan: "2" }, m.hint)) : null));
  const table = h("div", { class: "table-scroll" },
    h("table", { class: "copy-report", dataset: { testid: "copy-report" } },
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, S.copyMatrix), h("th", { scope: "col" }, S.copyAction),
        h("th", { scope: "col" }, S.copyShapes))),
      bodies));

  // Name the matrices that explain a disagreement: anything not copied transposed.
  const suspects = report.matrices.filter((m) => m.action !== "transposed").map((m) => m.name);
  const verdict = report.agree
    ? S.copyAgree
    : report.maxAbsDiff === null ? `${S.copyDisagree(suspects)} ${S.copyShapesDiffer}` : S.copyDisagree(suspects);
  const out = [
    h("p", { class: `verdict ${report.agree ? "agree" : "disagree"}`, dataset: { testid: "copy-verdict", agree: String(report.agree) } }, verdict),
  ];
  if (report.maxAbsDiff !== null) {
    out.push(h("p", { class: "maxdiff", dataset: { testid: "copy-maxdiff", value: String(report.maxAbsDiff) } },
      S.copyMaxDiff(sci(report.maxAbsDiff))));
  }
  out.push(table);
  const n = report.tokens?.shape?.[0] ?? 6;
  out.push(h("p", { class: "muted" }, S.copyTokens(n, d_in, book)));
  if (report.notes?.length) out.push(h("ul", { class: "notes" }, report.notes.map((note) => h("li", {}, note))));
  if (report.stages?.length) out.push(stageTable(report.stages));
  out.push(h("h3", {}, S.copyPytorch), h("pre", { class: "code", dataset: { testid: "copy-pytorch" } }, h("code", {}, pytorchLines(report, plan, d_in, d_out).join("\n"))));
  return out;
}

/** Stage by stage: where the two modules start to differ. */
function stageTable(stages) {
  const first = stages.find((s) => s.maxAbsDiff > AGREE);
  return h("div", { class: "copy-stages-box", dataset: { testid: "copy-stages" } },
    h("p", { class: "copy-stages-title" }, first ? S.copyFirstDiff(first.id) : S.copyStagesCaption),
    h("table", { class: "copy-stages" },
      h("caption", { class: "sr-only" }, S.copyStagesShort),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.copyStage), h("th", { scope: "col" }, S.copyStageDiff))),
      h("tbody", {}, stages.map((s) =>
        h("tr", { class: s.maxAbsDiff > AGREE ? "differs" : "same", dataset: { copyStage: s.id } },
          h("th", { scope: "row" }, h("code", {}, s.id)),
          h("td", {}, sci(s.maxAbsDiff)))))));
}

function pytorchLines(report, plan, dIn, dOut) {
  const lines = [
    "torch.manual_seed(789)",
    `sa_v2 = SelfAttention_v2(${dIn}, ${dOut})`,
    "torch.manual_seed(123)",
    `sa_v1 = SelfAttention_v1(${dIn}, ${dOut})`,
  ];
  if (report.code) {
    lines.push(...report.code.trimEnd().split("\n"));
  } else {
    for (const name of MATRICES) {
      const p = plan[name];
      if (!p.copy) lines.push(`# sa_v1.${name} keeps its own initial values`);
      else lines.push(`sa_v1.${name} = torch.nn.Parameter(sa_v2.${name}.weight${p.transpose ? ".T" : ""})`);
    }
  }
  lines.push("print(sa_v1(inputs) - sa_v2(inputs))");
  return lines;
}

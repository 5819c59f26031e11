// "The same MultiHeadAttention, eight ways": the chapter's MultiHeadAttention and every class whose
// recipe copies it (the chapter 3 bonus rewrites: packed qkv, einsum, scaled_dot_product_attention,
// nn.MultiheadAttention, ...), each given the same weights by the book's map, run on the same tokens.
// Which agree, by how much, and why the others do not: all from lab.copyWeights' reports.
import { h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { sci } from "./format.js";

const SLOTS = ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"];

export function setupWays(app) {
  const { lab } = app;
  const facts = (name) => lab.classFacts(name);
  /** The classes of `source`'s chapter that copy from it (a later chapter's class that copies it is another model, not a way to write it). */
  const targets = (source) => lab.classes.filter((n) => facts(n).copiesFrom.some((p) => p.from === source) && facts(n).book.chapter === facts(source).book.chapter);
  const source = lab.classes.find((n) => targets(n).length > 0);
  const intro = h("p", { dataset: { testid: "ways-intro" } });
  const button = h("button", { type: "button", part: "button", dataset: { testid: "ways-run" }, on: { click: run } }, S.waysRun);
  const result = h("div", { class: "ways-result", "aria-live": "polite", dataset: { testid: "ways-result" } });
  const box = h("div", { class: "ways-box", dataset: { testid: "ways" } }, intro, button, result);

  /** The setup to run: the page's slots when its class is one of the eight and valid, else the book-sized default. */
  function setup() {
    const d = app.derived.description;
    const c = app.derived.config;
    if (d?.ok && (app.state.className === source || targets(source).includes(app.state.className))) {
      return Object.fromEntries(SLOTS.map((k) => [k, c[k] ?? (k === "qkv_bias" ? false : k === "dropout" ? 0 : undefined)]).filter(([, v]) => v !== undefined));
    }
    return { d_in: 4, d_out: 4, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false };
  }
  /** The slots of `className` among the setup's, by name. */
  const slotsOf = (className, all) => Object.fromEntries(lab.slots(className).filter((s) => s.name in all).map((s) => [s.name, all[s.name]]));

  function run() {
    const all = setup();
    const from = lab.create(source, slotsOf(source, all), { generator: lab.manualSeed(123) });
    const rows = [];
    try {
      for (const target of targets(source)) {
        const config = slotsOf(target, all);
        const described = lab.describe(target, config);
        if (!described.ok) {
          rows.push({ target, refused: described.diagnostics.find((x) => x.severity === "error") });
          continue;
        }
        const to = lab.create(target, config, { generator: lab.manualSeed(456) });
        try {
          rows.push({ target, report: lab.copyWeights(from, to) });
        } finally {
          to.dispose();
        }
      }
    } finally {
      from.dispose();
    }
    const agreeing = rows.filter((r) => r.report?.agree).length;
    replace(result,
      h("p", { class: "verdict", dataset: { testid: "ways-verdict" } }, S.waysVerdict(agreeing, rows.length, lab.describe(source, slotsOf(source, all)).pythonCall)),
      h("div", { class: "table-scroll" }, h("table", { class: "ways-table", dataset: { testid: "ways-table" } },
        h("caption", { class: "sr-only" }, S.waysCaption),
        h("thead", {}, h("tr", {}, ...S.waysColumns.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...rows.map((r) => row(r))))));
  }

  function row({ target, report, refused }) {
    const book = facts(target).book;
    const cells = [h("th", { scope: "row" }, h("code", {}, target)), h("td", { class: "muted" }, `${book.folder}/${book.file}`)];
    if (refused) {
      cells.push(h("td", { class: "disagree" }, S.waysRefused), h("td", {}, "—"), h("td", {}, refused.message));
    } else {
      const why = report.agree ? report.notes[0] : report.notes.join(" ");
      cells.push(h("td", { class: report.agree ? "agree" : "disagree" }, report.agree ? S.waysAgree : S.waysDisagree),
        h("td", { class: "num" }, Number.isFinite(report.maxAbsDiff) ? sci(report.maxAbsDiff) : S.waysNaN), h("td", {}, why));
    }
    return h("tr", { dataset: { target, agree: String(Boolean(report?.agree)) } }, ...cells);
  }

  return {
    box,
    refresh() {
      intro.textContent = S.waysIntro(source, targets(source).length + 1);
    },
  };
}

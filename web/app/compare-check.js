// "Check your own module" (issue 43): the snippet a reader pastes into the notebook (S.checkSnippet, with a copy
// button), a file input for the check.pt it saves, and the verdict of lab.checkModule(file): agree or
// not, by how much, the first stage that differs, and the catalogue's cause that explains it with its
// line and its fix. The file is read in the page's worker when there is one (checkpoint-load.js's
// route: the page's own lab may be the lean binary), by slices: never whole, never sent anywhere.
import { copyText, h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { num, sci } from "./format.js";
import { errorBox } from "./diagnostic-view.js";
import { confirmCode } from "./check-code.js";

/** lab.checkModule(file) in the worker when there is one, else here. */
async function checkFile(app, file) {
  if (!app.runner?.hasWorker) return app.lab.checkModule(file);
  return app.runner.request("checkModule", { file });
}

/** Digits enough to tell the marked pair apart (4 decimals, more while they print alike, at most 9). */
function digitsFor(d) {
  const k = d.index[d.index.length - 1] - d.from;
  let digits = 4;
  while (digits < 9 && num(d.yours[k], digits) === num(d.book[k], digits)) digits++;
  return digits;
}

/** The first differing value: its place, and the row around it, the reader's values above the book's. */
function differenceView(d) {
  const at = d.index.length - 1;
  const digits = digitsFor(d);
  const place = `${d.stage}[${d.index.join(", ")}]`;
  const cells = (values, label) => h("tr", {}, h("th", { scope: "row" }, label),
    ...Array.from(values, (v, k) => h("td", { class: d.from + k === d.index[at] ? "check-diff" : "" }, num(v, digits))));
  return h("div", { class: "check-difference", dataset: { testid: "check-difference", stage: d.stage, index: d.index.join(",") } },
    h("p", {}, S.checkWhere(place, d.axes)),
    h("div", { class: "table-scroll" }, h("table", { class: "check-row" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, d.axes[at]), ...Array.from(d.yours, (_, k) => h("th", { scope: "col" }, String(d.from + k))))),
      h("tbody", {}, cells(d.yours, S.checkYours), cells(d.book, S.checkBook)))));
}

/** "owner/repo#12, ..." as links to each thread. */
function sourceLinks(source) {
  const parts = [];
  for (const [k, ref] of source.split(", ").entries()) {
    const m = /^([\w.-]+\/[\w.-]+)#(\d+)(.*)$/.exec(ref);
    if (k) parts.push(", ");
    parts.push(m ? h("a", { href: `https://github.com/${m[1]}/issues/${m[2]}`, target: "_blank", rel: "noopener" }, `${m[1]}#${m[2]}`) : ref, m ? m[3] : "");
  }
  return parts;
}

/** The verdict's first line: agree, agree but a stage differs, or not (by how much, NaN where the book has numbers). */
function verdictText(report) {
  const diff = sci(report.maxAbsDiff);
  if (report.agree) return report.firstStage ? S.checkAgreeStage(diff, report.firstStage) : S.checkAgree(diff);
  return S.checkDisagree(Number.isFinite(report.maxAbsDiff) ? S.checkDiffers(diff) : S.checkNaN, report.firstStage);
}

/** The PyTorch that confirms it, with a copy button. */
function confirmView(app, report, fileName) {
  const book = app.lab.classFacts(report.className)?.book ?? null;
  const text = confirmCode({ report, book, fileName });
  const code = h("pre", { class: "code check-snippet", dataset: { testid: "check-confirm" } }, h("code", {}, text));
  const status = h("span", { class: "muted", "aria-live": "polite" });
  const copy = h("button", { type: "button", part: "button", class: "small", on: { click: () => copyText(text, code, status, S.checkCopied, S.checkCopyFailed) } }, S.checkCopyConfirm);
  return h("div", {}, h("p", {}, S.checkConfirm), code, h("p", {}, copy, " ", status));
}

/** The verdict as the page shows it. */
function verdictView(app, report, fileName) {
  const explains = report.causes.filter((c) => c.explains);
  const lines = [h("p", { class: `verdict ${report.agree && !report.firstStage ? "agree" : "disagree"}`, dataset: { testid: "check-verdict", agree: String(report.agree) } },
    verdictText(report))];
  if (report.difference) lines.push(differenceView(report.difference));
  for (const c of explains) {
    lines.push(h("div", { class: "check-cause", dataset: { testid: "check-cause", cause: c.id } },
      h("p", {}, h("strong", {}, S.checkExplains), c.title),
      h("p", {}, S.checkLine, h("code", { dataset: { testid: "check-line" } }, c.line)),
      h("p", {}, S.checkFix, h("code", { dataset: { testid: "check-fix" } }, c.fix)),
      h("p", { class: "muted" }, S.checkSource, ...sourceLinks(c.source))));
  }
  if (!report.agree && explains.length === 0) lines.push(h("p", { dataset: { testid: "check-no-cause" } }, S.checkNoCause));
  for (const note of report.notes) lines.push(h("p", { class: "muted" }, note));
  if (!report.agree) lines.push(confirmView(app, report, fileName));
  return lines;
}

export function setupCheckOwn(app) {
  const status = h("span", { class: "muted", "aria-live": "polite", dataset: { testid: "check-copy-status" } });
  const snippet = h("pre", { class: "code check-snippet", dataset: { testid: "check-snippet" } }, h("code", {}, S.checkSnippet));
  const copy = h("button", { type: "button", part: "button", class: "small", dataset: { testid: "check-copy" }, on: { click: () => copySnippet() } }, S.checkCopy);
  const input = h("input", { type: "file", id: "check-file", accept: ".pt,.pth", part: "input", dataset: { testid: "check-file" } });
  const result = h("div", { class: "compare-result", "aria-live": "polite", dataset: { testid: "check-result" } });
  const box = h("div", { class: "ways-box", dataset: { testid: "check-own" } },
    h("p", {}, S.checkIntro), snippet, h("p", {}, copy, " ", status), h("p", { class: "muted" }, S.checkStages),
    h("div", { class: "field" }, h("label", { for: "check-file" }, S.checkFileLabel), input), result);
  let pending = 0;

  const copySnippet = () => copyText(S.checkSnippet, snippet, status, S.checkCopied, S.checkCopyFailed);

  input.addEventListener("change", async () => {
    const file = input.files?.[0];
    if (!file) return;
    const id = ++pending;
    replace(result, h("p", { class: "muted" }, S.checkReading(file.name)));
    try {
      const report = await checkFile(app, file);
      if (id === pending) replace(result, ...verdictView(app, report, file.name));
    } catch (err) {
      if (id === pending) replace(result, errorBox(S.checkRefused, err, { testid: "check-error", showCode: true }));
    }
  });

  return { box, refresh() {} };
}

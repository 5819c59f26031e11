// "Check your own module" (issue 43): the snippet a reader pastes into the notebook (S.checkSnippet, with a copy
// button), a file input for the check.pt it saves, and the verdict of lab.checkModule(file): agree or
// not, by how much, the first stage that differs, and the catalogue's cause that explains it with its
// line and its fix. The file is read in the page's worker when there is one (checkpoint-load.js's
// route: the page's own lab may be the lean binary), by slices: never whole, never sent anywhere.
import { h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { sci } from "./format.js";
import { errorBox } from "./diagnostic-view.js";

/** lab.checkModule(file) in the worker when there is one, else here. */
async function checkFile(app, file) {
  if (!app.runner?.hasWorker) return app.lab.checkModule(file);
  return app.runner.request("checkModule", { file });
}

/** The verdict as the page shows it. */
function verdictView(report) {
  const explains = report.causes.filter((c) => c.explains);
  const lines = [h("p", { class: "verdict", dataset: { testid: "check-verdict", agree: String(report.agree) } },
    report.agree ? S.checkAgree(sci(report.maxAbsDiff)) : S.checkDisagree(sci(report.maxAbsDiff), report.firstStage))];
  for (const c of explains) {
    lines.push(h("div", { class: "check-cause", dataset: { testid: "check-cause", cause: c.id } },
      h("p", {}, h("strong", {}, S.checkExplains), c.title),
      h("p", {}, S.checkLine, h("code", { dataset: { testid: "check-line" } }, c.line)),
      h("p", {}, S.checkFix, h("code", { dataset: { testid: "check-fix" } }, c.fix)),
      h("p", { class: "muted" }, S.checkSource, c.source)));
  }
  if (!report.agree && explains.length === 0) lines.push(h("p", { dataset: { testid: "check-no-cause" } }, S.checkNoCause));
  for (const note of report.notes) lines.push(h("p", { class: "muted" }, note));
  return lines;
}

export function setupCheckOwn(app) {
  const status = h("span", { class: "muted", "aria-live": "polite", dataset: { testid: "check-copy-status" } });
  const snippet = h("pre", { class: "check-snippet", dataset: { testid: "check-snippet" } }, h("code", {}, S.checkSnippet));
  const copy = h("button", { type: "button", part: "button", class: "small", dataset: { testid: "check-copy" }, on: { click: () => copySnippet() } }, S.checkCopy);
  const input = h("input", { type: "file", id: "check-file", accept: ".pt,.pth", part: "input", dataset: { testid: "check-file" } });
  const result = h("div", { class: "compare-result", "aria-live": "polite", dataset: { testid: "check-result" } });
  const box = h("div", { class: "ways-box", dataset: { testid: "check-own" } },
    h("p", {}, S.checkIntro), snippet, h("p", {}, copy, " ", status),
    h("div", { class: "field" }, h("label", { for: "check-file" }, S.checkFileLabel), input), result);
  let pending = 0;

  async function copySnippet() {
    try {
      await navigator.clipboard.writeText(S.checkSnippet);
      status.textContent = S.checkCopied;
    } catch {
      const range = document.createRange();
      range.selectNodeContents(snippet);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      status.textContent = S.checkCopyFailed;
    }
  }

  input.addEventListener("change", async () => {
    const file = input.files?.[0];
    if (!file) return;
    const id = ++pending;
    replace(result, h("p", { class: "muted" }, S.checkReading(file.name)));
    try {
      const report = await checkFile(app, file);
      if (id === pending) replace(result, ...verdictView(report));
    } catch (err) {
      if (id === pending) replace(result, errorBox(S.checkRefused, err, { testid: "check-error", showCode: true }));
    }
  });

  return { box, refresh() {} };
}

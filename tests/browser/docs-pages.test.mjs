// The getting-started pages' browser examples do what the pages say, as written: the course author's
// page (the element, the listening script, the theme) and the JS developer's import-map page, each put
// in a page of their own on the test server. The paths of the examples' hosts (`/courses/attention/`,
// `/node_modules/attention-lab/web/lib/`) are mapped to where the server has those files.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, launchLab } from "./helpers.mjs";
import { fencedBlocks } from "../node/markdown.mjs";

const page = (name) => fencedBlocks(readFileSync(path.join(ROOT, "docs", "getting-started", name), "utf8"));

/**
 * Opens `html` at `<server>/docs-example.html`. `nextLog(pred)` resolves with the arguments (as values)
 * of the first console.log call for which `pred(args)` holds, logged before or after the call.
 */
async function openExample(lab, html) {
  const tab = await lab.context.newPage();
  const logs = [];
  const waiting = [];
  const problems = [];
  tab.on("console", async (msg) => {
    if (msg.type() === "error") problems.push(msg.text());
    if (msg.type() !== "log") return;
    const args = await Promise.all(msg.args().map((a) => a.jsonValue()));
    logs.push(args);
    for (const w of waiting) if (w.pred(args)) w.resolve(args);
  });
  tab.on("pageerror", (err) => {
    problems.push(err.message);
    for (const w of waiting) w.reject(err);
  });
  const nextLog = (pred) => new Promise((resolve, reject) => {
    const seen = logs.find(pred);
    if (seen) resolve(seen);
    else waiting.push({ pred, resolve, reject });
  });
  await tab.route(`${lab.url}docs-example.html`, (route) => route.fulfill({ contentType: "text/html", body: html }));
  await tab.goto(`${lab.url}docs-example.html`);
  return { tab, logs, problems, nextLog };
}

describe("the getting-started pages' browser examples", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("the course author's embed, listeners and theme work as the page says", async () => {
    const blocks = page("course-author.md");
    const html = blocks.filter((b) => b.lang === "html");
    const css = blocks.find((b) => b.lang === "css");
    assert.equal(html.length, 2);
    const body = html.map((b) => b.code.replaceAll("/courses/attention/", "/")).join("\n");
    const { tab, problems, nextLog } = await openExample(lab, `<!doctype html><html><head><style>${css.code}</style></head><body>${body}</body></html>`);
    try {
      // run-complete: "pythonCall outputShape", as the comment in the listener says; then run() and el.setup
      const runLine = await nextLog((l) => typeof l[0] === "string" && l[0].startsWith("MultiHeadAttentionWrapper"));
      assert.deepEqual(runLine, ["MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)", [2, 6, 2]]);
      const [setup] = await nextLog((l) => typeof l[0] === "object" && l[0] !== null);
      assert.equal(setup.className, "MultiHeadAttentionWrapper");
      assert.deepEqual({ d_out: setup.config.d_out, num_heads: setup.config.num_heads }, { d_out: 1, num_heads: 2 });
      // the locked slots are read-only, the hidden panels are not shown
      const el = tab.locator("attention-lab");
      assert.equal(await el.getByTestId("slot-d_out").isEditable(), false);
      assert.equal(await el.getByTestId("compare-panel").isVisible(), false);
      // the theme: --al-accent colours the Run button, ::part(run-button) reaches it
      const run = el.getByTestId("run");
      assert.equal(await run.evaluate((b) => getComputedStyle(b).backgroundColor), "rgb(176, 48, 106)");
      assert.equal(await run.evaluate((b) => getComputedStyle(b).borderTopLeftRadius), "0px");
      assert.deepEqual(problems, []);
    } finally {
      await tab.close();
    }
  });

  test("the JS developer's import-map page loads the library and prints head_dim 64", async () => {
    const block = page("js-developer.md").find((b) => b.lang === "html" && b.code.includes("importmap"));
    const html = block.code.replace("/node_modules/attention-lab/web/lib/", "/lib/");
    const { tab, problems, nextLog } = await openExample(lab, `<!doctype html><html><head></head><body>${html}</body></html>`);
    try {
      assert.deepEqual(await nextLog(() => true), [64]);
      assert.deepEqual(problems, []);
      assert.match(block.code, /\.headDim\);\s+\/\/ 64/);
    } finally {
      await tab.close();
    }
  });
});

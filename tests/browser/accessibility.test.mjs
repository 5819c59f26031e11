// Accessibility: axe-core (run inside the page, through the shadow roots) reports no violation on
// the teaching page before and after a run, on an error state and on the embed page; and the lab
// works from the keyboard alone.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, afterRun, finish, launchLab, openPage, pasteCall, runPreset } from "./helpers.mjs";

const AXE = await readFile(path.join(ROOT, "node_modules", "axe-core", "axe.min.js"), "utf8");

/** axe-core's violations on the page (page.evaluate is not subject to the page's CSP). */
async function violations(page) {
  const before = page.problems.length;
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  // axe measures colours with inline styles of its own, which the page's CSP (rightly) refuses.
  const mine = page.problems.splice(before);
  page.problems.push(...mine.filter((p) => !/Applying inline style violates/.test(p)));
  return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" > ")).join(" | ")}`);
}

describe("accessibility", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("axe-core finds no violation on the page after the book preset, with a diagnostic and after a comparison", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    await page.getByTestId("grid-details").locator("summary").click();
    await page.getByTestId("compare-button").click();
    await page.getByTestId("compare-verdict").waitFor();
    assert.deepEqual(await violations(page), []);
    await pasteCall(page, "MultiHeadAttention(3, 1, 6, 0.0, 2)");
    await page.getByTestId("prediction").fill("(2, 6");
    assert.deepEqual(await violations(page), []);
    await finish(page);
  });

  test("axe-core finds no violation with a copy report, a loaded GPT-2 layer and its heads, and a load error", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=3");
    await page.getByTestId("transpose-W_key").uncheck();
    await page.getByTestId("copy-button").click();
    await page.getByTestId("copy-square").waitFor();
    await page.getByTestId("copy-W_value").uncheck(); // the stale state too
    assert.deepEqual(await violations(page), []);
    await pasteCall(page, "MultiHeadAttention(8, 8, 16, 0.0, 4)");
    await page.getByTestId("ckpt-heads").fill("4");
    await page.getByTestId("ckpt-file").setInputFiles(path.join(ROOT, "tests", "fixtures", "checkpoints", "gpt2_d8_h4_prefix.safetensors"));
    await page.getByTestId("ckpt-summary").waitFor();
    await page.getByTestId("ckpt-ids").fill("11, 0, 7");
    await page.getByTestId("ckpt-run").click();
    await page.getByTestId("ckpt-stage-cards").locator("[data-stage=output]").waitFor();
    await page.getByTestId("ckpt-kind-text").check();
    await page.getByTestId("ckpt-chips").waitFor();
    assert.deepEqual(await violations(page), []);
    await page.getByTestId("ckpt-target-current").check();
    await page.getByTestId("ckpt-load").click();
    await page.getByTestId("ckpt-error").waitFor();
    await page.getByTestId("ckpt-heads").fill("x");
    await page.getByTestId("ckpt-load").click();
    assert.deepEqual(await violations(page), []);
    await finish(page);
  });

  test("axe-core finds no violation on the embed page with two widgets, nor in the compact exercise after a run with a stage and the facts opened", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    assert.deepEqual(await violations(page), []);
    const exercise = page.locator("#exercise");
    await exercise.getByTestId("prediction").fill("2");
    await afterRun(page, () => exercise.getByTestId("run").click(), "#exercise");
    assert.deepEqual(await violations(page), []);
    await exercise.locator("[data-stage=attn_weights]").getByTestId("stage-toggle").click();
    await exercise.getByTestId("facts-toggle").click();
    await exercise.getByTestId("tokens-toggle").click();
    assert.deepEqual(await violations(page), []);
    // the collapsed stage's button is named by its id and its title
    assert.equal(await exercise.locator("[data-stage=queries]").getByTestId("stage-toggle").textContent(), "queries Queries per head");
    await finish(page);
  });

  test("keyboard only: a preset, a slot, Run, the tabs and a heatmap's values", async () => {
    const page = await openPage(lab);
    // Tab from the top of the page reaches the presets; Enter runs one.
    await page.keyboard.press("Tab"); // skip link
    await page.keyboard.press("Tab");
    const focused = () => page.evaluate(() => {
      let el = document.activeElement;
      while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement;
      return el ? (el.dataset.testid ?? el.textContent.trim().slice(0, 30)) : null;
    });
    assert.equal(await focused(), "preset-bookToy");
    await page.keyboard.press("Tab");
    assert.equal(await focused(), "preset-exercise32");
    await afterRun(page, () => page.keyboard.press("Enter"));
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    // Type into a slot, then reach Run and press it.
    await page.getByTestId("slot-num_heads").focus();
    await page.keyboard.press("Control+A");
    await page.keyboard.type("3");
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "3");
    await page.getByTestId("run").focus();
    await afterRun(page, () => page.keyboard.press("Enter"));
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 3\)/);
    // Arrow keys move between batch tabs; a focused heatmap reads values with the arrow keys.
    const weights = page.locator("[data-stage=attn_weights]");
    await weights.getByRole("tab", { name: "b = 0" }).focus();
    await page.keyboard.press("ArrowRight");
    assert.equal(await weights.getByRole("tab", { name: "b = 1" }).getAttribute("aria-selected"), "true");
    const frame = weights.locator(".tabpanel:not([hidden]) .heatmap-frame").first();
    await frame.focus();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowRight");
    assert.match(await weights.locator(".tabpanel:not([hidden]) .heatmap-readout").first().textContent(), /^journey → journey: 0\.\d{4}$/);
    await finish(page);
  });
});

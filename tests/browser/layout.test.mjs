// Screenshots after running the book preset at desktop and phone sizes, with checks that nothing
// spills out of the page or overlaps (saved to test-output/screenshots/ for a human look).
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { finish, launchLab, openPage, runPreset, screenshotDir } from "./helpers.mjs";

const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
];

/** Pairs of sibling boxes (from `selector`) that overlap by more than a pixel. */
function overlaps(selector) {
  const boxes = [...document.querySelectorAll(selector)]
    .filter((el) => el.offsetParent !== null)
    .map((el) => ({ el, r: el.getBoundingClientRect() }));
  const bad = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r;
      const b = boxes[j].r;
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) bad.push(`${boxes[i].el.className || boxes[i].el.tagName} / ${boxes[j].el.className || boxes[j].el.tagName}`);
    }
  }
  return bad;
}

describe("layout", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  for (const viewport of VIEWPORTS) {
    const size = `${viewport.width}x${viewport.height}`;
    test(`the book preset at ${size} fits the width and nothing overlaps`, async () => {
      const page = await openPage(lab, "", { viewport });
      await runPreset(page, "bookToy");
      const dir = await screenshotDir();
      await page.screenshot({ path: path.join(dir, `book-toy-${size}.png`) });
      await page.screenshot({ path: path.join(dir, `book-toy-${size}-full.png`), fullPage: true });
      await page.locator("[data-stage=attn_weights]").scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(dir, `book-toy-${size}-weights.png`) });
      await page.getByTestId("copy-button").click();
      await page.getByTestId("copy-verdict").waitFor();
      await page.getByTestId("copy-panel").scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(dir, `copy-panel-${size}.png`) });

      const scroll = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, viewport: window.innerWidth }));
      assert.ok(scroll.page <= scroll.viewport, `page is ${scroll.page}px wide in a ${scroll.viewport}px viewport`);
      // Every panel and card stays inside the viewport horizontally.
      const outside = await page.evaluate(() => [...document.querySelectorAll(".panel, .stage-card, .site-header h1, .pitch, .run-row > *")]
        .filter((el) => { const r = el.getBoundingClientRect(); return r.left < -0.5 || r.right > window.innerWidth + 0.5; })
        .map((el) => el.id || el.className));
      assert.deepEqual(outside, []);
      for (const selector of [".slot", ".fact", ".preset", ".panel", ".stage-card", ".run-row > *", ".tokens-grid > *", ".named-values li"]) {
        assert.deepEqual(await page.evaluate(overlaps, selector), [], `overlapping ${selector}`);
      }
      // Text inside fixed-width controls is not clipped.
      const clipped = await page.evaluate(() => [...document.querySelectorAll("button, .tab, label, h1, h2, h3, .output-summary")]
        .filter((el) => el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1)
        .map((el) => el.textContent.trim().slice(0, 40)));
      assert.deepEqual(clipped, []);
      await finish(page);
    });
  }
});

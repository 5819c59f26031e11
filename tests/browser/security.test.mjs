// The page's own guarantees: DOM built without HTML parsing, no inline script or style, no eval,
// only the facade imported, and the strict CSP actually served.
import assert from "node:assert/strict";
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, finish, launchLab, openPage } from "./helpers.mjs";

const APP = path.join(ROOT, "web", "app");

describe("security", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("app code never parses HTML, evaluates strings or reaches past the facade", async () => {
    for (const file of (await readdir(APP)).filter((f) => f.endsWith(".js"))) {
      const source = await readFile(path.join(APP, file), "utf8");
      for (const banned of [/\.innerHTML\b/, /\.outerHTML\b/, /insertAdjacentHTML/, /(?<![.\w"'])eval\s*\(/, /new Function\s*\(/, /document\.write/, /\bfetch\s*\(/]) {
        assert.doesNotMatch(source, banned, `${file} uses ${banned}`);
      }
      for (const m of source.matchAll(/(?:import|from)\s*\(?\s*["']([^"']+)["']/g)) {
        assert.ok(m[1].startsWith("./") || m[1] === "../lib/attention-lab.js", `${file} imports ${m[1]}`);
      }
    }
  });

  test("index.html has no inline script or style", async () => {
    const html = await readFile(path.join(ROOT, "web", "index.html"), "utf8");
    assert.doesNotMatch(html, /<style/i);
    assert.doesNotMatch(html, /\sstyle=/i);
    assert.doesNotMatch(html, /\son[a-z]+=/i);
    for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
      assert.match(m[1], /\bsrc=/);
      assert.equal(m[2].trim(), "");
    }
  });

  test("the page loads under the served CSP without violations", async () => {
    const page = await openPage(lab);
    const response = await page.request.get(lab.url);
    assert.match(response.headers()["content-security-policy"], /script-src 'self'/);
    assert.equal(await page.locator("#class-select option").count(), 5);
    await finish(page);
  });
});

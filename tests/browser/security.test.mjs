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
      // (comments may show how a user imports the package: only code is checked)
      const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
      for (const m of code.matchAll(/(?:import|from)\s*\(?\s*["']([^"']+)["']/g)) {
        // The facade, the app's own modules, and GPT-2's tokenizer (vendored from npm by scripts/vendor.mjs).
        const allowed = m[1].startsWith("./") || m[1] === "../lib/attention-lab.js" || m[1] === "../vendor/gpt-tokenizer/encoding/r50k_base.js";
        assert.ok(allowed, `${file} imports ${m[1]}`);
      }
    }
  });

  for (const file of ["index.html", "embed.html"]) test(`${file} has no inline script or style and carries the CSP for static hosts`, async () => {
    const html = await readFile(path.join(ROOT, "web", file), "utf8");
    const meta = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html);
    assert.ok(meta, "a CSP meta tag");
    const served = (await import("../../scripts/serve.mjs")).SECURITY_HEADERS["Content-Security-Policy"];
    assert.equal(meta[1], served, "the same policy as the server sends");
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
    assert.equal(await page.locator("#class-select option").count(), 17, "the chapter's five classes, its seven bonus rewrites, the four chapter 4 bonus classes and the chapter 5 bonus class");
    await finish(page);
  });

  test("markup in URL values renders as text: no element is made, no dialog opens, no script runs", async () => {
    const evil = "<img src=x onerror=alert(1)>";
    const q = new URLSearchParams({ class: "MultiHeadAttention", d_in: evil, d_out: evil, context_length: "6", dropout: "0", num_heads: evil, seed: evil, tokens: `<script>alert(2)</script> ${evil}` });
    const dialogs = [];
    // Every alert, confirm or prompt is recorded from before the page's first script, so "none opened"
    // is a fact about the whole load rather than about a wait afterwards.
    const opened = await openPage(lab, `?${q}`, {
      init: () => {
        window.__dialogs = [];
        for (const name of ["alert", "confirm", "prompt"]) {
          const original = window[name];
          window[name] = function (...args) {
            window.__dialogs.push(`${name}(${args.join(", ")})`);
            return original.apply(this, args);
          };
        }
      },
    });
    opened.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss(); });
    assert.deepEqual(await opened.evaluate(() => window.__dialogs), []);
    assert.deepEqual(dialogs, []);
    assert.equal(await opened.locator("attention-lab").evaluate((el) => el.shadowRoot.querySelectorAll("img, script").length), 0);
    assert.equal(await opened.getByTestId("slot-d_in").inputValue(), evil);
    assert.equal(await opened.getByTestId("sentence").inputValue(), `<script>alert(2)</script> ${evil}`);
    assert.match(await opened.getByTestId("call-box").inputValue(), /<img src=x onerror=alert\(1\)>/);
    assert.ok(await opened.locator("[data-slot-diagnostics=d_in] .diag-error").count() >= 1, "d_in is reported as not a number");
    assert.equal(await opened.getByTestId("run").isDisabled(), true);
    // The tokens (word labels) are text too, once the slots are valid.
    await opened.getByTestId("call-box").fill("MultiHeadAttention(3, 2, 6, 0.0, 2)");
    await opened.getByTestId("seed").fill("1");
    await opened.getByTestId("run").click();
    await opened.locator("[data-stage=output]").waitFor();
    assert.equal(await opened.locator("[data-stage=input]").getByTestId("grid").first().locator("tbody th").first().textContent(), "<script>alert(2)</script>");
    assert.equal(await opened.locator("attention-lab").evaluate((el) => el.shadowRoot.querySelectorAll("img, script").length), 0);
    assert.deepEqual(await opened.evaluate(() => window.__dialogs), []);
    assert.deepEqual(dialogs, []);
    await finish(opened);
  });

  test("widget attributes are validated like any other input", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const result = await page.evaluate(() => new Promise((resolve) => {
      const el = document.createElement("attention-lab");
      el.setAttribute("class-name", "<b>x</b>");
      el.setAttribute("d_in", "<img src=x onerror=alert(1)>");
      el.setAttribute("batch", "1e9");
      el.setAttribute("locked", "d_in onclick <i>");
      el.setAttribute("hidden", "trace <svg>");
      el.id = "late";
      document.querySelector("main").append(el);
      const wait = () => (el.dataset.ready ? resolve({
        cls: el.shadowRoot.getElementById("class-select").value,
        dIn: el.shadowRoot.getElementById("slot-d_in").value,
        readOnly: el.shadowRoot.getElementById("slot-d_in").readOnly,
        traceHidden: el.shadowRoot.getElementById("trace").hidden,
        status: el.shadowRoot.getElementById("status").textContent,
        markup: el.shadowRoot.querySelectorAll("b, i, img, svg:not(.heatmap-svg)").length,
      }) : setTimeout(wait, 50));
      wait();
    }));
    assert.equal(result.cls, "MultiHeadAttention");
    assert.equal(result.dIn, "<img src=x onerror=alert(1)>");
    assert.equal(result.readOnly, true);
    assert.equal(result.traceHidden, true);
    assert.match(result.status, /unknown class “\u2068<b>x<\/b>\u2069”/);
    assert.match(result.status, /batch/);
    assert.equal(result.markup, 0);
    await finish(page);
  });

  test("the page asks nothing of any other origin and runs offline from its own files", async () => {
    const page = await lab.context.newPage();
    const requests = [];
    page.on("request", (r) => requests.push(r.url()));
    await page.goto(lab.url);
    await page.waitForFunction(() => document.querySelector("attention-lab")?.dataset.ready);
    await page.getByTestId("preset-gpt2Small").click();
    await page.waitForFunction(() => Number(document.querySelector("attention-lab").dataset.runs) >= 2, null, { timeout: 60_000 });
    const foreign = requests.filter((u) => !u.startsWith(lab.url) && !u.startsWith("data:") && !u.startsWith("blob:"));
    assert.deepEqual(foreign, []);
    await page.close();
  });
});

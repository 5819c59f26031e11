// dist/ (written by npm run build) is a static site. Served by a plain static file server
// (sirv, no headers of ours) under a sub-path, as a static host would, the page and the embed example
// load, run the book's setup, and ask for nothing outside dist/; its service worker
// (coi-serviceworker) makes the page cross-origin isolated there, so its run worker runs the core on threads.
import assert from "node:assert/strict";
import http from "node:http";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import sirv from "sirv";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { launchChromium, ROOT } from "./helpers.mjs";

const DIST = path.join(ROOT, "dist");

describe("dist/ on a plain static server", { skip: !existsSync(path.join(DIST, "index.html")) && "no dist/ (npm run build writes it)" }, () => {
  let server;
  let url;
  let context;
  let profile;
  before(async () => {
    const files = sirv(DIST, { extensions: ["html"] });
    // the site lives under /course/attention/, as on a shared static host
    server = http.createServer((req, res) => {
      if (!req.url.startsWith("/course/attention/")) {
        res.statusCode = 404;
        res.end();
        return;
      }
      req.url = req.url.slice("/course/attention".length);
      // a host page of the course's own that requires Trusted Types, with one widget whose run goes to the Worker
      if (req.url === "/tt.html") {
        res.setHeader("Content-Type", "text/html; charset=utf-8");
        res.setHeader("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; style-src 'self'; require-trusted-types-for 'script'");
        res.end('<!doctype html><html lang="en"><head><title>tt</title><script type="module" src="app/attention-lab-element.js"></script></head><body>'
          + '<attention-lab id="w" call="MultiHeadAttention(64, 64, 256, 0.0, 4)" num_tokens="256" batch="1" mode="eval" hidden="presets compare checkpoint code"></attention-lab></body></html>');
        return;
      }
      files(req, res, () => { res.statusCode = 404; res.end(); });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${server.address().port}/course/attention/`;
    profile = await mkdtemp(path.join(os.tmpdir(), "attention-lab-dist-"));
    context = await launchChromium(profile);
  });
  after(async () => {
    await context?.close();
    await new Promise((resolve) => server?.close(resolve));
    await rm(profile, { recursive: true, force: true });
  });

  test("dist/'s JavaScript is bundled and minified, its CSS minified (the pages above run on them); the vendored tokenizer is as published", () => {
    const sizes = (root, dir) => Object.fromEntries(readdirSync(path.join(root, dir)).filter((n) => /\.(m?js|css)$/.test(n)).map((n) => [n, statSync(path.join(root, dir, n)).size]));
    const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
    const app = sizes(DIST, "app");
    const lib = sizes(DIST, "lib");
    // the widget with its static imports, worker-url.js with the strings (its name is what AS_SHIPPED
    // reads), the panels loaded once idle, the other dynamic imports, the run worker (one file), the
    // classic script; web/app has ~50 modules
    assert.deepEqual(Object.keys(app).sort(), ["attention-lab-element.js", "checkpoint-code.js", "checkpoint-load.js", "export.js", "file-notice.js", "gpt2-panel.js",
      "page.css", "panels.js", "run-worker.js", "style.css", "worker-url.js"]);
    // the library's three entries (its modules in the facade's file, but the code that reads files: a
    // chunk of its own, imported on first use) and the threaded core's files, loaded by URL
    assert.deepEqual(Object.keys(lib).sort(), ["attention-lab.js", "attention-lab.node.js", "attention_core_mt.mjs", "attention_core_mt.worker.js", "checkpoint-calls.js", "head-split-worker.js", "head-split.js"]);
    for (const name of ["style.css", "page.css", "file-notice.js", "attention_core_mt.mjs"]) {
      const dir = name in app ? "app" : "lib";
      const source = statSync(path.join(ROOT, "web", dir, name)).size;
      assert.ok((app[name] ?? lib[name]) < source, `dist/${dir}/${name}: ${app[name] ?? lib[name]} bytes, web/'s ${source}`);
    }
    const web = sum(sizes(path.join(ROOT, "web"), "app")) + sum(sizes(path.join(ROOT, "web"), "lib"));
    const dist = sum(app) + sum(lib);
    assert.ok(dist < 0.7 * web, `dist's scripts and styles ${dist} bytes against web/'s ${web}`);
    const html = readFileSync(path.join(DIST, "index.html"), "utf8");
    assert.deepEqual([...html.matchAll(/rel="modulepreload" href="([^"]+)"/g)].map((m) => m[1]), ["lib/attention-lab.js", "app/worker-url.js"], "the pages preload the entry's two imports");
    const vendored = readdirSync(path.join(DIST, "vendor"), { recursive: true }).filter((f) => statSync(path.join(DIST, "vendor", f)).isFile());
    assert.ok(vendored.length > 0);
    for (const f of vendored) assert.ok(readFileSync(path.join(DIST, "vendor", f)).equals(readFileSync(path.join(ROOT, "web/vendor", f))), `dist/vendor/${f} is web/vendor's`);
  });

  for (const page of ["", "embed.html"]) {
    test(`${page || "index.html"} loads and runs from dist/`, async () => {
      const tab = await context.newPage();
      const problems = [];
      const requested = [];
      tab.on("pageerror", (e) => problems.push(e.message));
      tab.on("response", (r) => { if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`); });
      tab.on("request", (r) => { if (!r.url().startsWith(url) && !r.url().startsWith("data:") && !r.url().startsWith("blob:")) problems.push(`foreign ${r.url()}`); });
      tab.on("request", (r) => requested.push(r.url()));
      await tab.goto(url + page);
      // served without the headers, the first visit registers coi-serviceworker and reloads: wait for the
      // page it reloads to (isolated), not the one it leaves, or the next call meets a destroyed context
      await tab.waitForFunction(() => globalThis.crossOriginIsolated === true && [...document.querySelectorAll("attention-lab")].every((el) => el.dataset.ready), null, { timeout: 60_000 });
      // a compact exercise waits for the reader's Run; the others ran on load
      await tab.evaluate(() => Promise.all([...document.querySelectorAll("attention-lab")].map((el) => (el.dataset.runs >= 1 ? null : el.run()))));
      assert.equal(await tab.getByTestId("file-notice").count(), 0, "served, the page says nothing about file://");
      const summary = await tab.locator("attention-lab").first().locator("[data-stage=output] [data-testid=output-summary]").textContent();
      assert.match(summary, /\(2, 6, \d+\)/);
      assert.deepEqual(problems, []);
      // the code that reads files is fetched by the first call that reads one, and this page read none
      assert.ok(requested.some((u) => u.endsWith("/lib/attention-lab.js")), requested.join(" "));
      assert.deepEqual(requested.filter((u) => u.endsWith("/lib/checkpoint-calls.js")), []);
      await tab.close();
    });
  }

  test("without the headers, coi-serviceworker (copied into dist/) makes the page cross-origin isolated after one reload, and its run worker runs on threads", async () => {
    const tab = await context.newPage();
    const problems = [];
    tab.on("pageerror", (e) => problems.push(e.message));
    tab.on("console", (m) => { if (m.type() === "error") problems.push(m.text()); });
    await tab.goto(url);
    // the first visit registers the worker and reloads; the page it reloads to is isolated
    await tab.waitForFunction(() => globalThis.crossOriginIsolated === true && [...document.querySelectorAll("attention-lab")].every((el) => el.dataset.ready), null, { timeout: 60_000 });
    const seen = await tab.evaluate(async () => {
      const reason = document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=run-reason]");
      // the page's run worker (large runs, the whole GPT-2, generation) says what it runs on
      const w = new Worker(new URL("app/run-worker.js", location.href), { type: "module" });
      const worker = await new Promise((resolve) => w.addEventListener("message", (e) => { if (e.data.info) resolve(e.data.info); }));
      w.terminate();
      return { controlled: Boolean(navigator.serviceWorker.controller), cores: navigator.hardwareConcurrency, page: { threads: reason.dataset.threads, kernel: reason.dataset.kernel }, worker };
    });
    assert.deepEqual(seen, { controlled: true, cores: seen.cores, page: { threads: "1", kernel: "relaxed_madd" }, worker: { threads: Math.min(seen.cores, 4), kernel: "relaxed_madd" } });
    assert.deepEqual(problems, [], "no CSP violation, no script error");
    await tab.close();
  });

  test("bundled, worker-url.js is still the shipped file: under Trusted Types the widget starts its Worker through its policy attention-lab", async () => {
    const tab = await context.newPage();
    const problems = [];
    tab.on("pageerror", (e) => problems.push(e.message));
    tab.on("console", (m) => { if (m.type() === "error") problems.push(m.text()); });
    await tab.goto(`${url}tt.html`);
    await tab.waitForFunction(() => document.getElementById("w").dataset.runs === "1", null, { timeout: 120_000 });
    assert.match(await tab.locator("#w [data-stage=output] [data-testid=output-summary]").textContent(), /\(1, 256, 64\)/);
    // (the core's pthread workers too where the service worker of the test above made the page isolated)
    assert.deepEqual(tab.workers().map((w) => new URL(w.url()).pathname).filter((p) => p.includes("/app/")), ["/course/attention/app/run-worker.js"]);
    assert.deepEqual(problems, [], "no Trusted Types refusal, no script error");
    await tab.close();
  });

  for (const page of ["index.html", "embed.html"]) {
    test(`${page} opened as a file:// URL says to serve it (instead of a blank page), within the page's CSP`, async () => {
      const tab = await context.newPage();
      const problems = [];
      tab.on("pageerror", (e) => problems.push(e.message));
      tab.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) problems.push(m.text()); });
      await tab.goto(pathToFileURL(path.join(DIST, page)).href);
      const notice = tab.getByTestId("file-notice");
      await notice.waitFor();
      assert.equal(await notice.isVisible(), true);
      const text = await notice.textContent();
      assert.match(text, /has to be served, not opened as a file/);
      assert.match(text, /python3 -m http\.server 8080/);
      assert.match(text, /npx serve/);
      assert.match(text, /node scripts\/serve\.mjs/);
      const box = await notice.boundingBox();
      assert.ok(box.height > 40 && box.y < 400, `the notice is on the first screen: ${JSON.stringify(box)}`);
      assert.deepEqual(problems, [], "no CSP violation, no script error");
      await tab.close();
    });
  }
});

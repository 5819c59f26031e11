// Shared set-up for the browser suite: the static server on a free port, Debian's Chromium through
// playwright-core (never a downloaded browser) with a fresh user-data-dir, and pages that record
// every page error, console error and request to another origin so a test can fail on them.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startServer } from "../../scripts/serve.mjs";

export { installPackedTarball } from "../pack.mjs";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const SCREENSHOT_DIR = path.join(ROOT, "test-output", "screenshots");

/**
 * The browser: CHROMIUM_PATH, else Debian's chromium-headless-shell (scripts/setup.sh --browser
 * installs it: the same Chromium as the chromium package in the lighter headless mode that Playwright
 * itself uses for headless runs, about a third less CPU per page than full Chromium's headless mode),
 * else Debian's chromium.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"].find((p) => existsSync(p)) ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A headless Chromium (CHROMIUM) on a profile of its own; `options` go to launchPersistentContext. */
export function launchChromium(userDataDir, options = {}) {
  return chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, ...options });
}

/** Starts the server and a browser. Call `close()` in an `after` hook. */
export async function launchLab() {
  const server = await startServer({ port: 0 });
  const userDataDir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-chromium-"));
  let context;
  try {
    context = await launchChromium(userDataDir, { viewport: { width: 1280, height: 800 }, serviceWorkers: "block" });
  } catch (err) {
    await server.close();
    await rm(userDataDir, { recursive: true, force: true });
    throw err;
  }
  // The persistent context opens one blank page; close it so only test pages exist.
  for (const p of context.pages()) await p.close();
  return {
    url: server.url,
    context,
    userDataDir,
    async close() {
      await context.close();
      await server.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Opens the page at `query` (e.g. "?class=...") and waits until every <attention-lab> on it is ready
 * (`path` picks another page, e.g. "embed.html"; `init` is a script run before the page's own).
 * `page.problems` collects page errors, console errors and foreign requests.
 */
export async function openPage(lab, query = "", { viewport, path = "", init } = {}) {
  const page = await lab.context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  if (init) await page.addInitScript(init);
  const problems = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console error: ${msg.text().replace(/base64,[A-Za-z0-9+/=.]{40,}/g, "base64,…")}`);
  });
  page.on("request", (req) => {
    const u = req.url();
    if (!u.startsWith(lab.url) && !u.startsWith("data:") && !u.startsWith("blob:")) problems.push(`request to another origin: ${u}`);
  });
  page.on("response", (res) => {
    if (res.status() >= 400) problems.push(`HTTP ${res.status()} for ${res.url()}`);
  });
  page.problems = problems;
  await page.goto(lab.url + path.replace(/^\//, "") + query);
  // Ready, and the panels that load their code lazily (compare, checkpoint) have loaded it, unless hidden.
  await page.waitForFunction(() => {
    const labs = [...document.querySelectorAll("attention-lab")];
    const panelsIn = (el) => [...(el.shadowRoot?.querySelectorAll("[data-panel=compare], [data-panel=checkpoint]") ?? [])].every((p) => p.hidden || p.dataset.loaded);
    return labs.length > 0 && labs.every((el) => el.dataset.loadError !== undefined || (el.dataset.ready !== undefined && panelsIn(el)));
  }, null, { timeout: 60_000 });
  const loadError = await page.locator("attention-lab[data-load-error]").count();
  if (loadError) assert.fail(`the page did not load: ${await page.getByTestId("status").first().textContent()}`);
  return page;
}

/**
 * The page's own workers (the run worker), leaving out the threaded core's pthread workers
 * (attention_core_mt.worker.js: on a cross-origin isolated page each lab has threads - 1 of them,
 * mostly blocked waiting for work, so nothing can be evaluated in them).
 */
export function appWorkers(page) {
  return page.workers().filter((w) => !/\/attention_core_mt\.worker\.js$/.test(w.url()));
}

/**
 * The resident memory (bytes) of `lab`'s browser: its process and every process below it (renderers,
 * their workers' memory included), read from /proc (Linux). The browser is the process whose command
 * line names the lab's own profile directory, so other browsers on the machine are not counted.
 */
export function browserRss(lab) {
  const procs = new Map();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
      procs.set(Number(pid), { ppid, rss, ours: readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`--user-data-dir=${lab.userDataDir}`) });
    } catch {
      // a process that ended meanwhile
    }
  }
  const ours = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = procs.get(p)?.ppid ?? 0, hops++) if (procs.get(p)?.ours) return true;
    return false;
  };
  let sum = 0;
  for (const [pid, p] of procs) if (ours(pid)) sum += p.rss;
  return sum;
}

/** Fails when the page logged an error, threw, or asked another origin for anything. */
export function assertClean(page) {
  assert.deepEqual(page.problems, [], "page errors, console errors or foreign requests");
}

/** Closes the page after checking it stayed clean. */
export async function finish(page) {
  try {
    assertClean(page);
  } finally {
    await page.close();
  }
}

export async function screenshotDir() {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  return SCREENSHOT_DIR;
}

/** Types a call into the call box the way a reader pastes it (one input event). */
export async function pasteCall(page, text) {
  await page.getByTestId("call-box").fill(text);
}

/**
 * Does `action` (a click or key press that starts a run) and waits until that run has finished
 * (the widget counts finished runs in data-runs; `widget` is a CSS selector for one of several).
 */
export async function afterRun(page, action, widget = "attention-lab", timeout = 60_000) {
  const runs = () => page.evaluate((sel) => Number(document.querySelector(sel).dataset.runs ?? 0), widget);
  const before = await runs();
  await action();
  await page.waitForFunction(([sel, n]) => Number(document.querySelector(sel).dataset.runs ?? 0) > n, [widget, before], { timeout });
}


/** Clicks a preset and waits for its run to finish. */
export async function runPreset(page, key) {
  await afterRun(page, () => page.getByTestId(`preset-${key}`).click());
  await page.locator("[data-stage=output]").first().waitFor();
}

/** The text of every cell in a table row (th excluded). */
export async function rowCells(row) {
  return row.locator("td").allTextContents();
}

/** The page's URL as the page sees it (page.url() can lag behind history.replaceState). */
export async function currentUrl(page) {
  return new URL(await page.evaluate(() => location.href));
}

/**
 * Runs `body` (an ES module body that has `loadAttentionLab` and `AttentionError` from "attention-lab"
 * in scope and prints one JSON line) in a Node with relaxed SIMD, where the library's default binary is
 * the fused multiply-add one Chromium loads; returns what it printed, parsed.
 */
export function inNodeWithRelaxedSimd(body) {
  const source = `import { loadAttentionLab, AttentionError } from "attention-lab";\n${body}`;
  return JSON.parse(execFileSync(process.execPath, ["--experimental-wasm-relaxed-simd", "--input-type=module", "-e", source], { cwd: ROOT, encoding: "utf8" }));
}

/**
 * Types token ids into the checkpoint panel and runs the loaded layer; resolves to the panel's stage
 * cards once the run is on screen (waiting up to `timeout`: a waiting time, not an assertion; the
 * million-key test passes one derived from measured work).
 */
export async function runCheckpointIds(page, ids, timeout = 30_000) {
  await page.getByTestId("ckpt-kind-ids").check();
  await page.getByTestId("ckpt-ids").fill(ids);
  const runs = await page.getByTestId("checkpoint-panel").evaluate((s) => Number(s.dataset.runs ?? 0));
  await page.getByTestId("ckpt-run").click();
  await page.waitForFunction((n) => {
    const panel = document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=checkpoint-panel]");
    return Number(panel.dataset.runs ?? 0) > n;
  }, runs, { timeout });
  return page.getByTestId("ckpt-stage-cards");
}

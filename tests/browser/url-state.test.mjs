// The whole state in the URL, slot names as keys; back and forward restore it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import path from "node:path";
import { currentUrl, finish, launchLab, openPage, pasteCall, screenshotDir } from "./helpers.mjs";

/** Adds <attention-lab id=... url-state> to the page and waits until it is ready. */
async function addUrlStateWidget(page, id) {
  await page.evaluate((id) => {
    const el = document.createElement("attention-lab");
    el.id = id;
    el.setAttribute("url-state", "");
    el.setAttribute("hidden", "compare checkpoint");
    document.querySelector("main").append(el);
  }, id);
  await page.waitForFunction((id) => document.getElementById(id)?.dataset.ready, id);
  return page.locator(`#${id}`);
}

const search = (page) => page.evaluate(() => location.search);

describe("URL state", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("back and forward restore the class, the slots, the tokens and the mode", async () => {
    const page = await openPage(lab);
    const first = await currentUrl(page);
    assert.equal(first.searchParams.get("class"), "MultiHeadAttention");
    assert.equal(first.searchParams.get("d_in"), "3");
    await page.getByTestId("class-select").selectOption("CausalAttention");
    await page.getByTestId("mode-eval").check();
    await page.getByTestId("sentence").fill("one two three");
    const causal = await currentUrl(page);
    assert.equal(causal.searchParams.get("class"), "CausalAttention");
    assert.equal(causal.searchParams.get("mode"), "eval");
    assert.equal(causal.searchParams.get("tokens"), "one two three");
    assert.equal(causal.searchParams.get("num_heads"), null, "only the class's own slots");
    await page.waitForTimeout(1600); // a pause: the next edit starts a new history entry
    await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    assert.equal((await currentUrl(page)).searchParams.get("class"), "MultiHeadAttentionWrapper");

    await page.goBack();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("class") === "CausalAttention");
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("class-select").value === "CausalAttention");
    assert.equal(await page.getByTestId("call-box").inputValue(), "CausalAttention(3, 2, 6, 0.0)");
    assert.equal(await page.getByTestId("mode-eval").isChecked(), true);
    assert.equal(await page.getByTestId("sentence").inputValue(), "one two three");
    await page.goForward();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("class-select").value === "MultiHeadAttentionWrapper");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    // Back to where the page opened: the book preset's setup, re-run.
    await page.goto(first.href);
    await page.waitForFunction(() => document.querySelector("attention-lab")?.dataset.ready);
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    await finish(page);
  });

  test("a class's own slot (GroupedQueryAttention's num_kv_groups) is read from the URL and written back to it by its core name", async () => {
    const page = await openPage(lab, "?class=GroupedQueryAttention&d_in=3&d_out=4&dropout=0.0&num_heads=4&num_kv_groups=1");
    assert.equal(await page.getByTestId("slot-num_kv_groups").inputValue(), "1");
    assert.equal(await page.getByTestId("call-box").inputValue(), "GroupedQueryAttention(3, 4, 0.0, 4, 1)");
    await page.getByTestId("slot-num_kv_groups").fill("2");
    await page.waitForFunction(() => location.search.includes("num_kv_groups=2"));
    await finish(page);
  });

  test("two url-state widgets: the first keeps the URL, the second says it does not; removing the first frees it", async () => {
    const page = await openPage(lab); // index.html: one <attention-lab url-state>
    const first = page.locator("attention-lab").first();
    await first.getByTestId("class-select").selectOption("CausalAttention");
    assert.equal(new URLSearchParams(await search(page)).get("class"), "CausalAttention");

    const second = await addUrlStateWidget(page, "second");
    const notice = second.getByTestId("url-notice");
    // ready comes before the widget's stylesheet has loaded and shown it: wait for that, then look
    await notice.waitFor({ state: "visible", timeout: 10_000 });
    assert.ok(await notice.isVisible());
    assert.equal(await notice.textContent(), "Another attention-lab on this page already keeps its state in the URL; this one does not (give each widget its own url-prefix to share the URL).");
    assert.equal(await first.getByTestId("url-notice").isVisible(), false);
    // The second did not read the URL either: it starts on the default class, not the link's.
    assert.equal(await second.getByTestId("class-select").inputValue(), "MultiHeadAttention");

    // Typing in the second leaves the URL alone; typing in the first writes it.
    const before = await search(page);
    await second.getByTestId("seed").fill("77");
    await second.getByTestId("class-select").selectOption("SelfAttention_v2");
    await second.getByTestId("sentence").fill("only in the second");
    assert.equal(await search(page), before);
    await first.getByTestId("seed").fill("42");
    const after = new URLSearchParams(await search(page));
    assert.equal(after.get("seed"), "42");
    assert.equal(after.get("class"), "CausalAttention");
    assert.equal(await second.getByTestId("seed").inputValue(), "77", "the second keeps its own state");

    await notice.evaluate((n) => n.scrollIntoView({ block: "center" })); // the end of the first widget, then the second
    await page.screenshot({ path: path.join(await screenshotDir(), "url-state-two-widgets.png") });

    // The owner leaves: a widget added later keeps the URL (and reads it); the second still does not.
    await page.evaluate(() => document.querySelector("attention-lab:not([id])").remove());
    const third = await addUrlStateWidget(page, "third");
    assert.equal(await third.getByTestId("url-notice").isVisible(), false);
    assert.equal(await third.getByTestId("class-select").inputValue(), "CausalAttention");
    assert.equal(await third.getByTestId("seed").inputValue(), "42");
    await third.getByTestId("seed").fill("5");
    assert.equal(new URLSearchParams(await search(page)).get("seed"), "5");
    assert.ok(await notice.isVisible());
    await second.getByTestId("seed").fill("78");
    assert.equal(new URLSearchParams(await search(page)).get("seed"), "5");
    await finish(page);
  });

  test("a link with a bad class or batch says so and keeps the rest", async () => {
    const page = await openPage(lab, "?class=MultiheadAttention&d_in=4&batch=99&mode=sideways");
    const status = await page.getByTestId("status").textContent();
    assert.match(status, /unknown class “\u2068MultiheadAttention\u2069”/); // isolated: a link's text cannot turn the line around
    assert.match(status, /batch/);
    assert.match(status, /mode/);
    assert.equal(await page.getByTestId("slot-d_in").inputValue(), "4");
    await finish(page);
  });

  test("a link's text cut or ignored is said: tokens at 2,000 characters (never half an emoji), a slot value over 40 characters", async () => {
    const tokens = `${"a".repeat(1999)}\u{1F600}b`; // 2,002 UTF-16 units; a cut at 2,000 would split the emoji
    const q = new URLSearchParams({ tokens, d_in: "1".repeat(41), d_out: "4" });
    const page = await openPage(lab, `?${q}`);
    const status = await page.getByTestId("status").first().textContent();
    assert.match(status, /The link’s tokens were 2,002 characters long: only the first 1,999 are used\./);
    assert.match(status, /The link’s value for d_in is 41 characters long \(at most 40\) and was ignored\./);
    const kept = await page.getByTestId("sentence").inputValue();
    assert.equal(kept.length, 1999);
    assert.equal(kept, "a".repeat(1999), "no lone surrogate");
    assert.equal(await page.getByTestId("slot-d_in").inputValue(), "3", "the too long value is not cut into another number");
    assert.equal(await page.getByTestId("slot-d_out").inputValue(), "4");
    await finish(page);
  });

  test("user text in the status line is isolated: a U+202E in the link's tokens does not reverse the rest of the line", async () => {
    const page = await openPage(lab, `?${new URLSearchParams({ tokens: "one \u202Etwo three" })}`);
    await page.locator("[data-stage=output]").waitFor();
    const line = await page.getByTestId("trace-status").textContent();
    assert.ok(line.includes("“\u2068one \u202Etwo three\u2069” (seeded embeddings)"), JSON.stringify(line));
    // the call is isolated too (a comment in the call box may hold any character)
    assert.match(line, /^\u2068MultiHeadAttention\(3, 2, 6, 0\.0, 2\)\u2069 on /);
    await finish(page);
  });
  test("the host page's own keys and #anchor stay: ?lesson=3&d_out=3#part-2 keeps lesson=3 and #part-2 through edits and back/forward", async () => {
    const page = await openPage(lab, "?lesson=3&d_out=3#part-2");
    const url = () => currentUrl(page);
    assert.equal(await page.getByTestId("slot-d_out").inputValue(), "3", "the widget's key is read");
    let now = await url();
    assert.equal(now.searchParams.get("lesson"), "3");
    assert.equal(now.hash, "#part-2");
    assert.equal([...now.searchParams.keys()][0], "lesson", "the host's key keeps its place");
    await page.getByTestId("seed").fill("9");  // typing: replaces the entry
    await page.getByTestId("class-select").selectOption("CausalAttention");  // a discrete change: a new entry
    now = await url();
    assert.equal(now.searchParams.get("class"), "CausalAttention");
    assert.equal(now.searchParams.get("seed"), "9");
    assert.equal(now.searchParams.get("lesson"), "3");
    assert.equal(now.hash, "#part-2");
    await page.goBack();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("class-select").value === "MultiHeadAttention");
    now = await url();
    assert.equal(now.searchParams.get("class"), "MultiHeadAttention");
    assert.equal(now.searchParams.get("lesson"), "3");
    assert.equal(now.hash, "#part-2");
    await page.goForward();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("class-select").value === "CausalAttention");
    assert.equal((await url()).searchParams.get("lesson"), "3");
    // the host page moving its own anchor or key is not an edit of the widget: its state stays
    await page.getByTestId("slot-d_out").fill("4");
    await page.evaluate(() => { location.hash = "#part-3"; });
    await page.waitForFunction(() => location.hash === "#part-3");
    assert.equal(await page.getByTestId("slot-d_out").inputValue(), "4");
    now = await url();
    assert.equal(now.searchParams.get("d_out"), "4");
    assert.equal(now.searchParams.get("lesson"), "3");
    await finish(page);
  });

  test("url-prefix: several widgets (each with its prefix) and the host page share the URL, each reading and writing its own keys", async () => {
    const page = await openPage(lab, "?lesson=3&ex1-d_out=5&ex2-class=CausalAttention&ex2-mode=eval#part-2"); // index.html: one unprefixed url-state widget
    await page.evaluate(() => {
      for (const prefix of ["ex1-", "ex2-"]) {
        const el = document.createElement("attention-lab");
        el.id = prefix.slice(0, -1);
        el.setAttribute("url-state", "");
        el.setAttribute("url-prefix", prefix);
        el.setAttribute("hidden", "presets compare checkpoint code");
        document.querySelector("main").append(el);
      }
    });
    for (const id of ["ex1", "ex2"]) await page.locator(`#${id}[data-ready]`).waitFor();
    const main = page.locator("attention-lab:not([id])");
    const ex1 = page.locator("#ex1");
    const ex2 = page.locator("#ex2");
    for (const w of [main, ex1, ex2]) assert.equal(await w.getByTestId("url-notice").isVisible(), false, "each keeps the URL");
    assert.equal(await ex1.getByTestId("slot-d_out").inputValue(), "5");
    assert.equal(await ex2.getByTestId("class-select").inputValue(), "CausalAttention");
    assert.equal(await ex2.getByTestId("mode-eval").isChecked(), true);
    assert.equal(await main.getByTestId("slot-d_out").inputValue(), "2", "ex1-d_out is not the page widget's d_out");
    await ex1.getByTestId("seed").fill("11");
    await ex2.getByTestId("slot-d_out").fill("4");
    let q = (await currentUrl(page)).searchParams;
    assert.equal(q.get("ex1-seed"), "11");
    assert.equal(q.get("ex2-d_out"), "4");
    assert.equal(q.get("ex2-class"), "CausalAttention");
    assert.equal(q.get("seed"), "123", "the unprefixed widget's own seed");
    assert.equal(q.get("lesson"), "3");
    assert.equal((await currentUrl(page)).hash, "#part-2");
    // a discrete change in one, then back: only that widget's state moves back
    await page.waitForTimeout(1600); // a pause: the next change starts a new history entry
    await ex1.getByTestId("class-select").selectOption("SelfAttention_v2");
    q = (await currentUrl(page)).searchParams;
    assert.equal(q.get("ex1-class"), "SelfAttention_v2");
    await page.goBack();
    await page.waitForFunction(() => document.querySelector("#ex1").shadowRoot.getElementById("class-select").value === "MultiHeadAttention");
    assert.equal(await ex2.getByTestId("slot-d_out").inputValue(), "4");
    assert.equal(await ex2.getByTestId("class-select").inputValue(), "CausalAttention");
    // a second widget with an owned prefix says it does not keep the URL
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "ex1b";
      el.setAttribute("url-state", "");
      el.setAttribute("url-prefix", "ex1-");
      el.setAttribute("hidden", "presets compare checkpoint code");
      document.querySelector("main").append(el);
    });
    await page.locator("#ex1b[data-ready]").waitFor();
    assert.equal(await page.locator("#ex1b").getByTestId("url-notice").isVisible(), true);
    await finish(page);
  });
  test("a call attribute with url-state: the link's keys apply on top of the call (?seed=7, ?free-d_out=4), as they do over class-name and slot attributes", async () => {
    // embed.html has no url-state widget of its own: the two added here read the link.
    const page = await openPage(lab, "?seed=7&free-d_out=4&attrs-seed=9&lesson=2", { path: "embed.html" });
    const added = [
      ["seeded", { call: "CausalAttention(3, 2, 6, 0.5)", "url-state": "" }],
      ["free", { call: "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)", "url-state": "", "url-prefix": "free-" }],
      ["attrs", { "class-name": "CausalAttention", d_in: "3", d_out: "2", context_length: "6", dropout: "0.5", "url-state": "", "url-prefix": "attrs-" }],
    ];
    await page.evaluate((added) => {
      for (const [id, attrs] of added) {
        const el = document.createElement("attention-lab");
        el.id = id;
        for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
        el.setAttribute("hidden", "presets compare checkpoint code");
        document.querySelector("main").append(el);
      }
    }, added);
    for (const [id] of added) await page.locator(`#${id}[data-ready]`).waitFor();
    const read = (id) => page.locator(`#${id}`).evaluate((el) => ({ ...el.setup, seed: el.shadowRoot.getElementById("seed").value }));
    assert.deepEqual(await read("seeded"), {
      className: "CausalAttention", config: { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5 }, seed: "7",
    });
    assert.deepEqual(await read("free"), {
      className: "MultiHeadAttentionWrapper", config: { d_in: 3, d_out: 4, context_length: 6, dropout: 0, num_heads: 2 }, seed: "123",
    });
    // the same merge as over class-name and slot attributes
    assert.deepEqual(await read("attrs"), { className: "CausalAttention", config: { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5 }, seed: "9" });
    assert.equal(await page.locator("#free").getByTestId("call-box").inputValue(), "MultiHeadAttentionWrapper(3, 4, 6, 0.0, 2)");
    // each writes its whole setup back under its prefix; the host page's key stays
    const q = (await currentUrl(page)).searchParams;
    assert.deepEqual([q.get("class"), q.get("d_out"), q.get("dropout"), q.get("seed")], ["CausalAttention", "2", "0.5", "7"]);
    assert.deepEqual([q.get("free-class"), q.get("free-d_out"), q.get("free-num_heads")], ["MultiHeadAttentionWrapper", "4", "2"]);
    assert.equal(q.get("lesson"), "2");
    await finish(page);
  });
});

// An exercise's locks hold against every path by which a value can change: a field, the class select,
// the call box (pasted, or typed key by key), the call attribute and the other attributes set later, a
// link or back/forward (url-state, also under a url-prefix), the presets and the fix buttons. A path that
// would change a locked value keeps it and says so (the lock notice names the slot); each test checks the
// values the module actually runs with (el.run()'s config and stage shapes), not only the fields' text.
// Also: url-prefix reads only its own keys, and the predict box's example is never the answer.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { currentUrl, finish, launchLab, openPage, screenshotDir } from "./helpers.mjs";

const HIDE = "presets compare checkpoint code";

/** Adds an <attention-lab id=...> with `attrs` to the page's <main> and waits until it is ready. */
async function addWidget(page, id, attrs) {
  await page.evaluate(([id, attrs]) => {
    const el = document.createElement("attention-lab");
    el.id = id;
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    document.querySelector("main").append(el);
  }, [id, attrs]);
  await page.locator(`#${id}[data-ready]`).waitFor();
  return page.locator(`#${id}`);
}

/** el.run() of widget `id`: the class, config and output shape it ran with, and the attention weights' shape on screen. */
function runOf(page, id) {
  return page.evaluate(async (id) => {
    const el = document.getElementById(id);
    const d = await el.run();
    const weights = el.shadowRoot.querySelector("[data-stage=attn_weights] [data-testid=stage-shape] code")?.textContent ?? null;
    return { className: d.className, config: d.config, outputShape: d.outputShape, weights };
  }, id);
}

/** The lock notice's text once it shows. */
async function noticeText(widget) {
  const notice = widget.getByTestId("lock-notice");
  await notice.waitFor();
  return notice.textContent();
}

describe("an exercise's locks", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("class free, num_heads locked: a field, the class select and a call pasted after a switch all keep num_heads = 2, and the notice says why", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const widget = await addWidget(page, "free", { call: "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)", locked: "num_heads", hidden: "compare checkpoint code" });
    // the presets would set num_heads: they are off
    assert.equal(await widget.getByTestId("preset-bookToy").isDisabled(), true);
    // the locked field: typing into it changes nothing
    await widget.getByTestId("slot-num_heads").focus();
    await page.keyboard.type("4");
    assert.equal(await widget.getByTestId("slot-num_heads").inputValue(), "2");
    // choosing a class without num_heads and one with it: num_heads is still 2
    await widget.getByTestId("class-select").selectOption("SelfAttention_v2");
    await widget.getByTestId("class-select").selectOption("GroupedQueryAttention");
    assert.equal((await widget.evaluate((el) => el.setup)).config.num_heads, 2);
    await widget.getByTestId("class-select").selectOption("SelfAttention_v2");
    // a pasted call naming num_heads = 4: the class follows, num_heads stays 2, the box keeps the text
    const call = "MultiHeadAttention(3, 2, 6, 0.0, 4)";
    await widget.getByTestId("call-box").fill(call);
    assert.match(await noticeText(widget), /^num_heads stays 2: it is locked by this exercise \(the call asks for 4\)\.$/);
    assert.equal(await widget.getByTestId("class-select").inputValue(), "MultiHeadAttention");
    assert.equal(await widget.getByTestId("slot-num_heads").inputValue(), "2");
    assert.equal(await widget.getByTestId("call-box").inputValue(), call, "what the reader typed stays");
    assert.equal(await widget.getByTestId("call-box").isEditable(), true);
    assert.equal(await widget.locator("[data-name=num_heads] .named-value").textContent(), "2", "each value, named: the one the module gets");
    const ran = await runOf(page, "free");
    assert.equal(ran.className, "MultiHeadAttention");
    assert.deepEqual(ran.config, { d_in: 3, d_out: 2, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
    assert.equal(ran.weights, "(b=2, num_heads=2, query=6, key=6)", "two heads");
    const dir = await screenshotDir();
    const field = widget.locator(".field:has(#call-box)");
    await field.screenshot({ path: `${dir}/exercise-lock-notice.png` });
    await page.setViewportSize({ width: 390, height: 844 });
    await field.screenshot({ path: `${dir}/exercise-lock-notice-390.png` });
    // editing a slot writes the call from the slots again: nothing is held any more
    await widget.getByTestId("slot-d_out").fill("4");
    assert.equal(await widget.getByTestId("lock-notice").isHidden(), true);
    assert.equal(await widget.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 4, 6, 0.0, 2)");
    await finish(page);
  });

  test("a call typed key by key leaves the box editable and the slots as they were until the call is complete", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const widget = await addWidget(page, "typed", { call: "SelfAttention_v2(3, 2)", locked: "num_heads", hidden: HIDE });
    const box = widget.getByTestId("call-box");
    await box.focus();
    await page.keyboard.press("ControlOrMeta+a");
    // "MultiHeadAttention" is a whole class name, and a prefix of MultiHeadAttentionWrapper
    await box.pressSequentially("MultiHeadAttention", { delay: 0 });
    assert.equal(await box.isEditable(), true, "mid-word the box stays editable");
    assert.equal(await widget.getByTestId("class-select").inputValue(), "SelfAttention_v2", "an incomplete call changes no class");
    assert.deepEqual(await widget.evaluate((el) => el.setup.config), { d_in: 3, d_out: 2, qkv_bias: false }, "nor a slot");
    assert.match(await widget.getByTestId("call-diagnostics").textContent(), /expected '\(' after MultiHeadAttention/);
    await box.pressSequentially("Wrapper(3, 1, 6", { delay: 0 });
    assert.equal(await widget.getByTestId("slot-d_in").inputValue(), "3");
    assert.equal(await widget.getByTestId("slot-d_out").inputValue(), "2", "the last good slots, not the half-typed call's");
    assert.equal(await widget.getByTestId("class-select").inputValue(), "SelfAttention_v2");
    await box.pressSequentially(", 0.0, 2)", { delay: 0 });
    assert.equal(await widget.getByTestId("class-select").inputValue(), "MultiHeadAttentionWrapper");
    assert.equal(await box.isEditable(), true);
    assert.equal(await box.inputValue(), "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    for (const [name, value] of Object.entries({ d_in: "3", d_out: "1", context_length: "6", dropout: "0.0", num_heads: "2" })) {
      assert.equal(await widget.getByTestId(`slot-${name}`).inputValue(), value, name);
    }
    assert.equal(await widget.getByTestId("lock-notice").isHidden(), true, "the call agrees with the lock");
    const ran = await runOf(page, "typed");
    assert.deepEqual(ran.config, { d_in: 3, d_out: 1, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
    assert.deepEqual(ran.outputShape, [2, 6, 2]);
    await finish(page);
  });

  test("a later call attribute keeps the locked slots and the locked class, and says so", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const free = await addWidget(page, "call-free", { call: "MultiHeadAttention(3, 2, 6, 0.0, 2)", tokens: "Your journey starts with one step", locked: "num_heads", hidden: HIDE });
    await page.evaluate(() => document.getElementById("call-free").setAttribute("call", "MultiHeadAttention(4, 6, 6, 0.0, 3)"));
    assert.equal(await noticeText(free), "num_heads stays 2: it is locked by this exercise (the call attribute asks for 3).");
    const ran = await runOf(page, "call-free");
    assert.deepEqual(ran.config, { d_in: 4, d_out: 6, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false }, "d_in and d_out follow, num_heads holds");
    assert.equal(ran.weights, "(b=2, num_heads=2, query=6, key=6)");
    // the class locked too: a call of another class changes nothing
    const fixed = await addWidget(page, "call-fixed", { call: "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)", locked: "class d_out num_heads", hidden: HIDE });
    await page.evaluate(() => document.getElementById("call-fixed").setAttribute("call", "CausalAttention(3, 4, 6, 0.0)"));
    assert.equal(await noticeText(fixed), "The class stays MultiHeadAttentionWrapper: it is locked by this exercise (the call attribute names CausalAttention).");
    const held = await runOf(page, "call-fixed");
    assert.equal(held.className, "MultiHeadAttentionWrapper");
    assert.deepEqual(held.config, { d_in: 3, d_out: 1, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
    await finish(page);
  });

  test("later slot and class-name attributes keep the locked values, and say so", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const widget = await addWidget(page, "attrs", { call: "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)", locked: "class num_heads", hidden: HIDE });
    await page.evaluate(() => {
      const el = document.getElementById("attrs");
      el.setAttribute("d_out", "3");
      el.setAttribute("num_heads", "4");
    });
    assert.equal(await noticeText(widget), "num_heads stays 2: it is locked by this exercise (the num_heads attribute asks for 4).");
    assert.equal(await widget.getByTestId("slot-d_out").inputValue(), "3", "an open slot's attribute reaches it");
    await page.evaluate(() => document.getElementById("attrs").setAttribute("class-name", "MultiHeadAttention"));
    await page.waitForFunction(() => /The class stays/.test(document.getElementById("attrs").shadowRoot.querySelector("[data-testid=lock-notice]").textContent));
    const ran = await runOf(page, "attrs");
    assert.equal(ran.className, "MultiHeadAttentionWrapper");
    assert.deepEqual(ran.config, { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
    assert.deepEqual(ran.outputShape, [2, 6, 6], "num_heads x d_out = 2 x 3");
    await finish(page);
  });

  test("a link and back/forward naming other locked values keep them, and say so", async () => {
    const page = await openPage(lab, "?ex-num_heads=4&ex-d_out=4", { path: "embed.html" });
    const widget = await addWidget(page, "linked", { "url-state": "", "url-prefix": "ex-", call: "MultiHeadAttention(3, 2, 6, 0.0, 2)", locked: "num_heads", hidden: HIDE });
    assert.equal(await noticeText(widget), "num_heads stays 2: it is locked by this exercise (the link asks for 4).");
    const ran = await runOf(page, "linked");
    assert.deepEqual(ran.config, { d_in: 3, d_out: 4, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
    assert.equal((await currentUrl(page)).searchParams.get("ex-num_heads"), "2", "the URL now says what runs");
    await page.evaluate(() => {
      history.pushState(null, "", "?ex-class=MultiHeadAttention&ex-d_out=6&ex-num_heads=3");
      window.dispatchEvent(new PopStateEvent("popstate"));
    });
    await page.waitForFunction(() => document.getElementById("linked").shadowRoot.getElementById("slot-d_out").value === "6");
    assert.equal(await noticeText(widget), "num_heads stays 2: it is locked by this exercise (the link asks for 3).");
    assert.equal((await runOf(page, "linked")).weights, "(b=2, num_heads=2, query=6, key=6)");
    await finish(page);
  });

  test("a fix button never changes a locked slot: only the open slot's fixes are offered", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const widget = await addWidget(page, "fixes", { call: "MultiHeadAttention(3, 3, 6, 0.0, 2)", locked: "num_heads", hidden: HIDE });
    const diag = widget.locator(".diag-error[data-code=heads_divisibility]");
    await diag.waitFor();
    const offered = await diag.getByTestId("fix").evaluateAll((bs) => bs.map((b) => `${b.dataset.slot ?? "call"}=${b.dataset.value ?? b.dataset.call}`));
    assert.deepEqual(offered, ["d_out=2", "d_out=4"]);
    await diag.getByTestId("fix").first().click();
    const ran = await runOf(page, "fixes");
    assert.deepEqual(ran.config, { d_in: 3, d_out: 2, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
    await finish(page);
  });

  test("url-prefix reads only its own keys: num_ (which would read the unprefixed num_tokens) is refused with a notice", async () => {
    const page = await openPage(lab, "?num_tokens=4");
    const main = page.locator("attention-lab").first();
    assert.deepEqual((await page.evaluate(() => document.querySelector("attention-lab").run())).outputShape, [2, 4, 2], "the unprefixed widget's 4 tokens");
    const widget = await addWidget(page, "num", { "url-state": "", "url-prefix": "num_", hidden: HIDE });
    const notice = widget.getByTestId("url-notice");
    assert.equal(await notice.isVisible(), true);
    assert.equal(await notice.textContent(), "url-prefix=\"num_\" is not used: a prefix must end with a character other than a letter, a digit or _ (such as -), or its keys could be another widget's (num_ + tokens = num_tokens). Try url-prefix=\"num-\".");
    assert.deepEqual((await runOf(page, "num")).outputShape, [2, 6, 2], "the book's six tokens, not the other widget's num_tokens");
    const q = (await currentUrl(page)).searchParams;
    assert.equal(q.get("num_tokens"), "4");
    assert.equal(q.get("num_class"), null, "it writes nothing");
    // a prefix that ends in - reads its own keys only
    const dashed = await addWidget(page, "dashed", { "url-state": "", "url-prefix": "num-", hidden: HIDE });
    assert.equal(await dashed.getByTestId("url-notice").isVisible(), false);
    assert.deepEqual((await runOf(page, "dashed")).outputShape, [2, 6, 2]);
    assert.equal((await currentUrl(page)).searchParams.get("num-class"), "MultiHeadAttention");
    assert.equal(await main.getByTestId("count").inputValue(), "4");
    await finish(page);
  });

  test("the predict box's example is never the answer: (2, 6, 2) is the exercise's, so the example is another shape", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const exercise = page.locator("#exercise");
    const label = exercise.locator("label[for=prediction]");
    const ran = await runOf(page, "exercise");
    assert.deepEqual(ran.outputShape, [2, 6, 2]);
    assert.equal(await label.textContent(), "Output shape you expect (e.g. (4, 5, 8), or just the width)");
    await exercise.getByTestId("prediction").fill("two");
    assert.equal(await exercise.locator("#predict-error").textContent(), "Write a shape such as (4, 5, 8), or a single width such as 8.");
    // a setup whose answer is (2, 6, 8): the example moves off its width
    const free = await addWidget(page, "eight", { call: "MultiHeadAttention(3, 8, 6, 0.0, 2)", hidden: HIDE });
    assert.equal(await free.locator("label[for=prediction]").textContent(), "Output shape you expect (e.g. (3, 7, 6), or just the width)");
    assert.deepEqual((await runOf(page, "eight")).outputShape, [2, 6, 8]);
    await finish(page);
  });
});

// The setup panel: slots restored from the URL, the call box naming every value, the presets and
// their notes, the derived sizes, and diagnostics (with the fixes the core offers) shown beside the
// slot they name without losing what the reader typed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, currentUrl, finish, launchLab, openPage, pasteCall, runPreset, screenshotDir } from "./helpers.mjs";

const GPT2_QUERY = "?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12&seed=123";


// One Chromium for the whole file: each test opens pages of its own in it.
let lab;
before(async () => {
  lab = await launchLab();
});
after(async () => { await lab?.close(); });

describe("setup", () => {
  test("a GPT-2 small URL shows 2,360,064 parameters, output width 768 and head_dim 64", async () => {
    const page = await openPage(lab, GPT2_QUERY);
    assert.equal(await page.getByTestId("class-select").inputValue(), "MultiHeadAttention");
    for (const [name, value] of Object.entries({ d_in: "768", d_out: "768", context_length: "1024", dropout: "0", num_heads: "12" })) {
      assert.equal(await page.getByTestId(`slot-${name}`).inputValue(), value, `slot ${name}`);
    }
    assert.equal((await page.getByTestId("param-total").textContent()).trim(), "2,360,064");
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "768");
    assert.equal((await page.getByTestId("head-dim").textContent()).trim(), "64");
    const rows = await page.locator("#params-body tr").evaluateAll((trs) =>
      trs.map((tr) => [...tr.children].map((c) => c.textContent.trim())));
    assert.deepEqual(rows, [
      ["W_query.weight", "(768, 768)", "589,824"],
      ["W_key.weight", "(768, 768)", "589,824"],
      ["W_value.weight", "(768, 768)", "589,824"],
      ["out_proj.weight", "(768, 768)", "589,824"],
      ["out_proj.bias", "(768)", "768"],
    ]);
    // The call box shows the same call, Python-style.
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(768, 768, 1024, 0.0, 12)");
    // The link has no tokens and d_in is not 3: it runs on the book's sentence with seeded embeddings.
    await page.waitForFunction(() => Number(document.querySelector("attention-lab").dataset.runs ?? 0) > 0, null, { timeout: 20000 });
    assert.equal(await page.getByTestId("source-sentence").isChecked(), true);
    await finish(page);
  });

  test("pasting the exercise 3.2 call names each value and gives width num_heads x d_out", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    assert.equal(await page.getByTestId("class-select").inputValue(), "MultiHeadAttentionWrapper");
    const named = await page.getByTestId("named-values").locator("li").evaluateAll((lis) =>
      lis.map((li) => ({
        name: li.dataset.name,
        position: li.dataset.position,
        source: li.dataset.source,
        value: li.querySelector(".named-value").textContent,
        text: li.textContent,
      })));
    assert.deepEqual(named.map(({ name, position, value }) => [name, position, value]), [
      ["d_in", "1", "3"],
      ["d_out", "2", "1"],
      ["context_length", "3", "6"],
      ["dropout", "4", "0.0"],
      ["num_heads", "5", "2"],
      ["qkv_bias", "6", "False"],
    ]);
    assert.match(named[0].text, /slot 1/);
    assert.match(named[4].text, /slot 5/);
    assert.equal(named[5].source, "default");
    // The slots were filled by name from the call.
    assert.equal(await page.getByTestId("slot-d_out").inputValue(), "1");
    assert.equal(await page.getByTestId("slot-num_heads").inputValue(), "2");
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "2");
    assert.match(await page.getByTestId("output-width-rule").textContent(), /^num_heads x d_out = 2 x 1 = 2\b/);
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await finish(page);
  });

  test("d_out 3 with 2 heads is an error at the slot, blocks Run and keeps the typed values", async () => {
    const page = await openPage(lab);
    const call = "MultiHeadAttention(3, 3, 6, 0.0, 2)";
    await pasteCall(page, call);
    const diag = page.locator("[data-slot-diagnostics=d_out], [data-slot-diagnostics=num_heads]").locator(".diag.diag-error");
    assert.equal(await diag.count(), 1, "one error box beside d_out/num_heads");
    const text = await diag.locator(".diag-msg").textContent();
    assert.match(text, /\b3\b/);
    assert.match(text, /\b2\b/);
    assert.equal(await diag.getAttribute("data-code"), "heads_divisibility");
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    assert.match(await page.getByTestId("run-reason").textContent(), /error/i);
    for (const [name, value] of Object.entries({ d_in: "3", d_out: "3", context_length: "6", dropout: "0.0", num_heads: "2" })) {
      assert.equal(await page.getByTestId(`slot-${name}`).inputValue(), value, `slot ${name} keeps its value`);
    }
    assert.equal(await page.getByTestId("call-box").inputValue(), call);
    // Fixing the slot clears the error and rewrites the call box.
    await page.getByTestId("slot-num_heads").fill("3");
    assert.equal(await diag.count(), 0);
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 3, 6, 0.0, 3)");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await finish(page);
  });

  test("pasting MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2) names each value, shows width 2 with its rule, and runs to (2, 6, 2)", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    const named = await page.getByTestId("named-values").locator("li").evaluateAll((lis) =>
      lis.map((li) => [li.dataset.name, li.dataset.position, li.querySelector(".named-value").textContent, li.dataset.source]));
    assert.deepEqual(named, [
      ["d_in", "1", "3", "positional"],
      ["d_out", "2", "1", "positional"],
      ["context_length", "3", "6", "positional"],
      ["dropout", "4", "0.0", "positional"],
      ["num_heads", "5", "2", "positional"],
      ["qkv_bias", "6", "False", "default"],
    ]);
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "2");
    assert.equal(await page.getByTestId("output-width-rule").textContent(), "num_heads x d_out = 2 x 1 = 2");
    assert.equal(await page.getByTestId("batch").inputValue(), "2", "the book's two stacked copies");
    await afterRun(page, () => page.getByTestId("run").click());
    const summary = await page.locator("[data-stage=output]").getByTestId("output-summary").textContent();
    assert.match(summary, /^Output: \(2, 6, 2\) — width 2: num_heads x d_out = 2 x 1 = 2/);
    assert.match(await page.locator("[data-stage=output]").getByTestId("stage-shape").textContent(), /\(b=2, num_tokens=6, num_heads\*d_out=2\)/);
    await finish(page);
  });

  test("switching the pasted wrapper call to MultiHeadAttention(3, 1, 6, 0.0, 2) shows the divisibility error, suggests valid values and keeps everything typed", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    await page.getByTestId("class-select").selectOption("MultiHeadAttention");
    const diag = page.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    assert.equal(await diag.count(), 1);
    assert.match(await diag.locator(".diag-msg").textContent(), /d_out = 1 is not divisible by num_heads = 2 \(1 % 2 = 1\)/);
    assert.match(await diag.getByTestId("diag-pytorch").textContent(), /AssertionError: d_out must be divisible by num_heads/);
    // Valid values are suggested (as buttons that apply them).
    const fixes = await diag.getByTestId("fix").evaluateAll((bs) => bs.map((b) => `${b.dataset.slot}=${b.dataset.value}`));
    assert.ok(fixes.includes("num_heads=1"), fixes.join(" "));
    assert.ok(fixes.includes("d_out=2"), fixes.join(" "));
    assert.match(await diag.locator(".diag-hint").textContent(), /d_out = 2/);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    for (const [name, value] of Object.entries({ d_in: "3", d_out: "1", context_length: "6", dropout: "0.0", num_heads: "2" })) {
      assert.equal(await page.getByTestId(`slot-${name}`).inputValue(), value, `slot ${name} keeps its value`);
    }
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 1, 6, 0.0, 2)");
    // A render that leaves the diagnostic as it was (another seed, set from outside) keeps its nodes: the
    // fix button holding the focus, or being clicked, is still the one on the page.
    const fix = diag.locator("[data-testid=fix][data-slot=d_out][data-value='2']");
    await fix.evaluate((b) => { b.focus(); b.kept = true; });
    await page.evaluate(() => document.querySelector("attention-lab").setAttribute("seed", "7"));
    assert.equal(await page.getByTestId("seed").inputValue(), "7", "the widget rendered the new seed");
    assert.equal(await page.evaluate(() => document.querySelector("attention-lab").shadowRoot.activeElement?.kept), true, "the focused fix button survived the render");
    // A suggestion applies at once and unblocks the run.
    await fix.click();
    assert.equal(await page.getByTestId("slot-d_out").inputValue(), "2");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await finish(page);
  });

  test("GPT-2 XL with num_heads 48 says 1600 % 48 = 16 and that 48 is XL's layer count, not its head count (25)", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2XL");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(1600, 1600, 1024, 0.0, 25)");
    await page.getByTestId("slot-num_heads").fill("48");
    const diag = page.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    const text = await diag.textContent();
    assert.match(text, /1600 % 48 = 16/);
    assert.match(text, /48 is GPT-2 XL's number of layers \(n_layer\), not its head count/);
    assert.match(text, /25 heads/);
    assert.ok(await diag.locator("[data-testid=fix][data-slot=num_heads][data-value='50']").count() === 1, "a valid head count near 48 is offered");
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    await finish(page);
  });

  test("d_out typed as one head's width (MultiHeadAttention(768, 64, 1024, 0.0, 12)) is taught, and the fixes offered first lead to 768 wide outputs", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(768, 64, 1024, 0.0, 12)");
    const diag = page.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    assert.match(await diag.locator(".diag-hint").textContent(), /^In MultiHeadAttention, d_out is the width the 12 heads share .* d_out = 12 x 64 = 768, or MultiHeadAttentionWrapper\(768, 64, 1024, 0\.0, 12\), whose d_out is per head/);
    const fixes = await diag.getByTestId("fix").evaluateAll((bs) => bs.map((b) => b.dataset.call || `${b.dataset.slot}=${b.dataset.value}`));
    assert.deepEqual(fixes.slice(0, 3), ["d_out=768", "MultiHeadAttentionWrapper(768, 64, 1024, 0.0, 12)", "num_heads=2"]);  // then the head counts as before
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await diag.screenshot({ path: `${await screenshotDir()}/d-out-per-head-${width}.png` });
    }
    // The wrapper's d_out is per head: 12 heads of 64 give the 768 the reader had in mind.
    await diag.locator("[data-testid=fix][data-call^=MultiHeadAttentionWrapper]").click();
    assert.equal(await page.getByTestId("class-select").inputValue(), "MultiHeadAttentionWrapper");
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "768");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    // The same call made valid (heads 8 wide, output 64) keeps the lesson as a warning with d_out = 512 first.
    await pasteCall(page, "MultiHeadAttention(512, 64, 256, 0.0, 8)");
    const warning = page.locator(".diag-warning[data-code=d_out_per_head]");
    assert.match(await warning.textContent(), /each head is 64 \/ 8 = 8 wide, and the output is 64 wide, not 512/);
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "64");
    await warning.locator("[data-testid=fix][data-slot=d_out][data-value='512']").click();
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "512");
    assert.equal(await page.locator(".diag-warning[data-code=d_out_per_head]").count(), 0);
    await finish(page);
  });

  test("MultiHeadAttention's slot order pasted into GroupedQueryAttention is one diagnosis with its fix", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "GroupedQueryAttention(768, 768, 1024, 0.0, 12)");
    const diag = page.locator(".diag-error[data-code=mha_slot_order]");
    assert.equal(await diag.count(), 1);
    assert.match(await diag.locator(".diag-msg").textContent(), /slot 3 of GroupedQueryAttention is dropout; 1024, 0.0, 12 looks like MultiHeadAttention's order/);
    assert.match(await diag.getByTestId("diag-pytorch").textContent(), /ZeroDivisionError: float modulo/);
    // the keyword form shows the values as typed: 1024 is an int to Python, not 1024.0
    assert.equal(await page.getByTestId("keyword-call").textContent(), "GroupedQueryAttention(d_in=768, d_out=768, dropout=1024, num_heads=0.0, num_kv_groups=12)");
    // one fix, the whole corrected call (set one slot alone and the others stay wrong): it leads to a valid setup
    assert.deepEqual(await diag.getByTestId("fix").evaluateAll((bs) => bs.map((b) => b.dataset.call)), ["GroupedQueryAttention(768, 768, 0.0, 12, 4)"]);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    await diag.getByTestId("fix").click();
    assert.equal(await page.getByTestId("call-box").inputValue(), "GroupedQueryAttention(768, 768, 0.0, 12, 4)");
    assert.equal(await page.locator("[data-slot-diagnostics] .diag-error, #call-diagnostics .diag-error").count(), 0, "the setup is valid");
    assert.equal(await page.getByTestId("slot-num_kv_groups").inputValue(), "4");
    await finish(page);
  });

  test("a 'see d_in' cross-reference is not coloured like an error", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(3, 3, 6, 0.0, 2)"); // 3 % 2: the error sits on d_out or num_heads
    const pointer = page.getByTestId("see-slot").first();
    await pointer.waitFor();
    const [pointerColour, errorColour] = await page.evaluate(() => {
      const root = document.querySelector("attention-lab").shadowRoot;
      return [getComputedStyle(root.querySelector("[data-testid=see-slot]")).color, getComputedStyle(root.querySelector(".diag-error .diag-msg")).color];
    });
    assert.notEqual(pointerColour, errorColour);
    assert.notEqual(pointerColour, "rgb(179, 38, 30)"); // --error
    assert.match(await pointer.textContent(), /see (d_out|num_heads)/);
    await finish(page);
  });

  test("the GPT-2 presets say which qkv_bias they use and why, in view", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2Small");
    const note = page.getByTestId("preset-note");
    assert.equal(await note.isVisible(), true);
    assert.match(await note.textContent(), /GPT-2 small: qkv_bias=False as in the book's exercise \(2,360,064 parameters for GPT-2 small\); GPT-2 itself has q\/k\/v biases \(qkv_bias=True: 2,362,368\)/);
    assert.equal(await page.getByTestId("param-total").textContent(), "2,360,064");
    // Flip the slot: the count is GPT-2's own, as the note says.
    await page.getByTestId("slot-qkv_bias").selectOption("True");
    assert.equal(await page.getByTestId("param-total").textContent(), "2,362,368");
    // A reader's edit away from the preset: the note no longer claims to describe the setup.
    assert.equal(await note.isVisible(), false);
    await finish(page);
  });

  test("switching from the book's MultiHeadAttention to GroupedQueryAttention fills num_kv_groups, which MultiHeadAttention lacks, from the class's preset", async () => {
    const page = await openPage(lab);
    await page.getByTestId("class-select").selectOption("GroupedQueryAttention");
    assert.equal(await page.getByTestId("slot-num_kv_groups").inputValue(), "2");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await afterRun(page, () => page.getByTestId("run").click());
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    await finish(page);
  });

  test("editing slots rewrites the call and the URL, and the URL restores the view", async () => {
    const page = await openPage(lab, "?class=CausalAttention&d_in=3&d_out=2&context_length=6&dropout=0.5&seed=123");
    assert.equal(await page.getByTestId("call-box").inputValue(), "CausalAttention(3, 2, 6, 0.5)");
    await page.getByTestId("slot-qkv_bias").selectOption("True");
    await page.getByTestId("slot-d_out").fill("4");
    assert.equal(await page.getByTestId("call-box").inputValue(), "CausalAttention(3, 4, 6, 0.5, True)");
    await page.getByTestId("mode-eval").check();
    const url = await currentUrl(page);
    assert.equal(url.searchParams.get("class"), "CausalAttention");
    assert.equal(url.searchParams.get("d_out"), "4");
    assert.equal(url.searchParams.get("qkv_bias"), "True");
    assert.equal(url.searchParams.get("mode"), "eval");
    const again = await openPage(lab, url.search);
    assert.equal(await again.getByTestId("call-box").inputValue(), "CausalAttention(3, 4, 6, 0.5, True)");
    assert.equal(await again.getByTestId("mode-eval").isChecked(), true);
    await finish(again);
    await finish(page);
  });

  test("values from the URL are text, never markup", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&d_out=2&context_length=6&dropout=0&num_heads=2&tokens=%3Cb%3Ebold%3C%2Fb%3E");
    assert.equal(await page.locator("main img, main b").count(), 0);
    assert.equal(await page.getByTestId("slot-d_in").inputValue(), "<img src=x onerror=alert(1)>");
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    assert.ok((await page.locator("[data-slot-diagnostics=d_in] .diag-error").count()) >= 1, "d_in is reported");
    await finish(page);
  });
});

describe("call box", () => {
  const named = (page) => page.getByTestId("named-values").locator("li").evaluateAll((lis) =>
    lis.map((li) => `${li.dataset.name}=${li.querySelector(".named-value").textContent}/${li.dataset.source}`));

  test("accepts nn. prefixes, 0. and .0, True, trailing commas, newlines and comments", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "torch.nn.MultiHeadAttention(\n  3,  # d_in\n  4, 6, .0, 2, True,\n)  # the fused class");
    assert.equal(await page.getByTestId("class-select").inputValue(), "MultiHeadAttention");
    assert.deepEqual(await named(page), ["d_in=3/positional", "d_out=4/positional", "context_length=6/positional", "dropout=.0/positional", "num_heads=2/positional", "qkv_bias=True/positional"]);
    assert.equal(await page.getByTestId("slot-qkv_bias").inputValue(), "True");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await pasteCall(page, "nn.CausalAttention(3, 2, 6, 0.,)");
    assert.equal(await page.getByTestId("class-select").inputValue(), "CausalAttention");
    assert.equal(await page.getByTestId("slot-dropout").inputValue(), "0.");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await finish(page);
  });

  test("keyword and mixed calls fill slots by name; editing slots rewrites both forms", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(3, 2, num_heads=2, dropout=0.1, context_length=6)");
    assert.deepEqual(await named(page), ["d_in=3/positional", "d_out=2/positional", "context_length=6/keyword", "dropout=0.1/keyword", "num_heads=2/keyword", "qkv_bias=False/default"]);
    assert.equal(await page.getByTestId("slot-dropout").inputValue(), "0.1");
    await page.getByTestId("slot-d_out").fill("4");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 4, 6, 0.1, 2)");
    assert.equal(await page.getByTestId("keyword-call").textContent(), "MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.1, num_heads=2)");
    // Each slot says what its value leads to.
    assert.match(await page.getByTestId("slot-num_heads-so").textContent(), /head_dim = d_out \/ num_heads = 4 \/ 2 = 2/);
    assert.match(await page.getByTestId("slot-d_out-so").textContent(), /shared by 2 heads of head_dim 2/);
    await finish(page);
  });

  test("an unknown keyword and a missing slot are named where they are", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(3, 2, 6, 0.0, heads=2)");
    assert.ok(await page.getByTestId("call-diagnostics").locator("[data-code=unknown_slot]").count() + await page.locator("[data-slot-diagnostics] [data-code=unknown_slot]").count() >= 1);
    assert.equal(await page.locator("[data-slot-diagnostics=num_heads] [data-code=missing_slot]").count(), 1);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    await finish(page);
  });
});

describe("warnings", () => {
  const codes = (page) => page.locator("[data-slot-diagnostics] [data-testid=diagnostic]").evaluateAll((ds) => ds.map((d) => d.dataset.code));

  test("the fixes offered come from the core and never point at a locked slot", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    // The README's exercise locks its class with d_out and num_heads: no class switch can lead to an
    // error whose only fixes are locked slots.
    assert.equal(await page.locator("#exercise").getByTestId("class-select").isDisabled(), true);
    // Unlocked class, locked d_out and num_heads: as MultiHeadAttention(3, 1, 6, 0.0, 2) every fix would be a locked slot
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "classfree";
      const attrs = { "class-name": "MultiHeadAttentionWrapper", d_in: "3", d_out: "1", context_length: "6", dropout: "0.0", num_heads: "2" };
      for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
      el.setAttribute("locked", "d_out num_heads");
      el.setAttribute("hidden", "presets compare checkpoint code");
      document.body.append(el);
    });
    const exercise = page.locator("#classfree");
    await exercise.locator("[data-stage=output]").waitFor();  // started and ran
    await exercise.getByTestId("class-select").selectOption("MultiHeadAttention");
    const locked = exercise.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    await locked.waitFor();
    assert.equal(await locked.count(), 1);
    assert.equal(await locked.getByTestId("fix").count(), 0);
    // a widget that locks only num_heads is offered d_out values alone, as the core computed them
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "onlyheads";
      el.setAttribute("call", "MultiHeadAttention(768, 768, 1024, 0.0, 10)");
      el.setAttribute("locked", "num_heads");
      el.setAttribute("hidden", "presets compare checkpoint code");
      document.body.append(el);
    });
    const widget = page.locator("#onlyheads");
    const diag = widget.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    await diag.waitFor();
    const fixes = await diag.getByTestId("fix").evaluateAll((bs) => bs.map((b) => `${b.dataset.slot}=${b.dataset.value}`));
    assert.deepEqual(fixes, ["d_out=760", "d_out=770"]);
    await finish(page);
  });

  test("dropout = 1.0 is accepted as PyTorch accepts it: a warning, and in training every attention weight is zero", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(3, 2, 6, 1.0, 2)");
    const found = await codes(page);
    assert.ok(found.includes("dropout_all"), found.join(" "));
    assert.ok(!found.includes("dropout_range"), found.join(" "));
    assert.equal(await page.getByTestId("run").isEnabled(), true, "a warning does not block");
    await afterRun(page, () => page.getByTestId("run").click());
    const stage = page.locator("[data-stage=attn_weights_dropout]");
    assert.match(await stage.locator("h3").textContent(), /p = 1: every weight dropped/);
    const cells = await stage.getByTestId("grid").first().locator("tbody td").allTextContents();
    assert.ok(cells.length >= 36 && cells.every((c) => Number(c) === 0), cells.join(" "));
    await finish(page);
  });

  test("suspicious but legal setups are explained, and PyTorch's silence is said", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(3, 3, 6, 0.0, 1)");
    let found = await codes(page);
    assert.ok(found.includes("square_weights"), found.join(" "));
    assert.ok(found.includes("one_head"), found.join(" "));
    assert.match(await page.locator("[data-code=one_head]").getByTestId("diag-pytorch").textContent(), /runs without complaint/);
    assert.equal(await page.getByTestId("run").isEnabled(), true, "warnings do not block");
    await pasteCall(page, "MultiHeadAttentionWrapper(768, 768, 1024, 0.0, 12)");
    found = await codes(page);
    assert.ok(found.includes("wrapper_total_width"), found.join(" "));
    assert.match(await page.locator("[data-code=wrapper_total_width]").textContent(), /12 x 768 = 9216/);
    await pasteCall(page, "MultiHeadAttentionWrapper(1024, 1024, 1024, 0.0, 24)");
    assert.ok((await codes(page)).includes("layer_count_as_heads"));
    await pasteCall(page, "CausalAttention(3, 2, 6, 0.2)");
    await page.getByTestId("mode-eval").check();
    assert.match(await page.locator("[data-slot-diagnostics=dropout] [data-code=dropout_eval]").textContent(), /no effect in eval mode/);
    await finish(page);
  });
});

// The page's strings table (web/app/strings.js, strings-panels.js, strings-gpt2.js) as plain functions:
// sentences that count read right for one and for many, and a reason slotted into a sentence keeps one
// period.
import { test } from "node:test";
import assert from "node:assert/strict";
import { S } from "../../web/app/strings-gpt2.js";

test("layer 1's real input is 'after block 0', not 'after blocks 0 to 0'", () => {
  assert.match(S.ckptInputWhy(1), /^ln_1 of the residual stream after block 0: what layer 1’s attention really reads/);
  assert.match(S.ckptInputWhy(3), /after blocks 0 to 2: what layer 3’s attention/);
});

test("one block or one layer reads right: no 'blocks 0 to 0' or 'layers 0 to 0'", () => {
  assert.match(S.ckptRunIntro(1), /^The layer’s input is what block 0 leaves, through layer 1’s ln_1: the page runs that block first/);
  assert.match(S.ckptRunIntro(4), /what blocks 0 to 3 leave, through layer 4’s ln_1: the page runs those blocks first/);
  assert.equal(S.ckptLayerRange(0), "This file has one layer, layer 0.");
  assert.equal(S.ckptLayerRange(11), "This file has layers 0 to 11.");
  for (let n = 0; n < 4; n++) for (const text of [S.ckptRunIntro(n), S.ckptInputWhy(n), S.ckptLayerRange(n)]) assert.doesNotMatch(text, /\b0 to 0\b/);
});

test("every reason that blocks a run ends with one period inside the sentences that show it", () => {
  const reasons = Object.entries(S).filter(([key, v]) => key.startsWith("reason") && typeof v === "string");
  assert.ok(reasons.length >= 8);
  for (const [key, reason] of reasons) {
    for (const line of [S.staleBlocked(reason), S.runBlocked(reason)]) {
      assert.ok(line.endsWith(".") && !line.endsWith(".."), `${key}: ${line}`);
    }
  }
});

test("user text is isolated for the bidirectional algorithm (FSI ... PDI) where the status line shows it", () => {
  assert.equal(S.tokensSentence("a\u202Eb"), "“\u2068a\u202Eb\u2069” (seeded embeddings)");
  assert.ok(S.traceFor("X(1)", "t", "train").startsWith("\u2068X(1)\u2069 on t"));
});

test("a generation stopped early says where in a sentence with real numbers (not 'after 0 of null new tokens')", () => {
  assert.equal(S.genStoppedAt(false, 0, null), "Stopped by an error before the first new token.");  // an empty max-new-tokens field
  assert.equal(S.genStoppedAt(true, 0, 10), "Cancelled before the first new token.");
  assert.equal(S.genStoppedAt(true, 3, 10), "Cancelled after 3 of 10 new tokens: the tokens written so far stay, marked as cut short.");
  assert.equal(S.genStoppedAt(false, 1, 1), "Stopped by an error after 1 of 1 new token: the tokens written so far stay, marked as cut short.");
  assert.equal(S.genStoppedAt(false, 2, Number.NaN), "Stopped by an error after 2 new tokens: the tokens written so far stay, marked as cut short.");
});

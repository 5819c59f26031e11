// Issue 39, item 7: the page's ledger of what its run workers hold (web/app/page-memory.js), and the
// runner's use of it (web/app/runner.js, here with a stand-in Worker that records what it is sent): a
// widget out of view starts no worker; in view, its warm-up reserves its run's heap only while the
// page's reservations fit the core's budget, ending idle workers of widgets out of view first (oldest
// first); a run the reader starts is never refused; an ended worker leaves the ledger.
import { afterEach, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { PageMemory, pageMemory } from "../../web/app/page-memory.js";
import { Runner } from "../../web/app/runner.js";

const MIB = 1048576;

/** A runner as the ledger sees it: idle when it says so; dropWorker() records the call and leaves the ledger. */
function fakeRunner(ledger, name, { idle = true } = {}) {
  const r = { name, idle, dropped: 0 };
  r.dropWorker = () => {
    r.dropped += 1;
    ledger.ended(r);
  };
  return r;
}

test("reservations fit the budget: idle workers out of view end oldest first, busy or visible ones never, and a run is never refused", () => {
  const ledger = new PageMemory();
  const budget = 1000 * MIB;
  const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => fakeRunner(ledger, n));
  assert.equal(ledger.reserve(a, 400 * MIB, budget), true);
  assert.equal(ledger.reserve(b, 400 * MIB, budget), true);
  assert.equal(ledger.total, 800 * MIB);
  // a third 400 MiB is over 1000: a (the oldest, idle) ends
  assert.equal(ledger.reserve(c, 400 * MIB, budget), true);
  assert.deepEqual([a.dropped, b.dropped, c.dropped], [1, 0, 0]);
  assert.equal(ledger.heldBy(a), 0);
  assert.equal(ledger.total, 800 * MIB);
  // b and c busy (a trace, or in view): nothing can end, so d reserves nothing
  b.idle = false;
  c.idle = false;
  assert.equal(ledger.reserve(d, 400 * MIB, budget), false);
  assert.equal(ledger.heldBy(d), 0);
  assert.deepEqual([b.dropped, c.dropped], [0, 0]);
  // a run d's reader started takes its 400 MiB all the same
  ledger.took(d, 400 * MIB, budget);
  assert.equal(ledger.total, 1200 * MIB);
  assert.equal(ledger.workers, 3);
  // a worker keeps the most it took (WebAssembly memory never shrinks): a smaller run adds nothing
  ledger.took(d, 100 * MIB, budget);
  assert.equal(ledger.heldBy(d), 400 * MIB);
  // b's worker ended (its widget removed): its heap leaves the ledger, and a reservation fits again
  ledger.ended(b);
  assert.equal(ledger.total, 800 * MIB);
  assert.equal(ledger.reserve(a, 200 * MIB, budget), true);
  assert.equal(ledger.total, 1000 * MIB);
  // a reservation over the budget alone never fits
  assert.equal(new PageMemory().reserve(fakeRunner(ledger, "e"), 1001 * MIB, budget), false);
});

test("the ledger ends the oldest claim first: a claim made again moves to the end", () => {
  const ledger = new PageMemory();
  const [a, b, c] = ["a", "b", "c"].map((n) => fakeRunner(ledger, n));
  ledger.reserve(a, 300 * MIB, 700 * MIB);
  ledger.reserve(b, 300 * MIB, 700 * MIB);
  ledger.took(a, 300 * MIB, 700 * MIB);  // a ran: its claim is now the latest
  assert.equal(ledger.reserve(c, 300 * MIB, 700 * MIB), true);
  assert.deepEqual([a.dropped, b.dropped], [0, 1]);
});

// ---- the runner, with a Worker that records what it is sent ----

class FakeWorker {
  static made = [];
  constructor(url) {
    this.url = url;
    this.sent = [];
    this.listeners = {};
    this.terminated = false;
    FakeWorker.made.push(this);
  }
  postMessage(message) {
    this.sent.push(message);
  }
  addEventListener(type, f) {
    this.listeners[type] = f;
  }
  terminate() {
    this.terminated = true;
  }
  /** The worker answers `data`. */
  answer(data) {
    this.listeners.message({ data });
  }
}

const lab = await loadAttentionLab();
/** GPT-2 small's attention on 1,024 tokens, batch 2: its lazy run's estimate is what a warm-up reserves. */
const GPT2 = { className: "MultiHeadAttention", config: { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12, qkv_bias: false }, inputShape: [2, 1024, 768] };
const { bytes: RUN_BYTES, budget: BUDGET } = lab.estimateBytes(GPT2.className, GPT2.config, GPT2.inputShape, { trace: "lazy" });
const runners = [];
const runnerOf = (visible) => {
  const r = new Runner(lab, "run-worker.js");
  r.visible = visible;
  runners.push(r);
  return r;
};

beforeEach(() => {
  FakeWorker.made = [];
  globalThis.Worker = FakeWorker;
});
afterEach(() => {
  for (const r of runners.splice(0)) r.close();
  delete globalThis.Worker;
  assert.equal(pageMemory.total, 0, "every runner closed has left the page's ledger");
});

test("a runner out of view starts no worker; in view its warm-up reserves the lazy run's estimate while the page has room", () => {
  assert.ok(3 * RUN_BYTES <= BUDGET && 4 * RUN_BYTES > BUDGET, `${RUN_BYTES} bytes a run: three fit the ${BUDGET} budget`);
  const hidden = runnerOf(false);
  hidden.warm(GPT2);
  assert.equal(FakeWorker.made.length, 0, "out of view: no worker");
  assert.equal(pageMemory.total, 0);

  const seen = [0, 1, 2, 3].map(() => runnerOf(true));
  for (const r of seen) r.warm(GPT2);
  const warmups = FakeWorker.made.map((w) => w.sent[0]);
  assert.equal(warmups.length, 4);
  assert.ok(warmups.every((m) => m.warm === true && m.className === "MultiHeadAttention"));
  // three reserve (inputShape sent: the worker takes that heap); the fourth finds the budget full (the
  // other three in view: none can end) and only loads the library
  assert.deepEqual(warmups.map((m) => m.inputShape ?? null), [GPT2.inputShape, GPT2.inputShape, GPT2.inputShape, null]);
  assert.equal(pageMemory.total, 3 * RUN_BYTES);
  assert.deepEqual(seen.map((r) => pageMemory.heldBy(r)), [RUN_BYTES, RUN_BYTES, RUN_BYTES, 0]);
  // the worker says what it took
  FakeWorker.made[0].answer({ reserved: RUN_BYTES });
  assert.equal(seen[0].reserved, RUN_BYTES);

  // the first scrolled away: the next widget coming into view ends its idle worker and reserves
  seen[0].visible = false;
  const next = runnerOf(true);
  next.warm(GPT2);
  assert.equal(FakeWorker.made[0].terminated, true, "the idle worker out of view ended");
  assert.equal(seen[0].worker, null);
  assert.equal(seen[0].reserved, 0);
  assert.equal(FakeWorker.made[4].sent[0].inputShape, GPT2.inputShape);
  assert.equal(pageMemory.total, 3 * RUN_BYTES);
  // closed (the widget removed): its worker ends and leaves the ledger
  next.close();
  assert.equal(FakeWorker.made[4].terminated, true);
  assert.equal(pageMemory.total, 2 * RUN_BYTES);
});

test("Run pressed out of view: the run goes to a worker and is on the ledger, and a runner holding a trace is never ended for room", async () => {
  const r = runnerOf(false);
  const x = { shape: GPT2.inputShape, data: new Float32Array(2 * 1024 * 768) };
  const done = r.run({ className: GPT2.className, config: GPT2.config, x, seed: 123, training: false }, { bytes: 900 * MIB });
  assert.equal(FakeWorker.made.length, 1, "pressed, the run starts its worker though out of view");
  const sent = FakeWorker.made[0].sent[0];
  assert.deepEqual(sent.x.shape, GPT2.inputShape);
  assert.equal(pageMemory.heldBy(r), RUN_BYTES);
  assert.equal(r.idle, false, "a run in flight");
  FakeWorker.made[0].answer({ id: sent.id, ok: true, output: { shape: [2, 1024, 768], data: new Float32Array(0) }, trace: [], first: { queries: [], answers: [] } });
  await done;
  assert.equal(r.idle, false, "it holds the run's trace");
  // others need room: this one is kept
  const others = [0, 1, 2].map(() => runnerOf(true));
  for (const o of others) o.warm(GPT2);
  assert.equal(FakeWorker.made[0].terminated, false);
  assert.deepEqual(FakeWorker.made.slice(1).map((w) => w.sent[0].inputShape ?? null), [GPT2.inputShape, GPT2.inputShape, null]);
});

test("a runner closed (its widget removed) starts no worker: a run a timer starts later, or file work, is cancelled", async () => {
  const r = runnerOf(true);
  r.close();
  const x = { shape: GPT2.inputShape, data: new Float32Array(2 * 1024 * 768) };
  const run = r.run({ className: GPT2.className, config: GPT2.config, x, seed: 123, training: false }, { bytes: 900 * MIB });
  const request = r.request("loadCheckpoint", {});
  r.warm(GPT2);
  assert.equal(FakeWorker.made.length, 0);
  await assert.rejects(run, { code: "cancelled" });
  await assert.rejects(request, { code: "cancelled" });
  assert.equal(pageMemory.heldBy(r), 0);
  // back on the page, it runs again
  r.open();
  r.warm(GPT2);
  assert.equal(FakeWorker.made.length, 1);
});

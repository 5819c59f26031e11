// Options and messages (issue 39, item 11): every options object of the public API refuses a name it
// does not have ("unknown_option", with the nearest valid name) instead of ignoring it; each call's
// list of names (web/lib/options.js) is the names the facade reads and the names the .d.ts documents;
// counts a caller gives are whole numbers, refused by name with the value as typed (1e-40, 1.5, NaN;
// never 0.000000 or 1.500000); a too-large latent_dim is named latent_dim; a module outlives the
// dispose() of the generator it was made with.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { createHeadSplit } from "attention-lab/head-split";
import { OPTION_NAMES, nearestName } from "../../web/lib/options.js";
import { gpt2File } from "../gpt2-files.mjs";
import { sameBits, stackTwo } from "./helpers.mjs";

const root = new URL("../../", import.meta.url);
const read = (file) => readFileSync(new URL(file, root), "utf8");
const lab = await loadAttentionLab();
const MHA = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
const x = stackTwo(lab.bookTokens());  // (2, 6, 3)
const spec = JSON.parse(read("tests/fixtures/gpt2/generate.json")).files.find((f) => f.name === "tiny_f32");
const file = gpt2File(lab, spec);  // GPT-2's layout at width 8, 2 heads, 2 layers
const model = await lab.loadGPT2(file, { num_heads: spec.n_head });

/**
 * {code, slot, message, hint} of what `call` refuses: a throw, a rejection, or (lab.check, which
 * never throws) its first error diagnostic; null when it does not refuse.
 */
async function refusal(call) {
  try {
    const r = await call();
    const d = Array.isArray(r) ? r.find((x) => x.severity === "error") : undefined;
    return d ? { code: d.code, slot: d.slots[0] ?? "", message: d.message, hint: d.hint } : null;
  } catch (e) {
    assert.ok(e instanceof AttentionError, String(e));
    return { code: e.code, slot: e.slot, message: e.message, hint: e.hint };
  }
}

test("a misspelt option is refused with the nearest name, never ignored: generate({tempreature: 1.5}) once ran greedy", async () => {
  const typo = await refusal(() => model.generate([15496, 11], { maxNewTokens: 2, tempreature: 1.5 }));
  assert.deepEqual(typo, {
    code: "unknown_option",
    slot: "tempreature",
    message: 'model.generate has no option "tempreature": did you mean temperature?',
    hint: "Rename it to temperature. The options of model.generate are maxNewTokens, temperature, topK, eosId, generator, cache, resident, window, attention, onToken, signal.",
  });
  // Python's spelling finds the JS one; a name near none lists the options without a guess
  assert.match((await refusal(() => model.generate([1], { max_new_tokens: 2 }))).message, /"max_new_tokens": did you mean maxNewTokens\?$/);
  const far = await refusal(() => lab.run("MultiHeadAttention", MHA, x, { colour: "red" }));
  assert.deepEqual([far.code, far.slot, far.message, far.hint], ["unknown_option", "colour", 'lab.run has no option "colour"', "The options of lab.run are seed, training, trace."]);
  // the nearest-name rule is the core's did_you_mean: case aside, within max(2, a third of the length)
  assert.equal(nearestName("TRAINING", ["training"]), "training");
  assert.equal(nearestName("numHeads", ["num_heads", "layer"]), "num_heads");
  assert.equal(nearestName("xyz", ["training"]), "");
});

test("every options object of the API refuses each of its names misspelt, naming the name meant", async () => {
  const module = lab.create("MultiHeadAttention", MHA);
  const other = lab.create("MultiHeadAttention", MHA);
  const lazy = lab.run("MultiHeadAttention", MHA, x, { trace: "lazy" }).trace;
  const split = createHeadSplit({ workers: 0 });
  const CALLS = {
    loadAttentionLab: (o) => loadAttentionLab(o),
    "lab.check": (o) => lab.check("MultiHeadAttention", MHA, o),
    "lab.setup": (o) => lab.setup("MultiHeadAttention", MHA, o),
    "lab.run": (o) => lab.run("MultiHeadAttention", MHA, x, o),
    "lab.create": (o) => lab.create("MultiHeadAttention", MHA, o),
    "lab.fromParameters": (o) => lab.fromParameters("MultiHeadAttention", MHA, module.parameters(), o),
    "lab.copyWeights": (o) => lab.copyWeights(module, other, {}, o),
    "lab.convert": (o) => lab.convert(module, o),
    "lab.estimateBytes": (o) => lab.estimateBytes("MultiHeadAttention", MHA, [2, 6, 3], o),
    "lab.reserveMemory": (o) => lab.reserveMemory("MultiHeadAttention", MHA, [2, 6, 3], o),
    "lab.loadCheckpoint": (o) => lab.loadCheckpoint(file, o),
    "lab.checkpointInput": (o) => lab.checkpointInput(file, o),
    "lab.loadGPT2": (o) => lab.loadGPT2(file, o),
    "module.forward": (o) => module.forward(x, o),
    "module.headShares": (o) => module.headShares(2, o),
    "module.forwardShare": (o) => module.forwardShare(x, { first: 0, count: 1 }, o),
    "module.projectHeads": (o) => module.projectHeads(x, [], o),
    "module.newCache": (o) => module.newCache(o),
    "trace.heatmap": (o) => lazy.heatmap("attn_weights", o),
    "trace.slice": (o) => lazy.slice("attn_weights", o),
    "model.estimateBytes": (o) => model.estimateBytes(4, o),
    "model.run": (o) => model.run([1, 2], o),
    "model.attentionInput": (o) => model.attentionInput([1, 2], 0, o),
    "model.generate": (o) => model.generate([1, 2], { maxNewTokens: 1, ...o }),
    createHeadSplit: (o) => createHeadSplit(o),
    "split.forward": (o) => split.forward(module, x, o),
    "copy plan entry": (o) => lab.copyCode("SelfAttention_v2", "SelfAttention_v1", { W_query: { copy: true, ...o } }),
  };
  const NAMED = { "copy plan entry": "the copy plan entry W_query" };  // how a message names the object
  assert.deepEqual(Object.keys(CALLS).sort(), Object.keys(OPTION_NAMES).sort(), "a call for every options object");
  let checked = 0;
  for (const [where, names] of Object.entries(OPTION_NAMES)) {
    for (const name of names) {
      const typo = name + name.at(-1);  // "training" -> "trainingg"
      const r = await refusal(() => CALLS[where]({ [typo]: 1 }));
      assert.deepEqual([r?.code, r?.slot, r?.message], ["unknown_option", typo, `${NAMED[where] ?? where} has no option "${typo}": did you mean ${name}?`], `${where} ${typo}`);
      checked++;
    }
  }
  assert.equal(checked, 64);  // every option name of the API
  // a name the call has is not refused: the valid spelling still works
  assert.deepEqual(module.forward(x, { training: false }).output.shape, [2, 6, 2]);
  split.dispose();
});

/** The names each facade call reads from its options: `const { a = 1, b: c } = readOptions(options, "where")`. */
function namesRead() {
  const out = {};
  // every module of the library (the core's glue, attention_core*, is Emscripten's)
  const modules = readdirSync(new URL("web/lib/", root)).filter((name) => name.endsWith(".js") && !name.startsWith("attention_core"));
  for (const source of modules.map((name) => read(`web/lib/${name}`))) {
    const splitMethods = [...source.matchAll(/this\.#split\("(\w+)", options/g)].map((m) => `module.${m[1]}`);
    for (const m of source.matchAll(/const \{([^}]*)\} = (?:object \? )?readOptions\(\w+, (?:"([^"]+)"|`module\.\$\{method\}`)[,)]/g)) {
      const names = m[1].split(",").map((s) => s.trim()).filter((s) => !s.startsWith("[")).map((s) => s.split(/[:=]/)[0].trim());
      for (const where of m[2] ? [m[2]] : splitMethods) {
        assert.ok(!(where in out), `${where} is read once`);
        out[where] = names;
      }
    }
  }
  return out;
}

/** The body of `export interface name {` ... its closing `}` in a .d.ts. */
function interfaceBody(dts, name) {
  const start = dts.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `interface ${name}`);
  return dts.slice(start, dts.indexOf("\n}\n", start));
}

/** The option names a .d.ts type text allows: an inline {a?: T; ...}, a named interface, A & B, Pick<A, "a" | "b">. */
function namesOfType(dts, type) {
  const names = new Set();
  const pick = type.match(/^Pick<(\w+), ((?:"\w+"(?: \| )?)+)>$/);
  if (pick) return new Set([...pick[2].matchAll(/"(\w+)"/g)].map((m) => m[1]));
  for (const part of type.split(" & ")) {
    if (part.startsWith("{")) for (const m of part.matchAll(/[{;]\s*(\w+)\??:/g)) names.add(m[1]);
    else for (const m of interfaceBody(dts, part.trim()).matchAll(/^ {2}(?:readonly )?(\w+)\??:/gm)) names.add(m[1]);
  }
  return names;
}

/** The option names of `method`'s options parameter (every overload) in interface `owner` (null: an exported function). */
function documentedNames(dts, owner, method) {
  const body = owner === null ? dts : interfaceBody(dts, owner);
  const signature = owner === null ? new RegExp(`^export function ${method}\\(.*$`, "gm") : new RegExp(`^ {2}${method}(?:<[^(]*>)?\\(.*$`, "gm");
  const names = new Set();
  for (const [line] of body.matchAll(signature)) {
    const at = line.search(/\boptions\??: /);
    assert.ok(at >= 0, `${owner}.${method} takes options: ${line}`);
    let depth = 0;
    let end = line.indexOf(": ", at) + 2;
    for (let i = end; i < line.length; i++, end = i) {
      if ("{<(".includes(line[i])) depth++;
      else if ("}>)".includes(line[i])) {
        if (depth === 0) break;
        depth--;
      }
    }
    for (const n of namesOfType(dts, line.slice(line.indexOf(": ", at) + 2, end).trim())) names.add(n);
  }
  assert.ok(names.size > 0, `${owner}.${method}: no signature found`);
  return [...names];
}

test("each call's option names are one list: the names the facade reads and the names the .d.ts documents", () => {
  const dts = read("web/lib/attention-lab.d.ts");
  const splitDts = read("web/lib/head-split.d.ts");
  const OWNERS = { lab: "AttentionLab", module: "AttentionModule", trace: "LazyTrace", model: "GPT2Model", split: "HeadSplit" };
  const reads = namesRead();
  assert.deepEqual(Object.keys(reads).sort(), Object.keys(OPTION_NAMES).sort(), "the facade reads through readOptions for every options object");
  for (const [where, names] of Object.entries(OPTION_NAMES)) {
    assert.deepEqual([...reads[where]].sort(), [...names].sort(), `${where}: the facade reads these`);
    const [object, method] = where.includes(".") ? where.split(".") : [null, where];
    const documented =
      where === "copy plan entry" ? [...namesOfType(dts, "CopyPlanEntry")]
      : documentedNames(where.startsWith("split") || where === "createHeadSplit" ? splitDts : dts, object === null ? null : OWNERS[object], method);
    assert.deepEqual(documented.sort(), [...names].sort(), `${where}: the .d.ts documents these`);
  }
});

test("counts and indices are whole numbers, refused by name with the value as typed: seededTokens(1.5), estimateBytes(NaN), batch NaN", async () => {
  const tokens = await refusal(() => lab.seededTokens(1.5, 3, 123));
  assert.deepEqual([tokens.code, tokens.slot, tokens.message], ["tensor_shape", "num_tokens", "num_tokens must be a whole number from 1, got 1.5"]);
  assert.match(tokens.hint, /e\.g\. seededTokens\(6, 3, 123\)/);
  assert.equal((await refusal(() => lab.seededTokens(6, NaN, 123))).message, "d_in must be a whole number from 1, got NaN");
  // sentenceTokens once truncated a width of 1.5 to 1
  assert.deepEqual(Object.values(await refusal(() => lab.sentenceTokens(["Your", "journey"], 1.5, 123))).slice(0, 3), ["tensor_shape", "d_in", "d_in must be a whole number from 1, got 1.5"]);
  // model.estimateBytes(NaN) once estimated one token
  const estimate = await refusal(() => model.estimateBytes(NaN));
  assert.deepEqual([estimate.code, estimate.slot, estimate.message], ["run_option", "num_tokens", "num_tokens must be a whole number from 1 to 1024, got NaN"]);
  assert.match(estimate.hint, /1 to n_ctx \(1024/);
  assert.equal((await refusal(() => model.estimateBytes(2.5))).message, "num_tokens must be a whole number from 1 to 1024, got 2.5");
  assert.ok(model.estimateBytes(4) > 0);
  // a lazy trace's heatmap: "batch nan is outside axis 0" became a sentence naming the option
  const lazy = lab.run("MultiHeadAttention", MHA, x, { trace: "lazy" }).trace;
  assert.deepEqual(Object.values(await refusal(() => lazy.heatmap("attn_weights", { batch: NaN }))).slice(0, 3), ["trace_range", "batch", "batch must be a whole number from 0 to 1, got NaN"]);
  assert.deepEqual(Object.values(await refusal(() => lazy.heatmap("attn_weights", { head: 0.5 }))).slice(0, 3), ["trace_range", "head", "head must be a whole number from 0 to 1, got 0.5"]);
  assert.deepEqual(Object.values(await refusal(() => lazy.heatmap("attn_weights", { width: NaN }))).slice(0, 3), ["trace_range", "width", "width must be a whole number from 1 to 4096, got NaN"]);
  assert.deepEqual(Object.values(await refusal(() => lazy.slice("attn_weights", { offsets: [0, 0, 0, 0], sizes: [1, 1, 6, 1.5] }))).slice(0, 3), ["trace_range", "sizes", "sizes[3] must be a whole number, got 1.5"]);
  lazy.dispose();
  // generate's whole-number options, and a generator's dropout probability
  assert.equal((await refusal(() => model.generate([1], { maxNewTokens: 2.5 }))).message, "maxNewTokens must be a whole number from 1, got 2.5");
  assert.equal((await refusal(() => lab.manualSeed(1).dropout(x, 1.5))).message, "dropout probability must be in [0, 1], got 1.5");
});

test("a temperature of 1e-40 is named as typed (once 'temperature 0.000000') with why the probabilities are not finite", async () => {
  const r = await refusal(() => model.generate([15496, 11], { maxNewTokens: 2, temperature: 1e-40 }));
  assert.deepEqual([r.code, r.slot], ["non_finite_probabilities", "temperature"]);
  assert.equal(r.message, "the probabilities are not finite at temperature 1e-40: logits / temperature overflow float32 (past ~3.4e38)");
  assert.match(r.hint, /temperature 0 for the most likely token \(greedy\)/);
});

test("parameters over the budget name the slot that makes them so: latent_dim = 10**9 is latent_dim's error, not d_in's", async () => {
  const mla = { d_in: 3, d_out: 4, dropout: 0.0, num_heads: 2, latent_dim: 1e9 };
  const d = lab.check("MultiHeadLatentAttention", mla).find((x) => x.code === "too_large");
  assert.deepEqual(d.slots, ["latent_dim"]);
  assert.match(d.hint, /^Use a smaller latent_dim: its parameters alone are over the budget/);
  const created = await refusal(() => lab.create("MultiHeadLatentAttention", mla));
  assert.deepEqual([created.code, created.slot], ["too_large", "latent_dim"]);
  // the wrapper's thousand heads are num_heads' error; two huge widths are both named
  assert.deepEqual(lab.check("MultiHeadAttentionWrapper", { ...MHA, d_in: 768, d_out: 768, num_heads: 1000 }).find((x) => x.code === "too_large").slots, ["num_heads"]);
  assert.deepEqual(lab.check("MultiHeadAttention", { ...MHA, d_in: 100000, d_out: 100000, num_heads: 10 }).find((x) => x.code === "too_large").slots, ["d_in", "d_out"]);
});

test("a module keeps drawing its dropout masks after the generator it was made with is disposed (once: every training forward threw 'disposed')", () => {
  const config = { ...MHA, dropout: 0.5 };
  const disposed = lab.manualSeed(123);
  const kept = lab.manualSeed(123);
  const a = lab.create("MultiHeadAttention", config, { generator: disposed });
  const b = lab.create("MultiHeadAttention", config, { generator: kept });
  disposed.dispose();
  const runs = [0, 1].map(() => [a.forward(x).output.data, b.forward(x).output.data]);
  for (const [i, [mine, twin]] of runs.entries()) assert.ok(sameBits(mine, twin), `run ${i}: the same masks as its twin's`);
  assert.ok(!sameBits(runs[0][0], runs[1][0]), "the stream goes on: the second masks are new ones");
  // a disposed generator passed to forward is still refused by name
  assert.throws(() => a.forward(x, { generator: disposed }), (e) => e.code === "disposed" && e.slot === "generator");
  // fromParameters and convert make modules with a fresh generator of their own: they draw too
  const copy = lab.fromParameters("MultiHeadAttention", config, a.parameters());
  assert.deepEqual(copy.forward(x).output.shape, [2, 6, 2]);
});

// The one stage table (core/src/stage_table.cpp) and the StageId and StageDisplay unions that
// scripts/stage-ids.mjs writes from it into web/lib/attention-lab.d.ts: the unions are the table (same
// ids in the same order, each display kind with its meaning), `--check` passes and notices drift, the
// table is read strictly, and every stage a forward of every class hands back carries an id of the
// union, in its order, with the table's display kind. The core's side (each row's presence, size and
// display against what a forward emits) is tests/native/stage_table_test.cpp.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";
import { BEGIN, END, parseTable, readTable, renderUnions, rewrite } from "../../scripts/stage-ids.mjs";

const root = new URL("../../", import.meta.url);
const read = (file) => readFileSync(new URL(file, root), "utf8");
const SOURCE = read("core/src/stage_table.cpp");
const DTS = read("web/lib/attention-lab.d.ts");
const table = readTable();
const lab = await loadAttentionLab();

/** The members of `export type <name> =` in the generated block: [{member, doc}]. */
function unionOfDts(dts, name) {
  const block = dts.slice(dts.indexOf(BEGIN), dts.indexOf(END));
  assert.ok(block.length > 0, "the .d.ts has the generated block's markers");
  const body = block.slice(block.indexOf(`export type ${name} =`)).split("\n").slice(1);
  const members = [];
  let doc = null;
  for (const line of body) {
    let m;
    if ((m = line.match(/^ {2}\/\*\* (.+) \*\/$/))) doc = m[1];
    else if ((m = line.match(/^ {2}\| "([a-z0-9_]+)"(;?)$/))) {
      members.push({ member: m[1], doc });
      if (m[2]) break;
    } else assert.fail(`unexpected line in the ${name} union: ${line}`);
  }
  return members;
}

test("the .d.ts StageId union is the table: the same ids in trace order, each saying when it is emitted and how it is shown", () => {
  const union = unionOfDts(DTS, "StageId");
  assert.deepEqual(union.map((u) => u.member), table.stages.map((s) => s.id));
  assert.deepEqual(union.slice(0, 2).map((u) => u.member), ["input", "queries"]);
  assert.equal(union.at(-1).member, "output");
  const byId = new Map(union.map((u) => [u.member, u.doc]));
  assert.equal(byId.get("attn_weights_dropout"), 'Emitted by a forward of a class with dropout on the attention weights; shown as "weights".');
  assert.match(byId.get("cache_c_kv"), /^Emitted by a cached step of a latent class/);
  const displays = unionOfDts(DTS, "StageDisplay");
  assert.deepEqual(displays.map((d) => d.member), ["vectors", "scores", "weights", "mask"]);
  assert.deepEqual(displays.map((d) => d.doc), table.displays.map((d) => d.meaning));
});

test("node scripts/stage-ids.mjs --check passes on the tree, and the generator notices drift", () => {
  const out = execFileSync(process.execPath, [new URL("scripts/stage-ids.mjs", root).pathname, "--check"], { encoding: "utf8" });
  assert.match(out, new RegExp(`lists the ${table.stages.length} stages`));
  assert.equal(rewrite(DTS, renderUnions(table)), DTS);
  const fewer = { ...table, stages: table.stages.filter((s) => s.id !== "proj") };
  assert.notEqual(rewrite(DTS, renderUnions(fewer)), DTS);
  const added = { ...table, stages: [...table.stages.slice(0, -1), { id: "gate", when: "every forward", display: "vectors" }, table.stages.at(-1)] };
  assert.match(rewrite(DTS, renderUnions(added)), /\| "gate"\n/);
  const reshown = { ...table, stages: table.stages.map((s) => (s.id === "mask" ? { ...s, display: "scores" } : s)) };
  assert.notEqual(rewrite(DTS, renderUnions(reshown)), DTS);
  assert.throws(() => rewrite(DTS.replace(BEGIN, ""), renderUnions(table)), /markers|once each/);
});

test("the generator reads the table strictly", () => {
  const row = '    {StageId::Mask, "mask", When::Masked, ';
  assert.ok(SOURCE.includes(row));
  const bad = (from, to) => SOURCE.replace(from, to);
  assert.throws(() => parseTable(bad(row, '    {StageId::Mask, "input", When::Masked, ')), /'input' twice/);
  assert.throws(() => parseTable(bad(row, '    {StageId::Mask, "mask", When::Sometimes, ')), /When::Sometimes/);
  assert.throws(() => parseTable(bad('"mask", texts(kMaskTexts)', '"heat", texts(kMaskTexts)')), /display 'heat'/);
  assert.throws(() => parseTable(bad(row, '    { StageId::Mask, "mask", When::Masked, ')), /not a kStages row/);
  assert.throws(() => parseTable(bad("  Masked,        // a forward", "  Masked,\n  Other,        // a forward")), /enum When/);
  assert.deepEqual(parseTable(SOURCE), table);
});

test("every stage a traced run of every class hands back has an id of the union, in its order, and the table's display kind; a lazy trace's too", () => {
  const order = table.stages.map((s) => s.id);
  const display = new Map(table.stages.map((s) => [s.id, s.display]));
  const seen = new Set();
  for (const className of lab.classes) {
    const facts = lab.describe(className).class;
    const values = { d_in: 6, d_out: 6, context_length: 8, dropout: 0.25, num_heads: 2, num_kv_groups: 1, qkv_bias: true, latent_dim: 3 };
    const config = Object.fromEntries(facts.slots.filter((s) => s.name in values).map((s) => [s.name, values[s.name]]));
    if (!lab.describe(className, config).ok) config.num_heads = 3;  // RoPE rotates halves: an even head_dim, 6 / 3
    const x = lab.seededTokens(5, 6, 1);
    const input = { shape: lab.inputShape(className, 5, 6, 1), data: x.data };
    for (const trace of [true, "lazy"]) {
      const r = lab.run(className, config, input, { trace });
      const stages = trace === "lazy" ? r.trace.stages : r.trace;
      const ids = stages.map((s) => s.id);
      assert.deepEqual(ids, order.filter((id) => ids.includes(id)), `${className}: in the table's order`);
      for (const s of stages) {
        assert.ok(display.has(s.id), `${className}: ${s.id} is in the union`);
        assert.equal(s.display, display.get(s.id), `${className}: ${s.id}'s display`);
        seen.add(s.id);
      }
      if (trace === "lazy") r.trace.dispose();
    }
  }
  for (const id of ["input", "c_kv", "mask", "attn_weights_dropout", "heads_concat", "proj", "output"]) assert.ok(seen.has(id), id);
  for (const id of ["cos", "sin", "queries_rope", "keys_rope"]) assert.ok(seen.has(id), id);
});

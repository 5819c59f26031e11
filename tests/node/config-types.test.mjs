// The class and slot types of web/lib/attention-lab.d.ts, which scripts/config-types.mjs writes from
// the core's class recipes (read through the built core): the committed block is what the core gives
// now (`--check` passes and notices drift), and, read back from the .d.ts, every class has its config
// interface with its slots, required exactly when the core gives no default, each of its slot type's
// TypeScript type; ClassName and SlotName are the core's classes and slots.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";
import { BEGIN, END, VALUE_TYPES, readClasses, renderTypes, rewrite } from "../../scripts/config-types.mjs";

const root = new URL("../../", import.meta.url);
const DTS = readFileSync(new URL("web/lib/attention-lab.d.ts", root), "utf8");
const lab = await loadAttentionLab();
const classes = readClasses(lab);
const block = DTS.slice(DTS.indexOf(BEGIN), DTS.indexOf(END) + END.length);

/** One config interface read back from the .d.ts: [{name, optional, type, doc}] in order. */
function interfaceOf(className) {
  const open = `export interface ${className.replace(/\W/g, "_")}Config {\n`;  // a Name@folder id: '_' for '@' and '/'
  const start = block.indexOf(open);
  assert.ok(start >= 0, `${className}Config is in the generated block`);
  const body = block.slice(start + open.length, block.indexOf("\n}", start));
  const members = [];
  let doc = null;
  for (const line of body.split("\n")) {
    let m;
    if ((m = line.match(/^ {2}\/\*\* (.+) \*\/$/))) doc = m[1];
    else if ((m = line.match(/^ {2}([a-z_]+)(\??): (\w+);$/))) {
      members.push({ name: m[1], optional: m[2] === "?", type: m[3], doc });
      doc = null;
    } else assert.fail(`unexpected line in ${className}Config: ${line}`);
  }
  return members;
}

test("the .d.ts has the block the built core gives now, and `node scripts/config-types.mjs --check` says so", () => {
  assert.ok(DTS.indexOf(BEGIN) >= 0 && DTS.indexOf(END) > DTS.indexOf(BEGIN), "both markers, in order");
  assert.equal(rewrite(DTS, renderTypes(classes)), DTS);
  const out = execFileSync(process.execPath, [new URL("scripts/config-types.mjs", root).pathname, "--check"], { encoding: "utf8" });
  assert.match(out, new RegExp(`the core's ${lab.classes.length} classes`));
});

test("every class has its config interface: the core's slots in order, required exactly when there is no default, typed by slot type", () => {
  assert.ok(classes.length >= 15, `${classes.length} classes`);
  for (const c of classes) {
    const members = interfaceOf(c.name);
    assert.deepEqual(members.map((m) => m.name), c.slots.map((s) => s.name), c.name);
    c.slots.forEach((s, i) => {
      assert.equal(members[i].optional, s.default !== undefined, `${c.name}.${s.name} optional`);
      assert.equal(members[i].type, VALUE_TYPES[s.type], `${c.name}.${s.name} type`);
      assert.ok(members[i].doc.startsWith(`Slot ${s.position} (${s.type}, `) && members[i].doc.includes(s.doc.replace(/\.$/, "")), `${c.name}.${s.name} doc`);
    });
  }
  // the book's MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)
  assert.deepEqual(interfaceOf("MultiHeadAttention").map((m) => `${m.name}${m.optional ? "?" : ""}: ${m.type}`), [
    "d_in: IntSlotValue", "d_out: IntSlotValue", "context_length: IntSlotValue", "dropout: FloatSlotValue", "num_heads: IntSlotValue", "qkv_bias?: BoolSlotValue",
  ]);
  assert.match(block, /`MultiHeadAttention\(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False\)`/);
  assert.match(block, /`GroupedQueryAttention\(d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False\)`/);
  const latent = interfaceOf("MultiHeadLatentAttention").find((m) => m.name === "latent_dim");
  assert.deepEqual([latent.optional, latent.type], [true, "OptionalIntSlotValue"]);
  const dtype = interfaceOf("GroupedQueryAttention").find((m) => m.name === "dtype");
  assert.deepEqual([dtype.optional, dtype.type], [true, "DtypeSlotValue"]);
});

test("ClassName is the core's classes in order, SlotName every slot name, ClassConfigs maps each class to its interface", () => {
  const union = block.slice(block.indexOf("export type ClassName ="), block.indexOf(";\n", block.indexOf("export type ClassName =")));
  assert.deepEqual([...union.matchAll(/^ {2}\| "([\w@/]+)"/gm)].map((m) => m[1]), lab.classes);
  const slotNames = new Set(classes.flatMap((c) => c.slots.map((s) => s.name)));
  const slotUnion = block.match(/^export type SlotName = (.+);$/m)[1];
  assert.deepEqual(new Set([...slotUnion.matchAll(/"(\w+)"/g)].map((m) => m[1])), slotNames);
  const map = block.slice(block.indexOf("export interface ClassConfigs {"));
  for (const name of lab.classes) {
    const key = /^\w+$/.test(name) ? name : JSON.stringify(name);  // a Name@folder id is a quoted key
    assert.ok(map.includes(`\n  ${key}: ${name.replace(/\W/g, "_")}Config;\n`), name);
  }
  // Llama 2's MultiHeadAttention: its Python signature, its id's interface
  assert.match(block, /`MultiHeadAttention\(d_in, d_out, context_length, num_heads, dtype=None\)`/);
  assert.match(block, /^ {2}"MultiHeadAttention@ch05\/07_gpt_to_llama": MultiHeadAttention_ch05_07_gpt_to_llamaConfig;$/m);
});

test("the generator notices drift and refuses what it cannot type", () => {
  const mha = classes.find((c) => c.name === "MultiHeadAttention");
  const withoutHeads = classes.map((c) => (c === mha ? { ...c, slots: c.slots.filter((s) => s.name !== "num_heads") } : c));
  assert.notEqual(rewrite(DTS, renderTypes(withoutHeads)), DTS);
  const defaulted = classes.map((c) => (c === mha ? { ...c, slots: c.slots.map((s) => (s.name === "dropout" ? { ...s, default: 0 } : s)) } : c));
  assert.match(renderTypes(defaulted), /Slot 4 \(float, default 0\.0\): [^\n]*\n {2}dropout\?: FloatSlotValue;/);
  const complex = classes.map((c) => (c === mha ? { ...c, slots: [...c.slots, { ...c.slots[0], name: "scale", type: "complex" }] } : c));
  assert.throws(() => renderTypes(complex), /MultiHeadAttention\.scale: slot type "complex" has no TypeScript type/);
  const badDoc = classes.map((c) => (c === mha ? { ...c, doc: "ends the comment */ early" } : c));
  assert.throws(() => renderTypes(badDoc), /TSDoc would misread it/);
  assert.throws(() => rewrite(DTS.replace(BEGIN, ""), block), /once each/);
});

// Writes the class and slot types of web/lib/attention-lab.d.ts from the core's class recipes
// (core/src/recipes.cpp), read through the built WebAssembly module and the facade (`lab.classes`,
// `lab.slots`, `lab.classFacts`): the ClassName and SlotName unions, one config interface per class
// (required slots required, defaulted ones optional, each slot's value type, no other key) and the
// ClassConfigs map the API's signatures look a literal class name up in. Only the text between
//   // BEGIN generated from the core's class recipes by scripts/config-types.mjs
//   // END of the class and slot types (scripts/config-types.mjs)
// is rewritten. The recipes are C++ built from helpers and loops, so the facts are read from the
// built core, the one place that says what a class's slots are, rather than by parsing the source.
// Usage: node scripts/config-types.mjs            rewrites the .d.ts (run by scripts/build.sh after the wasm)
//        node scripts/config-types.mjs --check    exits 1 when the .d.ts is out of date (tests/node/config-types.test.mjs)
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { replaceBlock } from "./error-codes.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const DTS = "web/lib/attention-lab.d.ts";
export const BEGIN = "// BEGIN generated from the core's class recipes by scripts/config-types.mjs";
export const END = "// END of the class and slot types (scripts/config-types.mjs)";

/** The TypeScript type of each slot type the core names (SlotSpec.type); any other is an error. */
export const VALUE_TYPES = {
  int: "IntSlotValue",
  float: "FloatSlotValue",
  bool: "BoolSlotValue",
  "int | None": "OptionalIntSlotValue",
  "torch.dtype | None": "DtypeSlotValue",
};

/** A slot default as Python writes it: False, None, 0.0, 123. */
function pythonDefault(slot) {
  const v = slot.default;
  if (v === null) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "number") return slot.type === "float" && Number.isInteger(v) ? v.toFixed(1) : String(v);
  throw new Error(`${slot.name}: a default of type ${typeof v}`);
}

/** Text that goes into a TSDoc comment as it is: throws on what TSDoc would misread. */
function docText(text, where) {
  if (typeof text !== "string" || text.trim() === "" || /\*\/|@[A-Za-z{]|\n/.test(text)) throw new Error(`${where}: empty, several lines, or has */ or a @tag (TSDoc would misread it): ${JSON.stringify(text)}`);
  return text;
}

/** Where the book has a class: its section or bonus folder, and the file ("section 3.6.2, ch03/01_main-chapter-code/ch03.ipynb"). */
function home(c) {
  const file = `${c.book.folder}/${c.book.file}`;
  return docText(c.source.includes(file) ? c.source : `${c.source}, ${file}`, c.name);
}

/** The core's facts the block is made of: [{name, source, doc, book, slots}], in lab.classes' order. */
export function readClasses(lab) {
  return lab.classes.map((name) => {
    const facts = lab.classFacts(name);
    return { name, source: facts.source, doc: facts.doc, book: facts.book, slots: lab.slots(name) };
  });
}

/**
 * A class id as a TypeScript name: a class told apart by its book folder ("MultiHeadAttention@ch05/07_gpt_to_llama")
 * has '@' and '/', written as '_' ("MultiHeadAttention_ch05_07_gpt_to_llama").
 */
function typeName(className) {
  return className.replace(/\W/g, "_");
}

/** The generated block of the .d.ts, markers included. */
export function renderTypes(classes) {
  if (classes.length === 0) throw new Error("the core lists no class");
  const slotNames = [];
  for (const c of classes) for (const s of c.slots) if (!slotNames.includes(s.name)) slotNames.push(s.name);
  const out = [
    BEGIN,
    "/**",
    " * The name of every class the core has a recipe for, in `lab.classes`' order (the book's five first).",
    " * Generated from the core's recipes (core/src/recipes.cpp) by scripts/config-types.mjs: add a class there.",
    " */",
    "export type ClassName =",
  ];
  classes.forEach((c, i) => {
    out.push(`  /** ${home(c)}: ${docText(c.doc, c.name)} */`, `  | "${c.name}"${i === classes.length - 1 ? ";" : ""}`);
  });
  out.push(
    "",
    "/** A constructor slot's name, as the book and PyTorch spell it: every slot of every class, in order of first use. */",
    `export type SlotName = ${slotNames.map((n) => `"${n}"`).join(" | ")};`,
  );
  for (const c of classes) {
    const signature = c.slots.map((s) => (s.default === undefined ? s.name : `${s.name}=${pythonDefault(s)}`)).join(", ");
    out.push(
      "",
      "/**",
      ` * The constructor slots of ${c.name} (${home(c)}): \`${c.name.split("@")[0]}(${signature})\`.`,
      " * Required slots are required and no other key is allowed; strings are the slot's Python literal text.",
      " */",
      `export interface ${typeName(c.name)}Config {`,
    );
    for (const s of c.slots) {
      const type = VALUE_TYPES[s.type];
      if (!type) throw new Error(`${c.name}.${s.name}: slot type ${JSON.stringify(s.type)} has no TypeScript type in VALUE_TYPES`);
      if (!/^[a-z][a-z0-9_]*$/.test(s.name)) throw new Error(`${c.name}: slot name ${JSON.stringify(s.name)}`);
      const kind = s.default === undefined ? "required" : `default ${pythonDefault(s)}`;
      out.push(`  /** Slot ${s.position} (${s.type}, ${kind}): ${docText(s.doc, `${c.name}.${s.name}`).replace(/\.$/, "")}. */`);
      out.push(`  ${s.name}${s.default === undefined ? "" : "?"}: ${type};`);
    }
    out.push("}");
  }
  out.push(
    "",
    "/** Each class's config type by class name: what the API checks a config against when the class name is a literal. */",
    "export interface ClassConfigs {",
  );
  for (const c of classes) out.push(`  /** {@link ${typeName(c.name)}Config} */`, `  ${/^\w+$/.test(c.name) ? c.name : JSON.stringify(c.name)}: ${typeName(c.name)}Config;`);
  out.push("}", END);
  return out.join("\n");
}

/** The .d.ts text with its generated types block replaced; throws unless both markers are there once. */
export function rewrite(dts, block) {
  return replaceBlock(dts, BEGIN, END, block, DTS);
}

/** The block as the built core gives it now (needs web/lib/attention_core.{mjs,wasm}: scripts/build.sh). */
export async function currentBlock() {
  const { loadAttentionLab } = await import(pathToFileURL(path.join(ROOT, "web/lib/attention-lab.node.js")).href); // the Node entry: reads the .wasm from disk
  return renderTypes(readClasses(await loadAttentionLab()));
}

async function main(args) {
  const check = args.includes("--check");
  if (args.some((a) => a !== "--check")) throw new Error("usage: node scripts/config-types.mjs [--check]");
  const block = await currentBlock();
  const file = path.join(ROOT, DTS);
  const before = readFileSync(file, "utf8");
  const after = rewrite(before, block);
  const classes = (block.match(/^export interface \w+Config \{$/gm) ?? []).length;
  if (check) {
    if (after !== before) {
      console.error(`config-types: ${DTS} is out of date with the core's class recipes; run: node scripts/config-types.mjs`);
      return 1;
    }
    console.log(`config-types: ${DTS} has the config types of the core's ${classes} classes`);
    return 0;
  }
  if (after !== before) writeFileSync(file, after);
  console.log(`config-types: ${DTS} ${after !== before ? "rewritten" : "already up to date"} (${classes} classes)`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  try {
    process.exitCode = await main(process.argv.slice(2));
  } catch (err) {
    console.error(`config-types: ${err.message}`);
    process.exitCode = 2;
  }
}

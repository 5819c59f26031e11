// The one list of error codes (core/include/attention_lab/error_codes.hpp) and the ErrorCode union
// that scripts/error-codes.mjs writes from it into web/lib/attention-lab.d.ts: the union is the table
// (same codes, order, meanings and groups), `--check` passes and notices drift, and every code the
// bindings, the facade and the page mint or test for as a literal is listed. The core's own literals
// are checked by tests/native/error_codes_test.cpp.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { BEGIN, END, parseTable, readTable, renderUnion, rewrite } from "../../scripts/error-codes.mjs";

const root = new URL("../../", import.meta.url);
const read = (file) => readFileSync(new URL(file, root), "utf8");
const HEADER_TEXT = read("core/include/attention_lab/error_codes.hpp");
const DTS = read("web/lib/attention-lab.d.ts");
const table = readTable();
const byCode = new Map(table.codes.map((c) => [c.code, c]));

/** The generated union read back from the .d.ts: [{code, meaning, title}] (title: the group comment above it). */
function unionOfDts(dts) {
  const begin = dts.indexOf(BEGIN);
  const end = dts.indexOf(END);
  assert.ok(begin >= 0 && end > begin, "the .d.ts has the generated block's markers");
  const body = dts.slice(dts.indexOf("export type ErrorCode =", begin), end);
  const members = [];
  let title = null;
  let meaning = null;
  for (const line of body.split("\n").slice(1)) {
    let m;
    if ((m = line.match(/^ {2}\/\/ (.+)$/))) title = m[1];
    else if ((m = line.match(/^ {2}\/\*\* (.+) \*\/$/))) meaning = m[1];
    else if ((m = line.match(/^ {2}\| "([a-z0-9_]+)";?$/))) {
      members.push({ code: m[1], meaning, title });
      meaning = null;
    } else if (line.trim() !== "") assert.fail(`unexpected line in the ErrorCode union: ${line}`);
  }
  return members;
}

/** Every literal code a file mints or tests for, as [{code, file}]. */
function literalCodes(file) {
  const text = read(file);
  const patterns = [
    /\bcode:\s*"([a-z0-9_]+)"/g, // {code: "disposed", ...}
    /\bcode\s*\?\?\s*"([a-z0-9_]+)"/g, // err?.code ?? "error"
    /\bcode\s*[!=]==?\s*"([a-z0-9_]+)"/g, // err?.code === "cancelled"
    /"code",\s*"([a-z0-9_]+)"/g, // o.set("code", "...")
    /\bAttentionError\(\s*"([a-z0-9_]+)"/g, // the core's throws
    /\bloadError\(\s*"([a-z0-9_]+)"/g, // the facade's loading errors: loadError("wasm_fetch", ...)
    /\{false, \{"([a-z0-9_]+)"/g, // the bindings' failures: {false, {"out_of_memory", ...}}
    /\bwhole_option\([^;]*?,\s*"([a-z0-9_]+)",\s*\d+\)/g, // whole_option(options, "layer", 0, "checkpoint_layer", 0): the last number is the hint's example
  ];
  return patterns.flatMap((re) => [...text.matchAll(re)].map((m) => ({ code: m[1], file })));
}

const app = readdirSync(new URL("web/app/", root)).filter((name) => name.endsWith(".js")).map((name) => `web/app/${name}`);
/** The library's own modules (web/lib/*.js; the core's glue, attention_core*, is Emscripten's). */
const lib = readdirSync(new URL("web/lib/", root)).filter((name) => name.endsWith(".js") && !name.startsWith("attention_core")).map((name) => `web/lib/${name}`);

test("the .d.ts union is the table: the same codes in the same order, each with its meaning under its group's title", () => {
  const union = unionOfDts(DTS);
  assert.deepEqual(union.map((u) => u.code), table.codes.map((c) => c.code));
  for (const u of union) {
    const c = byCode.get(u.code);
    assert.equal(u.meaning, c.meaning, u.code);
    assert.equal(u.title, table.groups.find((g) => g.id === c.group).title, u.code);
  }
  assert.ok(union.length >= 80, `${union.length} codes`);
  // the codes added with the chapter 3 bonus classes
  for (const code of ["d_in_d_out_differ", "dropout_ignored", "inverted_mask"]) assert.ok(byCode.has(code), code);
  assert.match(byCode.get("dropout_ignored").meaning, /^warning:/);
  assert.match(byCode.get("inverted_mask").meaning, /^warning:/);
});

test("node scripts/error-codes.mjs --check passes on the tree, and the generator notices drift", () => {
  const out = execFileSync(process.execPath, [new URL("scripts/error-codes.mjs", root).pathname, "--check"], { encoding: "utf8" });
  assert.match(out, new RegExp(`lists the ${table.codes.length} codes`));
  assert.equal(rewrite(DTS, renderUnion(table)), DTS);
  const fewer = { ...table, codes: table.codes.filter((c) => c.code !== "too_large") };
  assert.notEqual(rewrite(DTS, renderUnion(fewer)), DTS);
  const reworded = { ...table, codes: table.codes.map((c) => (c.code === "too_large" ? { ...c, meaning: `${c.meaning}!` } : c)) };
  assert.notEqual(rewrite(DTS, renderUnion(reworded)), DTS);
  assert.throws(() => rewrite(DTS.replace(BEGIN, ""), renderUnion(table)), /markers|once each/);
});

test("the generator reads the table strictly", () => {
  const entry = '    {"too_large", "calls", ';
  assert.ok(HEADER_TEXT.includes(entry));
  const bad = (from, to) => HEADER_TEXT.replace(from, to);
  assert.throws(() => parseTable(bad(entry, '    {"unknown_class", "calls", ')), /twice/);
  assert.throws(() => parseTable(bad(entry, '    {"too_large", "nowhere", ')), /group 'nowhere'/);
  assert.throws(() => parseTable(bad(entry, '    {"too_large", "failures", ')), /comes after|order/);
  assert.throws(() => parseTable(bad(entry, '    { "too_large", "calls", ')), /not a \{"code"/);
  assert.throws(() => parseTable(bad(entry, '    {"Too_large", "calls", ')), /not a \{"code"/);
  assert.throws(() => parseTable(bad('"no such class"', '"no such */ class"')), /TSDoc/);
  assert.deepEqual(parseTable(HEADER_TEXT), table);
});

test("every code the boundary (core session, bindings), the facade and the page mint or test for is in the union; the library mints none of the page's", () => {
  const union = new Set(unionOfDts(DTS).map((u) => u.code));
  const session = readdirSync(new URL("core/src/", root)).filter((name) => /^session.*\.(cpp|hpp)$/.test(name)).map((name) => `core/src/${name}`);
  const library = [...session.flatMap(literalCodes), ...literalCodes("web/wasm/bindings.cpp"), ...lib.flatMap(literalCodes)];
  const page = app.flatMap(literalCodes);
  const missing = [...library, ...page].filter(({ code }) => !union.has(code)).map(({ code, file }) => `${file}: ${code}`);
  assert.deepEqual(missing, [], "codes not in core/include/attention_lab/error_codes.hpp");
  const pageOnly = library.filter(({ code }) => byCode.get(code).group === "page").map(({ code, file }) => `${file}: ${code}`);
  assert.deepEqual(pageOnly, []);
  // the scan sees each way the layers write a code
  const found = new Set([...library, ...page].map((x) => x.code));
  for (const code of ["wasm_fetch", "wasm_loaded", "out_of_memory", "internal", "disposed", "checkpoint_num_heads", "unreadable_argument", "bad_options", "unknown_option", "worker", "no_tokens", "error", "cancelled"]) {
    assert.ok(found.has(code), code);
  }
  // and each of the page's own codes is one the page really mints
  for (const c of table.codes.filter((x) => x.group === "page")) assert.ok(page.some((x) => x.code === c.code), `page code ${c.code} is not minted under web/app`);
});

test("every code of the table is written somewhere as a literal (core, bindings, facade or page): no stale entry", () => {
  const sources = [
    ...readdirSync(new URL("core/src/", root)).map((name) => `core/src/${name}`),
    ...readdirSync(new URL("core/include/attention_lab/", root)).filter((name) => name !== "error_codes.hpp").map((name) => `core/include/attention_lab/${name}`),
    "web/wasm/bindings.cpp",
    ...lib,
    ...app,
  ];
  const text = sources.map(read).join("\n");
  const stale = table.codes.filter((c) => !text.includes(`"${c.code}"`)).map((c) => c.code);
  assert.deepEqual(stale, []);
});

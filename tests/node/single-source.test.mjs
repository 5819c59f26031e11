// The web code keeps no facts about a class: the core is their only source. No JS module of the page, the widget
// or the library names an attention class in its code (comments aside) except the strings table:
// class-specific behaviour comes from what the core returns (lab.describe(name).class, diagnostics).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
const web = new URL("../../web/", import.meta.url);

/** The code of a JS file without its comments (block comments, then line comments outside strings). */
function codeOf(text) {
  const noBlocks = text.replace(/\/\*[\s\S]*?\*\//g, "");
  return noBlocks.split("\n").map((line) => line.replace(/(^|[^:"'`\\])\/\/.*$/, "$1")).join("\n");
}

test("no JS module under web/ names an attention class outside the strings table", () => {
  const files = [];
  for (const dir of ["app", "lib"]) {
    for (const name of readdirSync(new URL(`${dir}/`, web))) {
      // The strings table: strings.js, and strings-panels.js (the later panels' part of it).
      if (!name.endsWith(".js") || /^strings(-panels)?\.js$/.test(name)) continue; // attention_core.mjs is generated
      files.push(`${dir}/${name}`);
    }
  }
  assert.ok(files.length >= 15, files.join(" "));
  const offenders = [];
  for (const file of files) {
    const code = codeOf(readFileSync(new URL(file, web), "utf8"));
    for (const name of lab.classes) {
      const hits = code.match(new RegExp(`\\b${name}\\b`, "g"));
      if (hits) offenders.push(`${file}: ${name} (${hits.length})`);
    }
  }
  assert.deepEqual(offenders, []);
  // the scan would see one: the strings table does name them
  const strings = codeOf(readFileSync(new URL("app/strings.js", web), "utf8"));
  assert.ok(lab.classes.some((name) => strings.includes(name)));
});

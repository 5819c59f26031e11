// README.md is the front door: the pitch, the two commands, one short example per kind of
// user and the list of docs pages; everything longer lives under docs/. This checks that it stays so:
//  - it is at most 16 KB (16,384 bytes);
//  - every relative link and image in it (markdown [text](target), ![alt](target) and [ref]: target,
//    HTML src= and href=; code blocks and code spans are not links) names a file or folder of the
//    checkout, and a #anchor (also an in-page one) names a heading of the target markdown file by
//    GitHub's slug rule;
//  - every file it links, the screenshot too, is in the npm tarball (tests/pack.mjs), so its links
//    work from the installed package too; and so is every file the tarball's other markdown pages
//    (the docs, CONTRIBUTING.md) link;
//  - its absolute links are exactly those of EXTERNAL: each can die, so each is listed here on purpose.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { packedTarball } from "../pack.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const README = path.join(ROOT, "README.md");
const BUILT = existsSync(path.join(ROOT, "web", "lib", "attention_core.wasm"));

/** The most bytes README.md may have: about sql.js's README, usage first (STYLE.md). */
const MAX_BYTES = 16_384;

/** The README's absolute links, sorted: a new one is added here on purpose. */
const EXTERNAL = [
  "https://github.com/rasbt/LLMs-from-scratch",   // the book's repository
];

/** `text` with its fenced code blocks, code spans and HTML comments blanked out (same length and lines). */
function withoutCode(text) {
  const blank = (m) => m.replace(/[^\n]/g, " ");
  return text
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, blank)
    .replace(/<!--[\s\S]*?-->/g, blank)
    .replace(/(`+)[\s\S]*?\1/g, blank);
}

/** Every link of a markdown text outside code: {target, line}. */
function linksOf(markdown) {
  const text = withoutCode(markdown);
  const lineAt = (index) => text.slice(0, index).split("\n").length;
  const links = [];
  const patterns = [
    /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,   // [text](target), ![alt](target)
    /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm,                    // [ref]: target
    /\b(?:src|href)\s*=\s*["']([^"']+)["']/gi,                  // HTML
    /<(https?:\/\/[^>\s]+)>/g,                                  // <https://...>
  ];
  for (const pattern of patterns) {
    for (const m of text.matchAll(pattern)) links.push({ target: m[1], line: lineAt(m.index) });
  }
  // a bare URL in the prose (GitHub links it too) that is not already one of the above
  for (const m of text.matchAll(/(?<![(<"'=])\bhttps?:\/\/[^\s)<>\]"']+/g)) links.push({ target: m[0], line: lineAt(m.index) });
  return links;
}

/** A heading's anchor by GitHub's rule: lowercase, punctuation dropped but for hyphens (and _), spaces to hyphens. */
function slug(heading) {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a markdown file's headings (a repeated heading gets -1, -2, ... as on GitHub). */
function anchorsOf(file) {
  const text = readFileSync(file, "utf8").replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, "");
  const seen = new Map();
  const anchors = new Set();
  for (const m of text.matchAll(/^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/gm)) {
    const base = slug(m[1].trim());
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const isExternal = (target) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");

/**
 * The README's relative links, resolved: {target, line, file (relative to the checkout, posix), anchor}
 * (file "README.md" for an in-page anchor).
 */
function relativeLinks() {
  return linksOf(readFileSync(README, "utf8"))
    .filter((l) => !isExternal(l.target))
    .map((l) => {
      const [rawPath, anchor = null] = l.target.split("#");
      const file = rawPath === "" ? "README.md" : path.posix.normalize(decodeURIComponent(rawPath).replace(/^\.\//, ""));
      return { ...l, file, anchor };
    });
}

/** Problems of one resolved link: a missing file, an absolute path, an anchor with no heading. */
function linkProblems({ target, line, file, anchor }) {
  const where = `README.md line ${line}: ${target}`;
  if (file.startsWith("/")) return [`${where}: an absolute path; link relative to the checkout`];
  const full = path.join(ROOT, file);
  if (path.relative(ROOT, full).startsWith("..")) return [`${where}: points outside the checkout`];
  if (!existsSync(full)) return [`${where}: ${file} does not exist`];
  if (anchor === null) return [];
  if (!file.endsWith(".md") || !statSync(full).isFile()) return [`${where}: an anchor on ${file}, which is not a markdown file`];
  if (!anchorsOf(full).has(anchor)) return [`${where}: ${file} has no heading whose anchor is #${anchor}`];
  return [];
}

test("README.md is at most 16 KB: usage first, the rest under docs/", () => {
  const bytes = statSync(README).size;
  assert.ok(bytes <= MAX_BYTES, `README.md has ${bytes} bytes, more than ${MAX_BYTES}: move the longer text to a page under docs/ and link it`);
});

test("every relative link and image of README.md names a file or folder of the checkout, and each #anchor a heading there", () => {
  const links = relativeLinks();
  assert.ok(links.length >= 10, `${links.length} relative links found`);
  // the pages each kind of user starts from, the maintainers' page and the screenshot are among them
  const files = new Set(links.map((l) => l.file));
  for (const f of ["docs/screenshot.png", "docs/getting-started/reader.md", "docs/getting-started/course-author.md", "docs/getting-started/js-developer.md",
    "docs/getting-started/cpp-developer.md", "CONTRIBUTING.md"]) assert.ok(files.has(f), `README.md links ${f}`);
  assert.deepEqual(links.flatMap(linkProblems), []);
});

test("the link checks catch a missing file, a missing heading and an absolute path", () => {
  const check = (target) => linkProblems({ target, line: 1, file: target.split("#")[0] || "README.md", anchor: target.split("#")[1] ?? null });
  assert.deepEqual(check("docs/benchmarks.md"), []);
  assert.match(check("docs/benchmark.md")[0], /docs\/benchmark\.md does not exist/);
  assert.match(check("docs/benchmarks.md#no-such-heading")[0], /has no heading whose anchor is #no-such-heading/);
  assert.match(check("#no-such-section")[0], /README\.md has no heading/);
  assert.match(check("/etc/passwd")[0], /an absolute path/);
  assert.match(check("../outside.md")[0], /outside the checkout/);
  assert.equal(slug("Where the `.wasm` comes from"), "where-the-wasm-comes-from");
  assert.equal(slug("The `<attention-lab>` element"), "the-attention-lab-element");
  assert.equal(slug("Reliability: what is checked, and how"), "reliability-what-is-checked-and-how");
  assert.deepEqual(linksOf("a [b](c.md) `[d](e.md)` ![f](g.png)\n```\n[h](i.md)\n```\n<img src=\"j.png\">").map((l) => l.target), ["c.md", "g.png", "j.png"]);
});

test("every file README.md links is in the npm tarball, so the links work from the installed package", { skip: !BUILT && "no WASM build (npm test builds it; npm pack refuses a tree without one)" }, () => {
  const packed = new Set(packedTarball().files.map((f) => f.path));
  const isFile = (f) => existsSync(path.join(ROOT, f)) && statSync(path.join(ROOT, f)).isFile();   // a missing one fails the test above
  const files = [...new Set(relativeLinks().map((l) => l.file))].filter(isFile);
  assert.ok(files.includes("docs/screenshot.png"), "the screenshot is one of them");
  const missing = files.filter((f) => !packed.has(f));
  assert.deepEqual(missing, [], `linked from README.md but not packed: add them to package.json's "files"`);
});

test("every relative link of every markdown page the npm tarball ships names a file it ships: the docs work from node_modules too", { skip: !BUILT && "no WASM build (npm test builds it; npm pack refuses a tree without one)" }, () => {
  const packed = new Set(packedTarball().files.map((f) => f.path));
  const pages = [...packed].filter((f) => f.endsWith(".md")).sort();
  for (const page of ["README.md", "docs/api.md", "docs/bundlers.md", "docs/getting-started/js-developer.md", "CONTRIBUTING.md"]) assert.ok(pages.includes(page), page);
  const shipped = (file) => packed.has(file) || [...packed].some((f) => f.startsWith(`${file.replace(/\/$/, "")}/`));  // a file, or a folder of files
  const dead = pages.flatMap((page) => linksOf(readFileSync(path.join(ROOT, page), "utf8"))
    .filter((l) => !isExternal(l.target) && !l.target.startsWith("#"))
    .filter((l) => !shipped(path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURIComponent(l.target.split("#")[0])))))
    .map((l) => `${page} line ${l.line}: ${l.target}`));
  assert.deepEqual(dead, [], "link a file the package ships, or name a repository file in a code span");
});

test("README.md's absolute links are the few listed in this test", () => {
  const external = [...new Set(linksOf(readFileSync(README, "utf8")).map((l) => l.target).filter(isExternal))].sort();
  assert.deepEqual(external, EXTERNAL, "a new absolute link goes into EXTERNAL on purpose (each can die); a relative one goes to a file of the checkout");
});

test("the README's C++ example gives tensor_from as many values as its shape holds: the book's six tokens", async () => {
  // issue 41: the example elided four tokens, so copied as written it read 12 floats past its vector
  const cpp = readFileSync(README, "utf8").match(/```cpp\n([\s\S]*?)```/)[1];
  const values = cpp.match(/inputs = \{([^}]*)\}/)[1].replace(/\/\/[^\n]*/g, "").split(",").map((v) => Number(v.trim().replace(/f$/, "")));
  const shape = cpp.match(/tensor_from\(inputs\.data\(\), \{([\d, ]+)\}\)/)[1].split(",").map(Number);
  assert.equal(values.length, shape.reduce((a, b) => a * b, 1));
  if (!BUILT) return;
  const { loadAttentionLab } = await import("attention-lab");
  const lab = await loadAttentionLab();
  assert.deepEqual(values.map(Math.fround), [...lab.bookTokens().data]);
});

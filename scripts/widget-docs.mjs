// The <attention-lab> element's docs, from its JSDoc: @custom-elements-manifest/analyzer (tools/docs)
// reads web/app/attention-lab-element.js into custom-elements.json, and this script renders that
// manifest into docs/widget.md (committed, so it reads on GitHub too; TypeDoc includes it). The manifest
// is committed too and ships in the npm package (package.json "customElements" names it: editors and
// Storybook read the element's attributes, events, properties and parts from it).
//   node scripts/widget-docs.mjs           writes docs/widget.md and custom-elements.json
//   node scripts/widget-docs.mjs --check   (npm run docs) fails when either is stale, or when the
//                                          manifest and the element disagree: attributes, events, CSS
//                                          custom properties and parts (see elementFacts below)
// Needs tools/docs' packages (`npm ci --prefix tools/docs`; npm run docs installs them).
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ELEMENT = "web/app/attention-lab-element.js";
export const PAGE = "docs/widget.md";
export const MANIFEST = "custom-elements.json";
const ANALYZER = path.join(ROOT, "tools/docs/node_modules/@custom-elements-manifest/analyzer/index.js");

// Documented ahead of the code that adds them (issue 20's widget branch): not yet read by the element.
// Once the element reads one, the check fails until it is taken off this list.
export const PENDING = { attributes: [], events: [] };
// Global HTML attributes the element also reads (its landmark's name): not its own API.
const GLOBAL_ATTRS = new Set(["aria-label", "id"]);

/** The manifest of `source` (the element's text), as @custom-elements-manifest/analyzer makes it. */
export async function manifestOf(source, file = ELEMENT) {
  if (!existsSync(ANALYZER)) throw new Error(`${ANALYZER} is missing: run npm ci --prefix tools/docs (npm run docs does)`);
  const { create, ts } = await import(pathToFileURL(ANALYZER).href);
  return create({ modules: [ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true)] });
}

/** The custom element's declaration in a manifest. */
export function elementOf(manifest) {
  const decl = manifest.modules.flatMap((m) => m.declarations ?? []).find((d) => d.customElement && d.tagName === "attention-lab");
  if (!decl) throw new Error(`${ELEMENT}: no class with @tag attention-lab (or customElements.define) in the manifest`);
  return decl;
}

/** Every slot name of every class, from the core's one table of recipes (core/src/recipes.cpp). */
export function coreSlotNames(root = ROOT) {
  const text = readFileSync(path.join(root, "core/src/recipes.cpp"), "utf8");
  const names = [...text.matchAll(/\{"([a-z_][a-z0-9_]*)",\s*[\w]+,\s*SlotType::/g)].map((m) => m[1]);
  if (!names.includes("d_in")) throw new Error("core/src/recipes.cpp: no SlotSpec found (has the slot table moved?)");
  return [...new Set(names)];
}

/**
 * What the element really reads and sends: the attributes it observes (observedAttributes, url-state's
 * STATE_ATTRS, the core's slot names, watched once the core has loaded) or reads with get/hasAttribute
 * (in the element's file, or url-state.js on the widget),
 * the events web/app dispatches, the --al-* custom properties style.css uses, the parts web/app names.
 */
export async function elementFacts({ source = readFileSync(path.join(ROOT, ELEMENT), "utf8"), root = ROOT } = {}) {
  const { STATE_ATTRS } = await import(pathToFileURL(path.join(root, "web/app/url-state.js")).href);
  const observed = source.match(/static get observedAttributes\(\)\s*\{([\s\S]*?)\n\s*\}/)?.[1] ?? "";
  const attributes = new Set([
    ...(observed.includes("STATE_ATTRS") ? STATE_ATTRS : []),
    ...[...observed.matchAll(/"([\w-]+)"/g)].map((m) => m[1]),
    ...coreSlotNames(root),
    ...[...source.matchAll(/\b(?:get|has)Attribute\("([\w-]+)"\)/g)].map((m) => m[1]),
    // url-state.js reads the element's url-prefix for it
    ...[...readFileSync(path.join(root, "web/app/url-state.js"), "utf8").matchAll(/\bwidget\.(?:get|has)Attribute\("([\w-]+)"\)/g)].map((m) => m[1]),
  ]);
  for (const g of GLOBAL_ATTRS) attributes.delete(g);
  const app = path.join(root, "web/app");
  const events = new Set();
  const parts = new Set(); // the names in every `part: "..."` of web/app (static ones: `diagnostic ${level}` gives "diagnostic")
  let appText = "";
  for (const f of readdirSync(app).filter((n) => n.endsWith(".js"))) {
    const text = readFileSync(path.join(app, f), "utf8");
    appText += text;
    for (const m of text.matchAll(/new CustomEvent\("([\w-]+)"/g)) events.add(m[1]);
    for (const m of text.matchAll(/\bpart: ([^,}]*)/g)) {
      const value = m[1].includes("?") ? m[1].slice(m[1].indexOf("?")) : m[1]; // `cond ? "a b" : "a"`: not cond's strings
      for (const q of value.matchAll(/"([^"]*)"|`([^`]*)`/g)) for (const w of (q[1] ?? q[2]).split(/\s+/)) if (/^[\w-]+$/.test(w)) parts.add(w);
    }
  }
  const css = readFileSync(path.join(app, "style.css"), "utf8");
  const cssProperties = new Set([...css.matchAll(/var\((--al-[\w-]+)/g)].map((m) => m[1]));
  // a part can also be made from data (a diagnostic's severity): a documented part must at least be a word of web/app
  const words = new Set(appText.match(/[\w-]+/g));
  return { attributes, events, cssProperties, parts, words };
}

/** Where the manifest and the element disagree: one sentence each, naming the name and the fix. */
export function mismatches(decl, facts, pending = PENDING) {
  const out = [];
  const compare = (kind, documented, real, pend = [], tag) => {
    for (const name of real) {
      if (!documented.has(name)) out.push(`${kind} "${name}" is used by the element but not documented: add an ${tag} line to the JSDoc of ${ELEMENT}`);
      else if (pend.includes(name)) out.push(`${kind} "${name}" now exists: take it off PENDING in scripts/widget-docs.mjs`);
    }
    for (const name of documented) {
      if (!real.has(name) && !pend.includes(name)) out.push(`${kind} "${name}" is documented (${tag}) but the element has none: remove it from the JSDoc of ${ELEMENT}`);
    }
  };
  const names = (list) => new Set((list ?? []).map((x) => x.name));
  compare("attribute", names(decl.attributes), facts.attributes, pending.attributes, "@attr");
  compare("event", names(decl.events), facts.events, pending.events, "@fires");
  compare("CSS custom property", names(decl.cssProperties), facts.cssProperties, [], "@cssprop");
  const parts = names(decl.cssParts);
  for (const name of facts.parts ?? []) if (!parts.has(name)) out.push(`CSS part "${name}" is used by the element but not documented: add a @csspart line to the JSDoc of ${ELEMENT}`);
  for (const name of parts) if (facts.words && !facts.words.has(name)) out.push(`CSS part "${name}" is documented (@csspart) but web/app never names it: remove it from the JSDoc of ${ELEMENT}`);
  for (const list of [decl.attributes, decl.events, decl.cssProperties, decl.cssParts]) {
    for (const x of list ?? []) if (!x.description?.trim()) out.push(`"${x.name}" has no description in the JSDoc of ${ELEMENT}`);
  }
  return out;
}

const cell = (text) => String(text ?? "").replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|");
const code = (text) => (text ? `\`${cell(text).replace(/`/g, "'")}\`` : "");
const table = (head, rows) => [`| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

/** The attributes in the order the JSDoc lists them (`source`: the element's text), the rest after. */
function inJsdocOrder(attributes, source) {
  const at = (name) => {
    const i = source.search(new RegExp(`@attr (?:\\{[^}]*\\} )?${name.replace(/[-]/g, "\\$&")} `));
    return i < 0 ? Infinity : i;
  };
  return [...attributes].sort((a, b) => at(a.name) - at(b.name));
}

/** A value type worth showing: a union of literals (`"train" | "eval"`) or a boolean attribute. */
function valueNote(type) {
  if (!type || type === "string") return "";
  if (type === "boolean") return "(present or absent) ";
  return `(${code(type)}) `;
}

/** docs/widget.md from the element's declaration (`source`: the element's text, for the attributes' order). */
export function render(decl, source = readFileSync(path.join(ROOT, ELEMENT), "utf8")) {
  const members = (decl.members ?? []).filter((m) => !m.privacy || m.privacy === "public");
  const sig = (m) => (m.kind === "method" ? `${m.name}(${(m.parameters ?? []).map((p) => p.name).join(", ")})` : m.name);
  return [
    "---",
    "title: The <attention-lab> element",
    "---",
    "",
    `# The \`<${decl.tagName}>\` element`,
    "",
    "<!-- Generated by `node scripts/widget-docs.mjs` from the JSDoc of web/app/attention-lab-element.js",
    "     (through @custom-elements-manifest/analyzer's custom-elements.json). Edit the JSDoc, not this page. -->",
    "",
    `${decl.summary ?? ""}`,
    "",
    decl.description ?? "",
    "",
    "## Attributes",
    "",
    table(["attribute", "meaning"], inJsdocOrder(decl.attributes, source).map((a) => [code(a.name), valueNote(a.type?.text) + cell(a.description)])),
    "",
    "## Methods and properties",
    "",
    ...members.flatMap((m) => [
      `### \`el.${sig(m)}\``,
      "",
      m.kind === "method" ? `Returns \`${cell(m.return?.type?.text)}\`.` : `${m.readonly ? "Read-only" : "Property"}: \`${cell(m.type?.text)}\`.`,
      "",
      m.description ?? "",
      "",
    ]),
    "## Events",
    "",
    "Every event bubbles and is composed (it crosses the shadow root), so a listener on the page sees it.",
    "",
    table(["event", "detail", "when"], decl.events.map((e) => [code(e.name), code(e.type?.text?.replace(/^CustomEvent<(.*)>$/, "$1")), cell(e.description)])),
    "",
    "## CSS custom properties",
    "",
    "Set them on the element (`attention-lab { --al-accent: #b0306a; }`); they cross the shadow root.",
    "",
    table(["property", "what it colours or sets"], decl.cssProperties.map((p) => [code(p.name), cell(p.description)])),
    "",
    "## CSS parts",
    "",
    "Style the inside with `::part()`: `attention-lab::part(run-button) { border-radius: 0; }`.",
    "",
    table(["part", "what it is"], decl.cssParts.map((p) => [code(p.name), cell(p.description)])),
    "",
  ].join("\n");
}

async function main() {
  const check = process.argv.includes("--check");
  const manifest = await manifestOf(readFileSync(path.join(ROOT, ELEMENT), "utf8"));
  const decl = elementOf(manifest);
  const problems = mismatches(decl, await elementFacts());
  const outputs = [[PAGE, render(decl)], [MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`]];
  for (const [name, text] of outputs) {
    const file = path.join(ROOT, name);
    if (!check) writeFileSync(file, text);
    else if (!existsSync(file) || readFileSync(file, "utf8") !== text) problems.push(`${name} is stale: run node scripts/widget-docs.mjs and commit it`);
  }
  if (problems.length) {
    for (const p of problems) console.error(`widget docs: ${p}`);
    process.exit(1);
  }
  console.log(`widget docs: ${decl.attributes.length} attributes, ${decl.events.length} events, ${decl.cssProperties.length} CSS properties, ${decl.cssParts.length} parts (${check ? "checked" : "wrote"} ${PAGE}, ${MANIFEST})`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

// The fenced code blocks of a markdown page, for the tests that run the docs' examples
// (tests/node/docs-pages.test.mjs, tests/browser/docs-pages.test.mjs).

/**
 * The fenced blocks of `markdown`: {lang, code, line, skip}, where skip is the reason given by a
 * `<!-- not run: reason -->` line just above the block (null when there is none).
 */
export function fencedBlocks(markdown) {
  const blocks = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^```(\w*)\s*$/);
    if (!open) continue;
    const start = i;
    const body = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    const above = lines.slice(0, start).reverse().find((l) => l.trim() !== "");
    const skip = above?.match(/^<!-- not run: (.+) -->$/)?.[1] ?? null;
    blocks.push({ lang: open[1], code: body.join("\n"), line: start + 1, skip });
  }
  return blocks;
}

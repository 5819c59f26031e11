// The hand-written .d.ts is checked by compiling a TypeScript program that uses the whole API.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

test("web/lib/attention-lab.d.ts type-checks a program that uses every API call", () => {
  const tsc = path.join(root, "node_modules", ".bin", "tsc");
  let out = "";
  try {
    out = execFileSync(tsc, ["-p", path.join(root, "tests/node/types")], { encoding: "utf8" });
  } catch (e) {
    assert.fail(`tsc reported errors:\n${e.stdout}${e.stderr}`);
  }
  assert.equal(out.trim(), "");
});

test("a program that misuses the API fails to type-check (the check can fail)", () => {
  const tsc = path.join(root, "node_modules", ".bin", "tsc");
  let failed = false;
  try {
    execFileSync(tsc, ["-p", path.join(root, "tests/node/types/misuse")], { encoding: "utf8" });
  } catch (e) {
    failed = true;
    assert.match(e.stdout, /error TS/);
  }
  assert.ok(failed, "misuse.ts compiled without errors");
});

// The npm tarball of this checkout, packed once per `npm test`: scripts/test.sh packs it after the
// build and names npm's report of it in ATTENTION_LAB_PACK; a test file run on its own packs one
// itself (once per process). Tests install it into folders of their own (installPackedTarball), so
// none of them changes what another one installs.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** npm with the flags every test's call takes; stdout as text. */
export const npm = (args, cwd) => execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

let packed = null;

/**
 * npm's report of the tarball (`npm pack --json`: name, version, size, files, filename) with `file`,
 * the tarball's path. Packed here when ATTENTION_LAB_PACK names no report, into a folder removed at exit.
 */
export function packedTarball() {
  if (packed) return packed;
  const report = process.env.ATTENTION_LAB_PACK;
  if (report && existsSync(report)) {
    const [entry] = JSON.parse(readFileSync(report, "utf8"));
    packed = { ...entry, file: path.join(path.dirname(report), entry.filename) };
  } else {
    const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-pack-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const [entry] = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], ROOT));
    packed = { ...entry, file: path.join(dir, entry.filename) };
  }
  if (!existsSync(packed.file)) throw new Error(`the packed tarball ${packed.file} is missing`);
  return packed;
}

/**
 * The tarball installed offline into a new empty project dir/name (its package.json private, with
 * `fields` added): what a user of the npm package starts from. Returns the project's path.
 */
export function installPackedTarball(dir, name, fields = {}) {
  const project = path.join(dir, name);
  mkdirSync(project);
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name, private: true, ...fields }));
  npm(["install", "--offline", packedTarball().file], project);
  return project;
}

// npm start (after scripts/setup.sh): builds what the page's first view loads, serves the page, and
// builds the rest of the page's binaries while it serves.
//   1. bash scripts/build.sh --first-view: the lean binaries the page's main thread runs, their glue
//      and the vendored tokenizer;
//   2. the server (scripts/serve.mjs), its URL printed: the page runs every setup its main thread runs;
//   3. bash scripts/build.sh --rest-of-page, in the background: the other binaries (the page's worker
//      runs on the threaded ones). Until it has finished, the server holds a request for any of them,
//      then serves it (503 with the reason if that build fails), so a large run started early waits
//      for its binary instead of failing.
// The command line is serve.mjs's (--port, --host, --help), read before anything is built.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseCommandLine, serveAndAnnounce, USAGE } from "./serve.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** What step 1 places in web/lib (the first view's files), served at once. */
export const FIRST_VIEW = ["attention_core.mjs", "attention_core_lean.wasm", "attention_core_lean_fma.wasm"];

/** True for the URL path of a binary (or glue) that step 3 is still building. */
export function builtLater(pathname) {
  const match = /^\/lib\/(attention_core[\w.]*)$/.exec(pathname);
  return match !== null && !FIRST_VIEW.includes(match[1]);
}

/** bash scripts/build.sh with `mode`; resolves when it succeeds, rejects with its exit status. `prefix` marks its lines. */
function build(mode, prefix = "") {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [path.join(ROOT, "scripts", "build.sh"), mode], { cwd: ROOT, stdio: prefix ? ["ignore", "pipe", "pipe"] : "inherit" });
    if (prefix) {
      for (const [from, to] of [[child.stdout, process.stdout], [child.stderr, process.stderr]]) {
        let rest = "";
        from.setEncoding("utf8");
        from.on("data", (chunk) => {
          const lines = (rest + chunk).split("\n");
          rest = lines.pop();
          for (const line of lines) to.write(`${prefix}${line}\n`);
        });
        from.on("end", () => rest && to.write(`${prefix}${rest}\n`));
      }
    }
    child.on("error", reject);
    child.on("exit", (code, signal) => (code === 0 ? resolve() : reject(new Error(`scripts/build.sh ${mode} failed (${signal ?? `exit ${code}`}); its output is above`))));
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let options;
  try {
    options = parseCommandLine(process.argv.slice(2));
  } catch (err) {
    console.error(`start: ${err.message}\nRun npm start -- --help for the options.`);
    process.exit(2);
  }
  if (options.help) {
    console.log(USAGE);
    process.exit(0);
  }
  try {
    await build("--first-view");
  } catch (err) {
    console.error(`start: ${err.message}`);
    process.exit(1);
  }
  // The rest is built once the server listens: a port in use then ends npm start with nothing left running.
  let built;
  const rest = new Promise((resolve, reject) => (built = { resolve, reject }));
  await serveAndAnnounce(options, { held: builtLater, until: rest });
  console.log("The page's other binaries (threads, files, GPT-2) are building; a run that needs one waits for it.");
  build("--rest-of-page", "[build] ").then(built.resolve, built.reject);
  rest.then(
    () => console.log("start: every binary is built."),
    (err) => console.error(`start: ${err.message}. The page runs what its main thread runs; run npm run build to see the error again.`),
  );
}

// The million-key safetensors header (issue 17), part of npm run bench (bench/run.mjs runs this file in
// a fresh Node process; BENCH_SKIP=header leaves it out). Alone, after a build: node bench/header.mjs
//
// The browser suite's file (tests/browser/checkpoint.test.mjs): GPT-2 layer 0 of width 4 plus
// 1,000,000 one-element tensors "x0", "x1", ... (a ~70 MB header), built in memory.
//   wasm-node  lab.openCheckpoint(bytes): the header copied into WASM and parsed once (what the page's
//              worker does; the WASM heap's peak growth and what the kept header holds), then loadCheckpoint of layer 0 from that handle (the plan walks every key
//              for its ignored list); REPS times each, a fresh CheckpointFile each time
//   native     build/native/attention_lab_native_bench --header-keys N: parse_safetensors_header alone,
//              plus 1001 find() calls over the parsed header and plan_gpt2_attention (layer 0) on it
// Prints a readable summary on stderr and one JSON line on stdout.
// Environment: BENCH_QUICK=1 (1 repetition), BENCH_HEADER_KEYS (default 1000000).
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";
import { layer0Shapes, safetensors } from "../tests/safetensors.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const QUICK = process.env.BENCH_QUICK === "1";
const KEYS = Number(process.env.BENCH_HEADER_KEYS ?? 1_000_000);
const REPS = QUICK ? 1 : 3;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const errText = (e) => String(e?.message ?? e).split("\n")[0].slice(0, 300);

async function wasmNode() {
  const bytes = safetensors(layer0Shapes(4), { extraKeys: KEYS, extraName: (i) => `x${i}` });
  const lab = await loadAttentionLab();
  const open = [];
  const load = [];
  let keys = 0;
  let heapPeakGrowth = 0;
  let heapKept = 0;
  for (let i = 0; i < REPS; i++) {
    const peak0 = lab.heapPeak();
    const inUse0 = lab.heapInUse();
    const t0 = performance.now();
    const file = await lab.openCheckpoint(bytes);
    const t1 = performance.now();
    if (i === 0) {
      heapPeakGrowth = lab.heapPeak() - peak0;
      heapKept = lab.heapInUse() - inUse0;
    }
    const { module, report } = await lab.loadCheckpoint(file, { num_heads: 2 });
    const t2 = performance.now();
    open.push(t1 - t0);
    load.push(t2 - t1);
    keys = file.keys;
    if (report.ignoredCount !== KEYS + 4) throw new Error(`the report ignores ${report.ignoredCount} keys, expected ${KEYS + 4}`);
    module.dispose();
    file.dispose();
  }
  return { keys, headerBytes: Number(bytes.readBigUInt64LE(0)), openMs: median(open), openSamplesMs: open, loadLayerMs: median(load), loadLayerSamplesMs: load, heapPeakGrowthBytes: heapPeakGrowth, heapKeptBytes: heapKept };
}

function native() {
  const exe = path.join(ROOT, "build/native/attention_lab_native_bench");
  if (!existsSync(exe)) return Promise.resolve({ error: `${path.relative(ROOT, exe)} is not built (cmake --build --preset native --target attention_lab_native_bench)` });
  return new Promise((resolve) => {
    execFile(exe, ["--header-keys", String(KEYS), "--reps", String(REPS)], { timeout: 600_000 }, (error, stdout) => {
      try {
        const r = JSON.parse(stdout.trim().split("\n").pop());
        if (r.error) throw new Error(r.error);
        resolve({ keys: r.header.keys, headerBytes: r.header.bytes, parseMs: r.header.median_ms, parseSamplesMs: r.header.samples_ms, find1001Ms: r.header.find_1001_ms, planMs: r.header.plan_ms });
      } catch (e) {
        resolve({ error: errText(error ?? e) });
      }
    });
  });
}

export function describe(r) {
  const lines = [`safetensors header with ${KEYS.toLocaleString("en-US")} extra keys (layer 0 of width 4 + one-element tensors)`];
  const n = r.native;
  lines.push(n.error ? `  native     n/a: ${n.error}` : `  native     parse ${n.parseMs.toFixed(0)} ms (samples ${n.parseSamplesMs.map((x) => x.toFixed(0)).join(", ")}), 1001 finds ${n.find1001Ms.toFixed(1)} ms, plan of layer 0 ${n.planMs.toFixed(0)} ms; ${n.keys} keys, ${(n.headerBytes / 1e6).toFixed(1)} MB`);
  const w = r.wasmNode;
  lines.push(w.error ? `  wasm-node  n/a: ${w.error}` : `  wasm-node  openCheckpoint ${w.openMs.toFixed(0)} ms (samples ${w.openSamplesMs.map((x) => x.toFixed(0)).join(", ")}), then loadCheckpoint layer 0 ${w.loadLayerMs.toFixed(0)} ms; ${w.keys} keys; WASM heap: peak +${(w.heapPeakGrowthBytes / 1048576).toFixed(0)} MiB while opening, ${(w.heapKeptBytes / 1048576).toFixed(0)} MiB kept`);
  return lines.join("\n");
}

async function main() {
  const result = { keys: KEYS, reps: REPS, native: await native(), wasmNode: await wasmNode().catch((e) => ({ error: errText(e) })) };
  console.error(describe(result));
  console.log(JSON.stringify(result));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

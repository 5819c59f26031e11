// The onnxruntime-web rows of bench/run.mjs in Node, each in its own process (ort.env.wasm.numThreads is
// read once per realm): node bench/ort-node.mjs --model FILE.onnx --inputs DIR --threads N.
// DIR holds x_T.f32 (the (1, T, 768) input) and ours_T.f32 (our output) for each T the parent asks for.
// Prints {ready, version, threads, node}, then answers each stdin line "T reps" with {samples_ms,
// checksum, max_abs_diff} (one warm-up forward first; max |ours - theirs| on that forward); "quit" ends it.
import { readFileSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { makeOrtMha, maxAbsDiff } from "./ort-mha.mjs";
import { checksum } from "./timing.mjs";

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const f32 = (file) => { const b = readFileSync(file); return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4); };
try {
  const mha = await makeOrtMha(readFileSync(arg("--model")), { threads: Number(arg("--threads")) });
  console.log(JSON.stringify({ ready: true, ...mha.info, node: process.version }));
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (line.trim() === "quit") break;
    const [T, reps] = line.trim().split(/\s+/).map(Number);
    try {
      const x = f32(path.join(arg("--inputs"), `x_${T}.f32`));
      let out = await mha.forward(x, T);
      const diff = maxAbsDiff(out, f32(path.join(arg("--inputs"), `ours_${T}.f32`)));
      const samples = [];
      for (let i = 0; i < reps; i++) {
        const t0 = performance.now();
        out = await mha.forward(x, T);
        samples.push(performance.now() - t0);
      }
      console.log(JSON.stringify({ samples_ms: samples, checksum: checksum(out), max_abs_diff: diff }));
    } catch (e) {
      console.log(JSON.stringify({ error: String(e?.message ?? e) }));
    }
  }
  await mha.dispose();
} catch (e) {
  console.log(JSON.stringify({ ready: false, error: String(e?.message ?? e) }));
}
process.exit(0);

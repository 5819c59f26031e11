// A child of bench/generate.mjs: our model.generate in a process of its own, loaded with
// loadAttentionLab({threads}) (the core loads once per process, so each thread count has its own).
// Protocol (as bench/torch_generate.py's): one JSON set-up line {ready, threads, kernel}, then per stdin
// line "cached PROMPT DECODED" / "uncached PROMPT DECODED" one JSON line {prefill_ms, decode_ms, ids}
// (the ids of the DECODED tokens after the prefill's pick); "quit" ends it.
import { readFileSync } from "node:fs";
import readline from "node:readline";
import { loadAttentionLab } from "attention-lab";

const [file, threadsArg] = process.argv.slice(2);
const lab = await loadAttentionLab({ threads: Number(threadsArg) });
const model = await lab.loadGPT2(readFileSync(file));
const idsFor = (n) => Array.from({ length: n }, (_, i) => (i * 977) % model.config.vocab_size);  // generate.mjs's prompt

async function run(prompt, decoded, cache) {
  const ids = idsFor(prompt);
  const g = await model.generate(ids, { maxNewTokens: decoded + 1, cache });
  const ms = g.steps.map((s) => s.ms);
  return { prefill_ms: ms[0], decode_ms: ms.slice(1), ids: g.tokenIds.slice(prompt, prompt + decoded) };
}

await run(8, 8, true);  // warm-up (V8's tiers)
process.stdout.write(`${JSON.stringify({ ready: true, threads: lab.threads, kernel: lab.kernel })}\n`);
for await (const line of readline.createInterface({ input: process.stdin })) {
  const [what, prompt, decoded] = line.trim().split(/\s+/);
  if (what === "quit") break;
  process.stdout.write(`${JSON.stringify(await run(Number(prompt), Number(decoded), what === "cached"))}\n`);
}
model.dispose();

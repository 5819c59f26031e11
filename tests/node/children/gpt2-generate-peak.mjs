// One measurement for tests/node/gpt2-generate-memory.test.mjs, in a fresh process (the WASM heap's
// high-water mark starts low): argv[2] is {path, promptTokens, maxNewTokens, cache, resident, window, attention}. Opens the
// file as a Blob (read by slices, never whole), generates, and prints {estimate, peak, rows (the bytes of the attention rows the steps hold in JS), resident, tokenIds, steps}.
import { openAsBlob } from "node:fs";
import { loadAttentionLab } from "attention-lab";

const job = JSON.parse(process.argv[2]);
const lab = await loadAttentionLab();
const model = await lab.loadGPT2(await openAsBlob(job.path));
const ids = Array.from({ length: job.promptTokens }, (_, i) => (i * 977) % model.config.vocab_size);
const before = lab.heapPeak();
const r = await model.generate(ids, { maxNewTokens: job.maxNewTokens, cache: job.cache, resident: job.resident, window: job.window ?? null, attention: job.attention });
const peak = lab.heapPeak() - before;
const rows = r.steps.reduce((a, s) => a + (s.attention?.data.byteLength ?? 0), 0);
model.dispose();
console.log(JSON.stringify({ estimate: r.estimateBytes, peak, rows, resident: r.resident, tokenIds: r.tokenIds, steps: r.steps.map((s) => ({ cacheTokens: s.cacheTokens, ms: s.ms })) }));

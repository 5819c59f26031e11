// Benchmarks (npm run bench). Speed targets live here, not in timed tests. Each result is also given as
// a ratio against a reference measured in the same process, so numbers from different machines compare.
//   - interaction: create + traced forward at book size (target: well under 50 ms)
//   - GPT-2 small (768/12): create, forward on 6 and on 1024 tokens, trace overhead (traced / untraced)
//   - WASM matmul speed vs a plain-JS triple loop on the same (1024 x 768) @ (768 x 768) product
import { loadAttentionLab } from "../web/lib/attention-lab.js";

const lab = await loadAttentionLab();

function time(label, fn, repeat = 5) {
  fn();  // warm-up
  const samples = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const median = samples[Math.floor(samples.length / 2)];
  return { label, median };
}

const results = [];
const report = (r, extra = "") => {
  results.push(r);
  console.log(`${r.label.padEnd(58)} ${r.median.toFixed(2).padStart(10)} ms ${extra}`);
};

const book = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
const bookX = { shape: [2, 6, 3], data: new Float32Array(36).map((_, i) => lab.bookTokens().data[i % 18]) };
const interaction = time("book MHA(3, 2, 6, 0.0, 2): create + traced forward", () => {
  lab.create("MultiHeadAttention", book, { generator: lab.manualSeed(123) }).forward(bookX, { trace: true });
}, 50);
report(interaction, interaction.median < 50 ? "(target < 50 ms: met)" : "(target < 50 ms: MISSED)");

const gpt2 = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };
report(time("GPT-2 small attention: create (2,360,064 seeded parameters)", () => lab.create("MultiHeadAttention", gpt2), 3));
const m = lab.create("MultiHeadAttention", gpt2);
const x6 = { shape: [1, 6, 768], data: lab.seededTokens(6, 768, 1).data };
report(time("GPT-2 small: traced forward, 6 tokens", () => m.forward(x6, { trace: true }), 5));
const x1024 = { shape: [1, 1024, 768], data: lab.seededTokens(1024, 768, 1).data };
const plain = time("GPT-2 small: forward, 1024 tokens", () => m.forward(x1024, { training: false }), 3);
report(plain);
const traced = time("GPT-2 small: traced forward, 1024 tokens", () => m.forward(x1024, { training: false, trace: true }), 3);
report(traced, `(trace overhead x${(traced.median / plain.median).toFixed(2)})`);

// Reference in the same process: the q projection alone as a plain-JS loop vs one WASM forward.
const W = m.parameters()[0].data;
const jsMatmul = time("reference: plain-JS (1024x768)@(768x768)^T, one projection", () => {
  const out = new Float32Array(1024 * 768);
  for (let i = 0; i < 1024; i++)
    for (let o = 0; o < 768; o++) {
      let s = 0;
      for (let k = 0; k < 768; k++) s += x1024.data[i * 768 + k] * W[o * 768 + k];
      out[i * 768 + o] = s;
    }
}, 1);
report(jsMatmul);
// A forward does 4 projections plus attention; compare per-projection cost.
console.log(`\nWASM forward (4 projections + attention) vs 4 plain-JS projections: x${((4 * jsMatmul.median) / plain.median).toFixed(2)} faster`);
console.log(`heap in use after the run: ${(lab.heapInUse() / 1048576).toFixed(1)} MiB`);

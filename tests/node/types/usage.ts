// Compiled by types.test.mjs: every call of the public API, with the types the .d.ts promises.
import { loadAttentionLab, AttentionError, type AttentionLab, type LoadOptions, type CoreFileName, type ClassName, type Config, type MultiHeadAttentionConfig, type Tensor, type Stage, type StageId, type StageDisplay, type CopyReport, type Diagnostic, type CheckFile, type CheckReport } from "attention-lab";

async function main(): Promise<void> {
  const lab = await loadAttentionLab();
  const names: string[] = lab.classes;
  const slots = lab.slots("MultiHeadAttention");
  const pos: number = slots[0].position;
  const parsed = lab.parseCall("MultiHeadAttention(768, 768, 1024, 0.0, 12)");
  const diags: Diagnostic[] = lab.check(parsed.className, parsed.config, { inputShape: [1, 6, 768] });
  const d = lab.describe("MultiHeadAttention", parsed.config);
  const count: number | undefined = d.parameterCount;
  const setup = lab.setup("MultiHeadAttention", parsed.config, { inputShape: [1, 6, 768], training: false, trace: true });
  const setupBytes: number | undefined = setup.memory?.bytes;
  const setupDiags: Diagnostic[] = setup.ok ? setup.diagnostics : setup.description.diagnostics;
  const ran = lab.run("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { shape: [1, 6, 3], data: new Float32Array(18) }, { seed: 123, training: false });
  const ranStages: Stage[] = ran.trace ?? [];
  const ranWidth: number = ran.outputWidth + ran.output.shape[2] + ran.warnings.length;
  const heads: "single" | "modules" | "fused" | undefined = lab.classFacts("GroupedQueryAttention")?.heads;
  const latent: number | null | undefined = lab.describe("MultiHeadLatentAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 2, latent_dim: null }).latentDim;
  const gpt2 = await lab.loadGPT2(new ArrayBuffer(8), { num_heads: 2 });
  const run = await gpt2.run([464, 3139], { onProgress: (p) => p.done / p.total, signal: new AbortController().signal });
  const firstWeights: Tensor = run.layers[0].attnWeights;
  const next: number = run.nextTokens[0].id + run.lastLogits[0] + gpt2.config.n_layer + gpt2.estimateBytes(2);
  const small = await gpt2.run([464, 3139], { attention: "thumbnails" });
  const thumbnail: Tensor = small.layers[0].thumbnail;
  const firstTokens: Tensor = small.layers[0].firstTokens;
  const thumbnailBytes: number = gpt2.estimateBytes(2, { attention: "thumbnails" }) + thumbnail.shape[2] + firstTokens.shape[2] + small.nextTokens[0].id;
  const realInput: Tensor = await gpt2.attentionInput([464], 0);
  const written = await gpt2.generate([464, 3139], {
    maxNewTokens: 3, temperature: 0.7, topK: 50, eosId: 50256, generator: lab.manualSeed(123), cache: true, resident: null,
    onToken: (s) => s.token + s.prob + s.top[0].id + s.cacheTokens + s.cacheBytes + s.ms, signal: new AbortController().signal,
  });
  const writtenIds: number[] = written.tokenIds;
  const stopped: "eos" | "maxNewTokens" = written.stoppedBy;
  const writtenFacts: number = written.steps.length + written.estimateBytes + (written.resident ? 1 : 0) + writtenIds.length + stopped.length;
  gpt2.dispose();
  const file = await lab.openCheckpoint(new Blob([new Uint8Array(8)]));
  const sized: number = file.size + file.keys + file.dataStart;
  const fromFile = await lab.loadCheckpoint(file, { layer: 1 });
  const fileInput: Tensor = await lab.checkpointInput(file, { tokenIds: [464], layer: 1, num_heads: 2 });
  (await lab.loadGPT2(file)).dispose();
  fromFile.module.dispose();
  file.dispose();
  const gen = lab.manualSeed(123);
  const r: Tensor = gen.rand([2, 3]);
  const dropped: Tensor = gen.dropout(r, 0.5);
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: gen });
  const width: number = m.outputWidth + m.headDim + m.parameterCount;
  const rule: string = m.outputWidthRule;
  m.setParameter("out_proj.bias", { shape: [2], data: [0, 0] });
  const result = m.forward({ shape: [1, 6, 3], data: new Float32Array(18) }, { training: false, trace: true });
  const stages: Stage[] = result.trace; // trace: true gives the trace, always (TracedForwardResult)
  const maybe: Stage[] | undefined = m.forward({ shape: [1, 6, 3], data: new Float32Array(18) }, { training: false, trace: stages.length > 0 }).trace;
  const stageIds: StageId[] = stages.map((s) => s.id);
  const heatmaps: StageDisplay[] = stages.filter((s) => s.display !== "vectors").map((s) => s.display);
  const v1 = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 });
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 });
  const report: CopyReport = lab.copyWeights(v2, v1, { W_query: { copy: true, transpose: true } }, { tokens: lab.bookTokens() });
  const agree: boolean = report.agree && report.matrices[0].action === "transposed";
  const checkFile: CheckFile = { call: "SelfAttention_v2(3, 2)", stateDict: v2.parameters(), x: lab.bookTokens(), output: v2.forward(lab.bookTokens()).output, stages: {} };
  const verdict: CheckReport = lab.checkModule(checkFile);
  const firstCause: string | undefined = verdict.causes.find((c) => c.explains)?.id;
  const verdictOfFile: Promise<CheckReport> = lab.checkModule(new Uint8Array(0));
  verdictOfFile.catch(() => undefined);
  console.log(verdict.agree, verdict.maxAbsDiff, verdict.firstStage, firstCause, verdict.notes);
  const heap: number = lab.heapInUse() + lab.handlesInUse();
  v1.dispose();
  gen.dispose();
  const t: Tensor = lab.seededTokens(4, 3, 1);
  try {
    lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 });
  } catch (e) {
    if (e instanceof AttentionError) console.log(e.code, e.slot, e.hint, e.diagnostics.length);
  }
  // The config types: a literal class name checks its config; strings are the slots' Python text.
  const typed: MultiHeadAttentionConfig = { d_in: "768", d_out: 768, context_length: "1024", dropout: "0.0", num_heads: 12, qkv_bias: "False" };
  const gqa = lab.describe("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.1, num_heads: 4, num_kv_groups: 2, dtype: "torch.float32", qkv_bias: true });
  const swa = lab.setup("MultiHeadAttentionWithSWA", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 2, sliding_window_size: "None" });
  // A parsed call's config goes with any class name (the core diagnoses it), also a literal one.
  const fromText = lab.create("MultiHeadAttention", parsed.config);
  const ranText = lab.run("MultiHeadAttention", parsed.config, { shape: [1, 6, 768], data: new Float32Array(6 * 768) });
  const checked: Diagnostic[] = lab.check("MultiHeadAttention", parsed.config);
  // A class name that is a string or a whole-ClassName variable takes any config: the core checks it.
  const someName: string = parsed.className;
  const someClass: ClassName = lab.classes[0];
  const loose: Config = { d_in: 3, d_out: 2, d_inn: 4 };
  const anyDiags: Diagnostic[] = lab.check(someName, { d_inn: 3 });
  const anyDescription = lab.describe(someName, loose);
  const anyModule = lab.create(someClass, loose);
  const anyBytes: number = lab.estimateBytes(someClass, m.config, [1, 6, 3]).bytes;
  const facts = lab.describe("MultiHeadAttention").class;
  // The README's library example, as written there.
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
  const mha = lab.create("MultiHeadAttention", config, { generator: gen });
  const s = lab.setup("MultiHeadAttention", config, { inputShape: [2, 6, 3] });
  const rr = lab.run("MultiHeadAttention", config, { shape: [2, 6, 3], data: new Float32Array(36) }, { seed: 123 });
  console.log(typed, gqa, swa, fromText, ranText, checked, anyDiags, anyDescription, anyModule, anyBytes, facts, mha, s, rr);
  console.log(names, pos, diags, count, dropped, width, rule, stages, maybe, stageIds, heatmaps, agree, heap, t, sized, fileInput);
}
// loadAttentionLab's options: where the .wasm files are (a folder, or a function from a file's name
// to its URL), where one .wasm is (a string or a URL) or its bytes; the same lab type.
async function loading(): Promise<void> {
  const cdn = (file: CoreFileName): string => `https://cdn.example.test/attention-lab/${file}`;
  const options: LoadOptions[] = [{ wasmPaths: "/assets/attention-lab/" }, { wasmPaths: new URL("https://example.test/lib/") }, { wasmPaths: cdn }, { wasmPaths: (file) => new URL(file, "https://example.test/lib/"), threads: 2 }, { wasmUrl: "/assets/attention_core.wasm" }, { wasmUrl: new URL("https://example.test/attention_core.wasm") }, { wasmBinary: new ArrayBuffer(8) }, { wasmBinary: new Uint8Array(8) }, {}];
  const labs: AttentionLab[] = await Promise.all(options.map((o) => loadAttentionLab(o)));
  console.log(labs.length);
}
void main();
void loading();

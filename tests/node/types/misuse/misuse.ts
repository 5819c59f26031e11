// Must NOT compile: types.test.mjs checks that tsc rejects each expected line, so the .d.ts is really consulted.
import { loadAttentionLab, type Stage, type StageId } from "attention-lab";

async function main(): Promise<void> {
  const lab = await loadAttentionLab();
  // expect: Type 'number' is not assignable to type 'string'
  const width: string = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }).outputWidth;
  // expect: Argument of type 'number' is not assignable to parameter of type 'AttentionModule'
  lab.copyWeights(1, 2, {});
  // expect: Type '"attn_weight"' is not assignable to type 'StageId'
  const stage: StageId = "attn_weight";
  // expect: Type 'Stage\[\] \| undefined' is not assignable to type 'Stage\[\]'
  const untraced: Stage[] = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }).forward({ shape: [6, 3], data: new Float32Array(18) }).trace;
  // expect: Type 'number' is not assignable to type 'string | URL'
  await loadAttentionLab({ wasmPaths: (file) => file.length });
  console.log(width, stage, untraced);
}
void main();

// Must NOT compile: types.test.mjs checks that tsc rejects it, so the .d.ts is really consulted.
import { loadAttentionLab } from "attention-lab";

async function main(): Promise<void> {
  const lab = await loadAttentionLab();
  const width: string = lab.create("MultiHeadAttention", {}).outputWidth;  // number, not string
  lab.copyWeights(1, 2, {});  // modules, not numbers
  console.log(width);
}
void main();

// The code panels' cases: setups whose "The same in PyTorch" code tests/fixtures/generate_code_panels.py
// runs in PyTorch (tests/fixtures/code_panels.json holds each case's code and PyTorch's context_vecs).
// The suites check that the page still shows exactly that code, and that its numbers are PyTorch's.
import { readFileSync } from "node:fs";
import { GPT2_FIXTURES, gpt2File } from "./gpt2-files.mjs";
import { attnPrefix, loadCode, runCode } from "../web/app/checkpoint-code.js";

export const CODE_PANELS_PATH = new URL("./fixtures/code_panels.json", import.meta.url);

/** The committed cases with their code and PyTorch's outputs, or null before the first run of the generator. */
export function codePanelFixtures() {
  try {
    return JSON.parse(readFileSync(CODE_PANELS_PATH, "utf8"));
  } catch {
    return null;
  }
}

/** The page's code panel on these links (the first one: the page as it opens). */
export const PAGE_CASES = [
  { name: "book_default", query: "" },
  { name: "mha_sentence_batch2", query: "?class=MultiHeadAttention&d_in=4&d_out=4&context_length=8&dropout=0.0&num_heads=2&tokens=the+cat+saw+the+dog&seed=7&batch=2" },
  { name: "causal_train_dropout", query: "?class=CausalAttention&d_in=3&d_out=2&context_length=6&dropout=0.5&seed=123&mode=train" },
  { name: "wrapper_random_tokens", query: "?class=MultiHeadAttentionWrapper&d_in=3&d_out=1&context_length=8&dropout=0.0&num_heads=2&num_tokens=5&seed=5" },
  { name: "gqa_eval", query: "?class=GroupedQueryAttention&d_in=6&d_out=6&dropout=0.0&num_heads=6&num_kv_groups=2&tokens=a+b+c+d&seed=3&mode=eval" },
  // The compare panel's lines join the code view once a comparison is on screen: what the code prints
  // last is the largest difference the page shows (diff: where the page shows it, a data-value).
  { name: "copy_v2_to_v1", query: "?class=SelfAttention_v2&d_in=3&d_out=2", steps: [{ click: "copy-button" }], waitFor: "copy-verdict", diff: "[data-testid=copy-maxdiff]" },
  {
    name: "copy_w_key_untransposed", query: "?class=SelfAttention_v2&d_in=3&d_out=3",
    steps: [{ uncheck: "transpose-W_key" }, { click: "copy-button" }], waitFor: "copy-verdict", diff: "[data-testid=copy-maxdiff]",
  },
  {
    name: "wrapper_vs_fused", query: "?class=MultiHeadAttentionWrapper&d_in=3&d_out=2&context_length=6&dropout=0.0&num_heads=2",
    steps: [{ click: "compare-button" }], waitFor: "compare-verdict", diff: "[data-compare-stage=output]",
  },
  // A class id with its book folder (Name@folder), URL-encoded as any value is.
  { name: "llama2_rope", query: "?class=MultiHeadAttention%40ch05%2F07_gpt_to_llama&d_in=4&d_out=4&context_length=8&num_heads=2&tokens=the+cat+saw+the+dog&seed=7&batch=2" },
  // GatedMultiHeadAttention (ch04/08_deltanet) in training: W_gate's draws and the dropout stream
  { name: "gated_train_dropout", query: "?class=GatedMultiHeadAttention&d_in=4&d_out=4&context_length=6&dropout=0.5&num_heads=2&qkv_bias=True&num_tokens=5&seed=9&mode=train" },
];

/** A page case's clicks (after its first run), then what it waits for. */
export async function applySteps(page, c) {
  for (const step of c.steps ?? []) {
    if (step.click) await page.getByTestId(step.click).click();
    if (step.uncheck) await page.getByTestId(step.uncheck).uncheck();
  }
  if (c.waitFor) await page.getByTestId(c.waitFor).waitFor();
}

/** The largest difference the page shows for a comparison case (its diff element's data-value). */
export async function pageDiff(page, c) {
  return Number(await page.locator(`attention-lab >> ${c.diff}`).first().getAttribute("data-value"));
}

/** The number in the last line PyTorch printed, e.g. "tensor(1.1921e-07, grad_fn=<MaxBackward1>)". */
export function printedNumber(printed) {
  const m = /tensor\(([-+0-9.e]+|nan|inf)/.exec(printed.at(-1) ?? "");
  return m ? Number(m[1]) : NaN;
}

/** The checkpoint panel: a layer of a whole synthetic GPT-2 file (tests/gpt2-files.mjs) on token ids. */
export const CHECKPOINT_CASES = [
  { name: "tiny_layer0", file: "tiny_f32", layer: 0, ids: [15496, 11, 616, 1438, 318] },
  { name: "tiny_layer1", file: "tiny_f32", layer: 1, ids: [15496, 11, 616, 1438, 318] },
];

/**
 * The checkpoint panel's code for a case, made by the functions the panel calls with what the
 * library reports, and the library's own output for it: {code, fileName, output: {shape, data}}.
 */
export async function checkpointCase(lab, c) {
  const spec = GPT2_FIXTURES.cases.find((s) => s.name === c.file);
  const fileName = `${c.file}.safetensors`;
  const blob = new Blob([gpt2File(lab, spec)]);
  const { module, report } = await lab.loadCheckpoint(blob, { layer: c.layer, num_heads: spec.n_head });
  try {
    const call = lab.describe(module.className, module.config).pythonCall;
    const code = [...loadCode(fileName, module, report, call), ...runCode(attnPrefix(report), c.ids, module.config.d_in, module.config.num_heads)].join("\n");
    const x = await lab.checkpointInput(blob, { tokenIds: c.ids, layer: c.layer, num_heads: spec.n_head });
    const { output } = module.forward(x, { training: false });
    return { code, fileName, output: { shape: output.shape.slice(), data: Float32Array.from(output.data) } };
  } finally {
    module.dispose();
  }
}

/**
 * "Check your own module": readers' modules of tests/fixtures/check_module_fixtures.json whose verdict's
 * "confirm it in PyTorch" code tests/fixtures/generate_check_confirm.py runs (a cause at a stage, at the
 * output, a NaN row, a single-head class, a mistake outside the catalogue, training mode from a seed).
 */
export const CHECK_CASES = [
  "MultiHeadAttention scale_d_out qkv_bias=False with stages",
  "MultiHeadAttention mask_diagonal qkv_bias=True",
  "MultiHeadAttention merge_view_no_transpose qkv_bias=True",
  "CausalAttention query_from_key qkv_bias=False with stages",
  "MultiHeadAttention mask_offset qkv_bias=False with stages",
  "MultiHeadAttention dropout_missing seed=123 qkv_bias=False with stages",
];

export const CHECK_CONFIRM_PATH = new URL("./fixtures/check_confirm.json", import.meta.url);

/** The committed confirm codes with what PyTorch printed, or null before the first run of the generator. */
export function checkConfirmFixtures() {
  try {
    return JSON.parse(readFileSync(CHECK_CONFIRM_PATH, "utf8"));
  } catch {
    return null;
  }
}

/** A check case's report (lab.checkModule on the fixture's tensors) and the confirm code the page shows for it. */
export async function checkConfirmCase(lab, name) {
  const { confirmCode } = await import("../web/app/check-code.js");
  const c = JSON.parse(readFileSync(new URL("./fixtures/check_module_fixtures.json", import.meta.url), "utf8")).cases.find((k) => k.name === name);
  const tensor = (t) => ({ shape: t.shape, data: Float32Array.from(t.data, (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v)) });
  const report = lab.checkModule({
    call: c.call, stateDict: c.state_dict.map((t) => ({ name: t.name, ...tensor(t) })), x: tensor(c.x), output: tensor(c.output),
    stages: c.stages ? Object.fromEntries(Object.entries(c.stages).map(([k, t]) => [k, tensor(t)])) : undefined,
    seed: c.seed,
  });
  const fileName = `${name.replace(/[^A-Za-z0-9]+/g, "_")}.pt`;
  const book = lab.classFacts(report.className).book;
  return { report, fileName, code: confirmCode({ report, book, fileName }) };
}

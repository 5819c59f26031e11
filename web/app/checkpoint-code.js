// The PyTorch lines of the checkpoint panel: how the book's chapter 5 puts a GPT-2 file's c_attn and
// c_proj into the book's attention module, and the forward on the token ids. Pure text, no DOM.
import { pyString } from "./python-code.js";

/** The PyTorch lines of this load: the fused c_attn split into q, k, v, each transposed; c_proj into out_proj. */
export function loadCode(fileName, module, r, call) {
  const used = new Set(r.used);
  const attn = attnPrefix(r);
  const d = module.config.d_in;
  const has = (suffix) => used.has(attn + suffix);
  const L = [
    "import torch",
    "from safetensors.torch import load_file",
    "",
    `sd = load_file(${pyString(fileName)})`,
    `p = ${pyString(attn)}`,
    `d = ${d}`,
    `mha = ${call}`,
    `qw, kw, vw = sd[p + "c_attn.weight"].split(d, dim=1)  # Conv1D keeps (in, out) = (${d}, ${3 * d}): split the columns`,
    "mha.W_query.weight = torch.nn.Parameter(qw.T)  # nn.Linear keeps (out, in)",
    "mha.W_key.weight = torch.nn.Parameter(kw.T)",
    "mha.W_value.weight = torch.nn.Parameter(vw.T)",
  ];
  if (has("c_attn.bias")) {
    L.push('qb, kb, vb = sd[p + "c_attn.bias"].split(d)');
    L.push("mha.W_query.bias = torch.nn.Parameter(qb)", "mha.W_key.bias = torch.nn.Parameter(kb)", "mha.W_value.bias = torch.nn.Parameter(vb)");
  }
  if (has("c_proj.weight")) L.push('mha.out_proj.weight = torch.nn.Parameter(sd[p + "c_proj.weight"].T)');
  if (has("c_proj.bias")) L.push('mha.out_proj.bias = torch.nn.Parameter(sd[p + "c_proj.bias"])');
  L.push("mha.eval()");
  return L;
}

/** "transformer.h.1.attn." from the report's c_attn key. */
export function attnPrefix(r) {
  return r.used.map((k) => /^(.*\.)c_attn\.weight$/.exec(k)?.[1]).find(Boolean) ?? "h.0.attn.";
}

/** The layer's input and forward in PyTorch: ln_1(wte[ids] + wpe[:num_tokens]), then the module. */
export function runCode(attn, ids, d) {
  const block = attn.replace(/attn\.$/, ""); // "transformer.h.1."
  const model = block.replace(/h\.\d+\.$/, ""); // "transformer."
  const n = ids.length;
  return [
    "",
    `ids = torch.tensor([[${ids.join(", ")}]])  # (1, ${n})`,
    `x = sd[${pyString(`${model}wte.weight`)}][ids] + sd[${pyString(`${model}wpe.weight`)}][:${n}]  # (1, ${n}, ${d})`,
    `x = torch.nn.functional.layer_norm(x, (d,), sd[${pyString(`${block}ln_1.weight`)}], sd[${pyString(`${block}ln_1.bias`)}], eps=1e-5)  # ln_1`,
    `context_vecs = mha(x)  # (1, ${n}, ${d})`,
  ];
}

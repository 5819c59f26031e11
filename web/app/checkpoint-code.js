// The PyTorch lines of the checkpoint panel: how the book's chapter 5 puts a GPT-2 file's c_attn and
// c_proj into the book's attention module, and the forward on the token ids. Pure text, no DOM.
import { pyString } from "./python-code.js";

/**
 * The PyTorch lines of this load: the fused c_attn split into q, k, v, each transposed; c_proj into
 * out_proj. `format` "torch" (a torch.save file: pytorch_model.bin, .pth) loads with torch.load.
 */
export function loadCode(fileName, module, r, call, format = "safetensors") {
  const used = new Set(r.used);
  const attn = attnPrefix(r);
  const d = module.config.d_in;
  const has = (suffix) => used.has(attn + suffix);
  const L = [
    "import torch",
    ...(format === "torch" ? ["", `sd = torch.load(${pyString(fileName)}, map_location="cpu")`] : ["from safetensors.torch import load_file", "", `sd = load_file(${pyString(fileName)})`]),
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

/**
 * The layer's input and forward in PyTorch, as the page computes it: ln_1 of the residual stream
 * entering block `layer` (layer 0: of wte[ids] + wpe[:num_tokens]; a later layer runs the blocks before
 * it first, as the book's chapter 4 TransformerBlock with the file's Conv1D weights), then the module.
 * @param attn      the layer's attention prefix ("transformer.h.1.attn.")
 * @param ids       the token ids
 * @param d         the model width (d_in)
 * @param numHeads  the heads of every block (the loaded module's num_heads)
 */
export function runCode(attn, ids, d, numHeads) {
  const block = attn.replace(/attn\.$/, ""); // "transformer.h.1."
  const model = block.replace(/h\.\d+\.$/, ""); // "transformer."
  const layer = Number(/h\.(\d+)\.$/.exec(block)?.[1] ?? 0);
  const n = ids.length;
  const L = [
    "",
    `ids = torch.tensor([[${ids.join(", ")}]])  # (1, ${n})`,
    `x = sd[${pyString(`${model}wte.weight`)}][ids] + sd[${pyString(`${model}wpe.weight`)}][:${n}]  # (1, ${n}, ${d})`,
  ];
  if (layer > 0) L.push(...blocksBefore(model, layer, numHeads, n));
  L.push(
    `x = torch.nn.functional.layer_norm(x, (d,), sd[${pyString(`${block}ln_1.weight`)}], sd[${pyString(`${block}ln_1.bias`)}], eps=1e-5)  # ln_1`,
    `context_vecs = mha(x)  # (1, ${n}, ${d})`,
  );
  return L;
}

/** Blocks 0 .. layer-1 on x: the book's TransformerBlock (chapter 4, dropout off) over the file's weights. */
function blocksBefore(model, layer, numHeads, n) {
  return [
    "",
    `# Layer ${layer} sees what block${layer > 1 ? `s 0 to ${layer - 1}` : " 0"} leave${layer > 1 ? "" : "s"}: the book's TransformerBlock (chapter 4) with the file's weights.`,
    "F = torch.nn.functional",
    `H = ${numHeads}  # heads per block`,
    "",
    "def ln(x, name):",
    "    return F.layer_norm(x, (d,), sd[name + \".weight\"], sd[name + \".bias\"], eps=1e-5)",
    "",
    "def attention(x, a):  # chapter 3's multi-head attention; Conv1D weights are used as x @ W + b",
    "    q, k, v = (x @ sd[a + \"c_attn.weight\"] + sd[a + \"c_attn.bias\"]).split(d, dim=2)",
    `    q, k, v = (t.view(1, ${n}, H, d // H).transpose(1, 2) for t in (q, k, v))`,
    `    scores = (q @ k.transpose(2, 3)).masked_fill(torch.ones(${n}, ${n}, dtype=torch.bool).triu(1), -torch.inf)`,
    "    weights = torch.softmax(scores / (d // H) ** 0.5, dim=-1)",
    `    return (weights @ v).transpose(1, 2).reshape(1, ${n}, d) @ sd[a + "c_proj.weight"] + sd[a + "c_proj.bias"]`,
    "",
    "def block(x, b):",
    "    x = x + attention(ln(x, b + \"ln_1\"), b + \"attn.\")",
    "    h = F.gelu(ln(x, b + \"ln_2\") @ sd[b + \"mlp.c_fc.weight\"] + sd[b + \"mlp.c_fc.bias\"], approximate=\"tanh\")",
    "    return x + h @ sd[b + \"mlp.c_proj.weight\"] + sd[b + \"mlp.c_proj.bias\"]",
    "",
    "with torch.no_grad():",
    `    for i in range(${layer}):`,
    `        x = block(x, f${pyString(`${model}h.{i}.`)})`,
  ];
}

/**
 * The largest difference between a traced layer's attention weights (its attn_weights stage,
 * (1, n_head, T, T)) and the whole model's for that layer (firstTokens, (1, n_head, F, F), F <= T):
 * {maxDiff, heads, tokens}; null when the shapes do not fit (another module, other tokens).
 */
export function weightsAgreement(trace, firstTokens) {
  const st = trace.find((s) => s.id === "attn_weights");
  if (!st || st.shape.length !== 4 || firstTokens.shape.length !== 4) return null;
  const [, H, T] = st.shape;
  const [, h, F] = firstTokens.shape;
  if (h !== H || F > T) return null;
  let maxDiff = 0;
  for (let k = 0; k < H; k++) {
    for (let i = 0; i < F; i++) {
      for (let j = 0; j < F; j++) maxDiff = Math.max(maxDiff, Math.abs(st.data[(k * T + i) * T + j] - firstTokens.data[(k * F + i) * F + j]));
    }
  }
  return { maxDiff, heads: H, tokens: F };
}

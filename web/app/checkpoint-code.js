// The PyTorch lines of the checkpoint panel: how the book's chapter 5 puts a GPT-2 file's c_attn and
// c_proj into the book's attention module, and the forward on the token ids. Pure text, no DOM.
import { FLAT, pyString } from "./python-code.js";

/**
 * The PyTorch lines of this load: the fused c_attn split into q, k, v, each transposed; c_proj into
 * out_proj. A file of the book's GPTModel holds MultiHeadAttention's own parameters: load_state_dict.
 * `format` "torch" (a torch.save file: pytorch_model.bin, .pth) loads with torch.load.
 */
export function loadCode(fileName, module, r, call, format = "safetensors") {
  if (r.layout === "book") return bookLoadCode(fileName, r, call, format);
  const used = new Set(r.used);
  const attn = attnPrefix(r);
  const d = module.config.d_in;
  const has = (suffix) => used.has(attn + suffix);
  const L = [
    "import torch",
    ...readLines(fileName, format, attn),
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

/**
 * The lines that read the file's state dict into `sd`: safetensors' load_file, or torch.load for a
 * torch.save file, whose nested dicts (a wrapping {"model_state_dict": ...}) are flattened to the dotted
 * keys the library reads when `p` has something before the blocks.
 */
function readLines(fileName, format, p) {
  if (format !== "torch") return ["from safetensors.torch import load_file", "", `sd = load_file(${pyString(fileName)})`];
  const load = `torch.load(${pyString(fileName)}, map_location="cpu")`;
  return /^(transformer\.)?(h|trf_blocks)\.\d+\./.test(p) ? ["", `sd = ${load}`] : ["", ...FLAT, `sd = flat(${load})`];
}

function bookLoadCode(fileName, r, call, format) {
  return [
    "import torch",
    ...readLines(fileName, format, attnPrefix(r)),
    `p = ${pyString(attnPrefix(r))}`,
    `mha = ${call}`,
    "# the book's GPTModel saved this attention module's own parameters (nn.Linear keeps (out, in)): each copied as is",
    "mha.load_state_dict({k[len(p):]: v for k, v in sd.items() if k.startswith(p)}, strict=False)  # the mask buffer: checked, not required",
    "mha.eval()",
  ];
}

/** "transformer.h.1.attn." from the report's c_attn key ("module.trf_blocks.1.att." from the book's W_query.weight). */
export function attnPrefix(r) {
  return r.used.map((k) => /^(.*\.)(c_attn|W_query)\.weight$/.exec(k)?.[1]).find(Boolean) ?? "h.0.attn.";
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
export function runCode(attn, ids, d, numHeads, config) {
  if (/(^|\.)trf_blocks\.\d+\.att\.$/.test(attn)) return bookRunCode(attn, ids, d, numHeads, config);
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

/** runCode for a file of the book's GPTModel: its own names, its TransformerBlock for the blocks before. */
function bookRunCode(attn, ids, d, numHeads, config) {
  const block = attn.replace(/att\.$/, ""); // "module.trf_blocks.1."
  const model = block.replace(/trf_blocks\.\d+\.$/, ""); // "module."
  const layer = Number(/trf_blocks\.(\d+)\.$/.exec(block)?.[1] ?? 0);
  const n = ids.length;
  const L = [
    "",
    `ids = torch.tensor([[${ids.join(", ")}]])  # (1, ${n})`,
    `x = sd[${pyString(`${model}tok_emb.weight`)}][ids] + sd[${pyString(`${model}pos_emb.weight`)}][:${n}]  # (1, ${n}, ${d})`,
  ];
  if (layer > 0) {
    L.push(
      "",
      `# Layer ${layer} sees what the blocks before it leave: the book's TransformerBlock (chapter 4) with the file's weights.`,
      "from previous_chapters import TransformerBlock",
      `cfg = {"emb_dim": ${d}, "context_length": ${config?.context_length ?? 1024}, "n_heads": ${numHeads}, "drop_rate": 0.0, "qkv_bias": ${config?.qkv_bias ? "True" : "False"}}`,
      "with torch.no_grad():",
      `    for i in range(${layer}):`,
      `        b = f${pyString(`${model}trf_blocks.{i}.`)}`,
      "        blk = TransformerBlock(cfg)",
      "        blk.load_state_dict({k[len(b):]: v for k, v in sd.items() if k.startswith(b)}, strict=False)",
      "        x = blk.eval()(x)",
    );
  }
  L.push(
    `x = torch.nn.functional.layer_norm(x, (${d},), sd[${pyString(`${block}norm1.scale`)}], sd[${pyString(`${block}norm1.shift`)}], eps=1e-5)  # norm1`,
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

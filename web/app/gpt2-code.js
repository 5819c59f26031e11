// The PyTorch lines that build the model a generation runs on, as the book's readers do: the book's
// GPTModel(cfg) with the file's state_dict (load_state_dict: every tensor as is), or a Hugging Face file
// through chapter 5's load_weights_into_gpt (c_attn split in three and transposed, ...). Pure text.
import { pyString } from "./python-code.js";

/** The key prefix of a model's file, from its mapping's token embedding line ("module." of "module.tok_emb.weight (...)"). */
export function keyPrefix(config) {
  const line = config.mapping.find((l) => /(^|\.)(tok_emb|wte)\.weight /.test(l)) ?? "";
  return /^(.*?)(tok_emb|wte)\.weight /.exec(line)?.[1] ?? "";
}

/**
 * @param config    the model's config (lab.loadGPT2's model.config)
 * @param fileName  the file's name (a .pth / .bin is read with torch.load, else safetensors' load_file)
 */
export function modelCode(config, fileName) {
  const pth = /\.(pth|pt|bin)$/i.test(fileName);
  const cfg = `{"vocab_size": ${config.vocab_size}, "context_length": ${config.n_ctx}, "emb_dim": ${config.n_embd}, "n_heads": ${config.n_head}, ` +
    `"n_layers": ${config.n_layer}, "drop_rate": 0.0, "qkv_bias": ${config.qkv_bias ? "True" : "False"}}`;
  const L = ["import torch"];
  if (!pth) L.push("from safetensors.torch import load_file");
  L.push("from previous_chapters import GPTModel, generate  # the book's chapter 4 and 5 code", "", `cfg = ${cfg}`, "model = GPTModel(cfg)");
  const read = pth ? `sd = torch.load(${pyString(fileName)}, map_location="cpu")` : `sd = load_file(${pyString(fileName)})`;
  const prefix = keyPrefix(config);
  if (config.layout === "book") {
    if (config.n_out !== config.vocab_size) L.push(`model.out_head = torch.nn.Linear(${config.n_embd}, ${config.n_out})  # chapter 6's classifier head`);
    L.push(read, prefix ? `model.load_state_dict({k[${prefix.length}:]: v for k, v in sd.items()})  # the keys were saved under ${pyString(prefix)}` : "model.load_state_dict(sd)");
  } else {
    const params = prefix ? `{k[${prefix.length}:]: v for k, v in sd.items()}` : "sd";
    L.push(read, `load_weights_into_gpt(model, ${params})  # chapter 5: c_attn split in three and transposed, Conv1D weights transposed`);
  }
  L.push("model.eval()", "");
  return L;
}

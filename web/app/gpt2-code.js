// The PyTorch lines that build the model a generation runs on, as the book's readers do: the book's
// GPTModel(cfg) with the file's state_dict (load_state_dict: every tensor as is), or a Hugging Face file
// through chapter 5's load_weights_into_gpt (c_attn split in three and transposed, ...). Pure text.
import { FLAT, pyString } from "./python-code.js";

/** The model's own keys of `sd`, without `prefix` (others, such as an optimizer's state beside it, left out). */
function under(prefix) {
  return `{k[${prefix.length}:]: v for k, v in sd.items() if k.startswith(${pyString(prefix)})}`;
}

/** The key prefix of a model's file, from its mapping's token embedding line ("module." of "module.tok_emb.weight (...)"). */
export function keyPrefix(config) {
  const line = config.mapping.find((l) => /(^|\.)(tok_emb|wte)\.weight /.test(l)) ?? "";
  return /^(.*?)(tok_emb|wte)\.weight /.exec(line)?.[1] ?? "";
}

/**
 * @param config    the model's config (lab.loadGPT2's model.config): its format "torch" reads with
 *                  torch.load (nested dicts such as {"model_state_dict": ...} flattened to the dotted keys
 *                  the library reads), else safetensors' load_file
 * @param fileName  the file's name, as the reader saved it
 */
export function modelCode(config, fileName) {
  const pth = config.format === "torch";
  const cfg = `{"vocab_size": ${config.vocab_size}, "context_length": ${config.n_ctx}, "emb_dim": ${config.n_embd}, "n_heads": ${config.n_head}, ` +
    `"n_layers": ${config.n_layer}, "drop_rate": 0.0, "qkv_bias": ${config.qkv_bias ? "True" : "False"}}`;
  const L = ["import torch"];
  if (!pth) L.push("from safetensors.torch import load_file");
  L.push("from previous_chapters import GPTModel, generate  # the book's chapter 4 and 5 code", "");
  const prefix = keyPrefix(config);
  const read = !pth ? `sd = load_file(${pyString(fileName)})`
    : prefix ? `sd = flat(torch.load(${pyString(fileName)}, map_location="cpu"))` : `sd = torch.load(${pyString(fileName)}, map_location="cpu")`;
  if (pth && prefix) L.push(...FLAT);
  L.push(`cfg = ${cfg}`, "model = GPTModel(cfg)");
  if (config.layout === "book") {
    if (config.n_out !== config.vocab_size) L.push(`model.out_head = torch.nn.Linear(${config.n_embd}, ${config.n_out})  # chapter 6's classifier head`);
    L.push(read, prefix ? `model.load_state_dict(${under(prefix)})  # the keys were saved under ${pyString(prefix)}` : "model.load_state_dict(sd)");
  } else {
    const params = prefix ? under(prefix) : "sd";
    L.push(read, `load_weights_into_gpt(model, ${params})  # chapter 5: c_attn split in three and transposed, Conv1D weights transposed`);
  }
  L.push("model.eval()", "");
  return L;
}

// The PyTorch code that reproduces what the widget shows: the seed, the constructor, the input,
// the forward pass and (when one is on screen) the comparison. Pure text, no DOM.
import { f32Text } from "./format.js";

/** A dict of dicts as one dict of dotted keys, as the library reads a torch.save file ("model_state_dict.tok_emb.weight"). */
export const FLAT = [
  "def flat(d, prefix=\"\"):  # {\"model_state_dict\": {...}} -> {\"model_state_dict.tok_emb.weight\": ...}",
  "    out = {}",
  "    for k, v in d.items():",
  "        out.update(flat(v, f\"{prefix}{k}.\") if isinstance(v, dict) else {f\"{prefix}{k}\": v})",
  "    return out",
  "",
];

/** `name = torch.tensor([...])` with one row per line and the token as a comment. */
export function tensorLiteral(name, tensorOrTexts, words) {
  const rows = Array.isArray(tensorOrTexts)
    ? tensorOrTexts.map((r) => r.map((t) => f32Text(Number(t))))
    : Array.from({ length: tensorOrTexts.shape[0] }, (_, r) =>
      Array.from({ length: tensorOrTexts.shape[1] }, (_, j) => f32Text(tensorOrTexts.data[r * tensorOrTexts.shape[1] + j])));
  const lines = [`${name} = torch.tensor(`];
  rows.forEach((row, r) => {
    const open = r === 0 ? "  [[" : "   [";
    const close = r === rows.length - 1 ? "]]" : "],";
    const word = words?.[r];
    lines.push(`${open}${row.join(", ")}${close}${word !== undefined ? `  # ${pyComment(word)}` : ""}`);
  });
  lines.push(")");
  return lines;
}

function pyComment(text) {
  return String(text).replace(/[\r\n]/g, " ");
}

/** A Python string literal (repr-like, double quotes). */
export function pyString(text) {
  return `"${String(text).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

/**
 * The lines that make the tokens `name` (num_tokens, d_in) the way the widget made them.
 * @param o {source: "book" | "custom" | "sentence" | "random", words, tokens (tensor or texts, for book/custom),
 *           dIn, seed, sentenceTokens}
 */
export function inputLines(name, o) {
  const n = o.words.length;
  if (o.source === "book" || o.source === "custom") return tensorLiteral(name, o.tokens, o.words);
  // The embeddings' own generator, apart from torch.manual_seed's (the module's weights and dropout).
  const g = `g = torch.Generator().manual_seed(${o.seed})`;
  if (o.source === "sentence") {
    const L = [`words = ${pyString(o.words.join(" "))}.split()`];
    if (o.sentenceTokens) {
      L.push("vocab = list(dict.fromkeys(words))  # each distinct word once, in first-seen order");
      L.push("ids = torch.tensor([vocab.index(w) for w in words])");
      L.push(g, `${name} = torch.rand(len(vocab), ${o.dIn}, generator=g)[ids]  # (${n}, ${o.dIn})`);
    } else {
      L.push(g, `${name} = torch.rand(len(words), ${o.dIn}, generator=g)  # (${n}, ${o.dIn})`);
    }
    return L;
  }
  return [g, `${name} = torch.rand(${n}, ${o.dIn}, generator=g)  # (${n}, ${o.dIn})`];
}

/** Where a class lives in the book's repository, from the core's facts (describe(...).class.book). */
export function bookHome(book) {
  const where = `${book.folder}/${book.file}`;
  if (book.section) return `the book's chapter ${book.chapter} class, ${book.section} (${where})`;
  return `from the book's chapter ${book.chapter} bonus material (${where})`;
}

/**
 * @param o {className, book (the core's: {chapter, folder, file, section}), pythonName (the core's: "mha", ...), pythonCall, config, seed, source, words,
 *           tokens (texts for book/custom), sentenceTokens, batch (0 for the unbatched classes), training,
 *           outputShape, extra}
 */
export function pythonCode(o) {
  const v = o.pythonName;
  const c = o.config;
  const L = [
    "import torch",
    `# ${o.className}: ${bookHome(o.book)}.`,
    "",
    `torch.manual_seed(${o.seed})`,
    `${v} = ${o.pythonCall}`,
  ];
  for (const line of inputLines("inputs", { ...o, dIn: c.d_in })) L.push(line);
  const n = o.words.length;
  let x = "inputs";
  if (o.batch) {
    x = "batch";
    L.push(o.batch === 1
      ? `batch = inputs.unsqueeze(0)  # (1, ${n}, ${c.d_in})`
      : `batch = torch.stack((${Array(o.batch).fill("inputs").join(", ")}${o.batch === 1 ? "," : ""}), dim=0)  # (${o.batch}, ${n}, ${c.d_in})`);
  }
  if (!o.training) L.push(`${v}.eval()`);
  else if (c.dropout > 0) L.push(`# train mode: dropout(p=${c.dropout}) draws its mask from the global generator, right after the constructor`);
  const shape = o.outputShape ? `  # (${o.outputShape.join(", ")})` : "";
  L.push(`context_vecs = ${v}(${x})${shape}`);
  L.push("print(context_vecs.shape)");
  if (o.extra) L.push(o.extra);
  return L.join("\n");
}

// A GPT-2 file's shape from its header alone, read through its checkpoint layout (checkpoint_layout.hpp):
// the embeddings, every block's tensors, the final norm and the head, each checked for the width the token
// embedding gives; and the mapping text the page shows.
#include <algorithm>
#include <set>

#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"
#include "gpt2_block.hpp"

namespace attention_lab {

namespace {

/// Block numbers of the keys "<start><L>.<rest>" (L in canonical digits, as parse order gives them).
std::set<int64_t> block_numbers(const SafetensorsHeader& header, const std::string& start) {
  std::set<int64_t> out;
  // entries are sorted by key: the keys under `start` are one run of them
  auto it = std::lower_bound(header.entries.begin(), header.entries.end(), start, [](const SafetensorsEntry& e, const std::string& k) { return e.key < k; });
  for (; it != header.entries.end() && it->key.compare(0, start.size(), start) == 0; ++it) {
    const size_t dot = it->key.find('.', start.size());
    if (dot == std::string::npos) continue;
    const std::string digits = it->key.substr(start.size(), dot - start.size());
    if (digits.empty() || digits.size() > 6 || (digits.size() > 1 && digits[0] == '0') ||
        !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;
    out.insert(std::stoll(digits));
  }
  return out;
}

std::string block_list(const std::set<int64_t>& blocks) {
  std::string s;
  size_t shown = 0;
  for (const int64_t b : blocks) {
    if (++shown > 8) return s + ", ... (" + std::to_string(blocks.size()) + " in all)";
    s += (s.empty() ? "" : ", ") + std::to_string(b);
  }
  return s;
}

/// The required block rows (the optional ones: the book's q/k/v biases, checked apart).
std::vector<const LayoutTensor*> required_rows(const CheckpointLayout& layout) {
  std::vector<const LayoutTensor*> rows;
  for (const LayoutTensor& row : layout.block)
    if (!row.optional) rows.push_back(&row);
  return rows;
}

/// n_layer: the blocks must be 0 .. n - 1, each with its required tensors (a gap or a partial block would
/// run a shorter model), and no second set of blocks under another of the layout's prefixes ("h." beside
/// "transformer.h."). Throws checkpoint_layer (no blocks), checkpoint_missing_key (names the missing
/// keys), checkpoint_bad_header (two sets of blocks).
int64_t gpt2_blocks(const SafetensorsHeader& header, const Gpt2Config& c) {
  const CheckpointLayout& layout = *c.layout;
  const std::string stem = c.prefix + layout.block_stem;
  const std::set<int64_t> blocks = block_numbers(header, stem);
  for (const char* other : layout.prefixes) {
    if (other == c.prefix) continue;
    if (const std::set<int64_t> beside = block_numbers(header, other + std::string(layout.block_stem)); !beside.empty()) {
      throw AttentionError("checkpoint_bad_header", "",
                           "the file has blocks " + std::string(other) + layout.block_stem + block_list(beside) + " beside " + stem +
                               (blocks.empty() ? "(none)" : block_list(blocks)) + " (the blocks of " + c.prefix + layout.model.front().key +
                               "'s model): two models' keys in one file",
                           "Save one model per file (GPT2Model's keys, or GPT2LMHeadModel's with the prefix 'transformer.').");
    }
  }
  const std::vector<const LayoutTensor*> rows = required_rows(layout);
  if (blocks.empty())
    throw AttentionError("checkpoint_layer", "layer", "the file has no transformer blocks (no " + layout_key(layout, c.prefix, *rows.front(), 0) + ")", layout.hint);
  const int64_t n = *blocks.rbegin() + 1;
  std::vector<std::string> missing;
  for (int64_t L = 0; L < n; ++L)
    for (const LayoutTensor* row : rows)
      if (const std::string name = layout_key(layout, c.prefix, *row, L); header.find(name) == nullptr) missing.push_back(name);
  if (!missing.empty()) {
    std::string rest;  // the keys after the first, up to 5 of them
    for (size_t i = 1; i < missing.size() && i < 6; ++i) rest += (i == 1 ? "" : ", ") + missing[i];
    if (missing.size() > 6) rest += ", ... (" + std::to_string(missing.size()) + " keys in all)";
    std::set<int64_t> absent;
    for (int64_t L = 0; L < n; ++L)
      if (blocks.count(L) == 0) absent.insert(L);
    throw AttentionError(
        "checkpoint_missing_key", "layer",
        "the file has no " + missing[0] + ", which the whole model needs" + (rest.empty() ? "" : ", nor " + rest) + ": it has blocks " + block_list(blocks) +
            (absent.empty() ? "" : " but not " + block_list(absent)) + ", and the model runs only with every block from 0 to " + std::to_string(n - 1) +
            " complete (a shorter model would be another model)",
        "The file is cut or incomplete: use the whole checkpoint (every " + std::string(layout.block_stem) + "L has " + std::to_string(rows.size()) + " tensors).");
  }
  return n;
}

/// qkv_bias from the keys: the optional block rows (the book's W_query/W_key/W_value biases) in every
/// block or in none. Throws checkpoint_missing_key naming the first one absent when only some are there.
bool blocks_have_qkv_bias(const SafetensorsHeader& header, const Gpt2Config& c) {
  std::vector<std::string> present, absent;
  for (int64_t L = 0; L < c.n_layer; ++L)
    for (const LayoutTensor& row : c.layout->block)
      if (row.optional) (header.find(layout_key(*c.layout, c.prefix, row, L)) ? present : absent).push_back(layout_key(*c.layout, c.prefix, row, L));
  if (!present.empty() && !absent.empty())
    throw AttentionError("checkpoint_missing_key", "qkv_bias", "the file has " + present.front() + " but no " + absent.front() + ": q/k/v biases in some blocks only",
                         "Save the whole model: with qkv_bias=True every block has W_query, W_key and W_value biases, with qkv_bias=False none has.");
  for (const LayoutTensor& row : c.layout->block)
    if (row.optional) return !present.empty();
  return true;  // Hugging Face's c_attn.bias is required
}

/// The file's shape of a layout row: kDim* sizes and multiples of d.
Shape row_shape(const std::vector<int64_t>& dims, const Gpt2Config& c) {
  Shape s;
  for (const int64_t v : dims) s.push_back(v == kDimVocab ? c.vocab_size : v == kDimContext ? c.n_ctx : v == kDimOutputs ? c.n_out : v * c.n_embd);
  return s;
}

}  // namespace

namespace {

/// The file's entry of a row in block `block` (-1: a model-level row), its dtype and `shape` checked
/// (an empty shape: any); the widest dtype is kept in value_bytes.
const SafetensorsEntry& need(const SafetensorsHeader& header, Gpt2Config& c, const LayoutTensor& row, int64_t block, const Shape& shape) {
  const std::string key = layout_key(*c.layout, c.prefix, row, block);
  const SafetensorsEntry* e = header.find(key);
  if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + key + ", which the whole model needs", c.layout->hint);
  if (!shape.empty() && e->shape != shape)
    throw AttentionError("checkpoint_shape", "", key + " is " + shape_string(e->shape) + " but the model needs " + shape_string(shape), c.layout->hint);
  require_gpt2_dtype(*e);
  c.value_bytes = std::max(c.value_bytes, gpt2_dtype_bytes(e->dtype));
  return *e;
}

const LayoutTensor& row_of(const Gpt2Config& c, const char* target, bool in_block = false) { return *layout_row(*c.layout, target, in_block); }

/// The embeddings: vocab_size, n_embd, dtype from the token embedding, n_ctx from the position embedding.
void read_embeddings(const SafetensorsHeader& header, Gpt2Config& c) {
  const SafetensorsEntry& wte = need(header, c, row_of(c, "tok_emb.weight"), -1, {});
  const std::string wte_key = layout_key(*c.layout, c.prefix, row_of(c, "tok_emb.weight"));
  if (wte.shape.size() != 2 || wte.shape[0] < 1 || wte.shape[1] < 1)
    throw AttentionError("checkpoint_shape", "", wte_key + " is " + shape_string(wte.shape) + " but must be (vocab_size, n_embd)", c.layout->hint);
  c.vocab_size = wte.shape[0];
  c.n_embd = wte.shape[1];
  c.dtype = wte.dtype;
  const std::string wpe_key = layout_key(*c.layout, c.prefix, row_of(c, "pos_emb.weight"));
  const SafetensorsEntry& wpe = need(header, c, row_of(c, "pos_emb.weight"), -1, {});
  if (wpe.shape.size() != 2 || wpe.shape[1] != c.n_embd || wpe.shape[0] < 1)
    throw AttentionError("checkpoint_shape", "", wpe_key + " is " + shape_string(wpe.shape) + " but must be (n_ctx, " + std::to_string(c.n_embd) + ")", c.layout->hint);
  c.n_ctx = wpe.shape[0];
}

/// The head: its own weight (any rows: a classifier's classes) and bias, or the tied token embedding.
void read_head(const SafetensorsHeader& header, Gpt2Config& c) {
  const LayoutTensor& w = row_of(c, "out_head.weight");
  const std::string key = layout_key(*c.layout, c.prefix, w);
  if (header.find(key) == nullptr && w.optional && c.layout->tied_head != nullptr) {
    c.head_key = c.prefix + c.layout->tied_head;
    c.n_out = c.vocab_size;
  } else {
    const SafetensorsEntry& e = need(header, c, w, -1, {});
    if (e.shape.size() != 2 || e.shape[1] != c.n_embd || e.shape[0] < 1)
      throw AttentionError("checkpoint_shape", "", key + " is " + shape_string(e.shape) + " but must be (num_outputs, " + std::to_string(c.n_embd) + ")", c.layout->hint);
    c.head_key = key;
    c.n_out = e.shape[0];
  }
  if (const LayoutTensor* b = layout_row(*c.layout, "out_head.bias", false); b != nullptr && header.find(layout_key(*c.layout, c.prefix, *b)) != nullptr) {
    need(header, c, *b, -1, row_shape(b->shape, c));
    c.head_bias = true;
  }
}

/// A mask buffer present must fit the model (the book's att.mask is (context_length, context_length)).
void check_buffers(const SafetensorsHeader& header, const Gpt2Config& c) {
  for (const LayoutBuffer& buffer : c.layout->buffers) {
    if (buffer.shape.empty()) continue;
    for (int64_t L = 0; L < c.n_layer; ++L) {
      const std::string key = c.prefix + c.layout->block_stem + std::to_string(L) + "." + buffer.key;
      const SafetensorsEntry* e = header.find(key);
      if (e != nullptr && e->shape != row_shape(buffer.shape, c))
        throw AttentionError("checkpoint_shape", "",
                             key + " (" + layout_buffer_text(buffer, e->shape) + ") is " + shape_string(e->shape) + " but the model's context_length gives " +
                                 shape_string(row_shape(buffer.shape, c)),
                             c.layout->hint);
    }
  }
}

std::vector<std::string> layout_mapping(const SafetensorsHeader& header, const Gpt2Config& c) {
  std::vector<std::string> lines;
  const auto add = [&](const LayoutTensor& row, int64_t block) {
    const std::string key = layout_key(*c.layout, c.prefix, row, block);
    if (const SafetensorsEntry* e = header.find(key)) lines.push_back(layout_mapping_line(key, e->shape, row, block >= 0));
  };
  for (const LayoutTensor& row : c.layout->block) add(row, 0);
  for (const LayoutTensor& row : c.layout->model) add(row, -1);
  if (c.head_key == c.prefix + (c.layout->tied_head ? c.layout->tied_head : ""))
    lines.push_back(c.head_key + " " + shape_string({c.n_out, c.n_embd}) + ": tied, copied as is -> out_head.weight " + shape_string({c.n_out, c.n_embd}));
  return lines;
}

}  // namespace

Gpt2Config gpt2_config(const SafetensorsHeader& header, std::optional<int64_t> num_heads) {
  Gpt2Config c;
  const FoundLayout found = find_checkpoint_layout(header);
  c.layout = found.layout;
  c.prefix = found.prefix;
  read_embeddings(header, c);
  c.n_layer = gpt2_blocks(header, c);
  c.qkv_bias = blocks_have_qkv_bias(header, c);
  for (int64_t L = 0; L < c.n_layer; ++L)
    for (const LayoutTensor& row : c.layout->block)
      if (!row.optional || c.qkv_bias) need(header, c, row, L, row_shape(row.shape, c));
  for (const char* target : {"final_norm.scale", "final_norm.shift"}) need(header, c, row_of(c, target), -1, row_shape(row_of(c, target).shape, c));
  read_head(header, c);
  check_buffers(header, c);
  c.n_head = gpt2_head_count(header, c.n_embd, num_heads).n_head;
  const bool gpt2_shape = c.vocab_size == kGpt2Vocab && c.n_ctx == kGpt2Context && c.n_out == kGpt2Vocab;
  if (const Gpt2Size* size = gpt2_size_of_width(c.n_embd); gpt2_shape && size && c.n_layer == size->n_layer && c.n_head == size->n_head) c.size = size->name;
  c.mapping = layout_mapping(header, c);
  return c;
}

}  // namespace attention_lab

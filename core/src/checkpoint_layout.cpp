// The one table of checkpoint layouts (see checkpoint_layout.hpp): each row maps a key of the file to the
// book's GPTModel weight(s) it gives and the copy rule, as the book's load_weights_into_gpt does for
// Hugging Face's file (c_attn split in three and transposed, Conv1D weights transposed, ln_* into
// norm*.scale/shift) and as `model.load_state_dict` does for the book's own (every tensor as is).
#include "attention_lab/checkpoint_layout.hpp"

#include <algorithm>
#include <set>

namespace attention_lab {

namespace {

using C = LayoutCopy;

CheckpointLayout hugging_face() {
  CheckpointLayout l;
  l.id = "huggingface";
  l.name = "Hugging Face GPT-2";
  l.block_stem = "h.";
  l.prefixes = {"", "transformer."};
  l.model = {
      {"wte.weight", {"tok_emb.weight"}, C::AsIs, {kDimVocab, 1}},
      {"wpe.weight", {"pos_emb.weight"}, C::AsIs, {kDimContext, 1}},
      {"ln_f.weight", {"final_norm.scale"}, C::AsIs, {1}},
      {"ln_f.bias", {"final_norm.shift"}, C::AsIs, {1}},
      {"lm_head.weight", {"out_head.weight"}, C::AsIs, {kDimOutputs, 1}, true, true},
  };
  l.block = {
      {"ln_1.weight", {"norm1.scale"}, C::AsIs, {1}},
      {"ln_1.bias", {"norm1.shift"}, C::AsIs, {1}},
      {"attn.c_attn.weight", {"att.W_query.weight", "att.W_key.weight", "att.W_value.weight"}, C::SplitThreeTransposed, {1, 3}},
      {"attn.c_attn.bias", {"att.W_query.bias", "att.W_key.bias", "att.W_value.bias"}, C::SplitThree, {3}},
      {"attn.c_proj.weight", {"att.out_proj.weight"}, C::Transposed, {1, 1}},
      {"attn.c_proj.bias", {"att.out_proj.bias"}, C::AsIs, {1}},
      {"ln_2.weight", {"norm2.scale"}, C::AsIs, {1}},
      {"ln_2.bias", {"norm2.shift"}, C::AsIs, {1}},
      {"mlp.c_fc.weight", {"ff.layers.0.weight"}, C::Transposed, {1, 4}},
      {"mlp.c_fc.bias", {"ff.layers.0.bias"}, C::AsIs, {4}},
      {"mlp.c_proj.weight", {"ff.layers.2.weight"}, C::Transposed, {4, 1}},
      {"mlp.c_proj.bias", {"ff.layers.2.bias"}, C::AsIs, {1}},
  };
  l.buffers = {{"attn.bias", "causal mask buffer {shape}, not the q/k/v bias (that is c_attn.bias); the mask is rebuilt from context_length", {}},
               {"attn.masked_bias", "the mask's fill value buffer, not a weight", {}}};
  l.tied_head = "wte.weight";
  l.hint = "Use a GPT-2 checkpoint in the Hugging Face layout (model.safetensors of the gpt2 repositories).";
  return l;
}

CheckpointLayout book() {
  CheckpointLayout l;
  l.id = "book";
  l.name = "the book's GPTModel";
  l.block_stem = "trf_blocks.";
  l.model = {
      {"tok_emb.weight", {"tok_emb.weight"}, C::AsIs, {kDimVocab, 1}},
      {"pos_emb.weight", {"pos_emb.weight"}, C::AsIs, {kDimContext, 1}},
      {"final_norm.scale", {"final_norm.scale"}, C::AsIs, {1}},
      {"final_norm.shift", {"final_norm.shift"}, C::AsIs, {1}},
      {"out_head.weight", {"out_head.weight"}, C::AsIs, {kDimOutputs, 1}},
      {"out_head.bias", {"out_head.bias"}, C::AsIs, {kDimOutputs}, true},
  };
  l.block = {
      {"norm1.scale", {"norm1.scale"}, C::AsIs, {1}},
      {"norm1.shift", {"norm1.shift"}, C::AsIs, {1}},
      {"att.W_query.weight", {"att.W_query.weight"}, C::AsIs, {1, 1}},
      {"att.W_key.weight", {"att.W_key.weight"}, C::AsIs, {1, 1}},
      {"att.W_value.weight", {"att.W_value.weight"}, C::AsIs, {1, 1}},
      {"att.W_query.bias", {"att.W_query.bias"}, C::AsIs, {1}, true},
      {"att.W_key.bias", {"att.W_key.bias"}, C::AsIs, {1}, true},
      {"att.W_value.bias", {"att.W_value.bias"}, C::AsIs, {1}, true},
      {"att.out_proj.weight", {"att.out_proj.weight"}, C::AsIs, {1, 1}},
      {"att.out_proj.bias", {"att.out_proj.bias"}, C::AsIs, {1}},
      {"norm2.scale", {"norm2.scale"}, C::AsIs, {1}},
      {"norm2.shift", {"norm2.shift"}, C::AsIs, {1}},
      {"ff.layers.0.weight", {"ff.layers.0.weight"}, C::AsIs, {4, 1}},
      {"ff.layers.0.bias", {"ff.layers.0.bias"}, C::AsIs, {4}},
      {"ff.layers.2.weight", {"ff.layers.2.weight"}, C::AsIs, {1, 4}},
      {"ff.layers.2.bias", {"ff.layers.2.bias"}, C::AsIs, {1}},
  };
  l.buffers = {
      {"att.mask", "causal mask buffer {shape} (context_length x context_length): checked, not required; the mask is rebuilt from context_length", {kDimContext, kDimContext}}};
  l.tied_head = nullptr;
  l.hint = "Use the whole state_dict of the book's GPTModel, as torch.save(model.state_dict(), \"model.pth\") writes it.";
  return l;
}

/// dst (n, k) = the (k, n) block of src whose rows are `stride` apart, transposed; in 32 x 32 tiles so
/// the strided side stays in cache (a GPT-2 block transposes 4 of these of 768 x 768).
void transpose_into(float* dst, const float* src, int64_t k, int64_t n, int64_t stride) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < k; i0 += kTile)
    for (int64_t o0 = 0; o0 < n; o0 += kTile)
      for (int64_t i = i0; i < std::min(k, i0 + kTile); ++i)
        for (int64_t o = o0; o < std::min(n, o0 + kTile); ++o) dst[o * k + i] = src[i * stride + o];
}

/// The target's shape after the copy rule, from the file's shape.
Shape target_shape(const Shape& file, LayoutCopy copy) {
  switch (copy) {
    case LayoutCopy::AsIs:
      return file;
    case LayoutCopy::Transposed:
      return {file[1], file[0]};
    case LayoutCopy::SplitThree:
      return {file[0] / 3};
    case LayoutCopy::SplitThreeTransposed:
      return {file[1] / 3, file[0]};
  }
  return file;
}

/// The prefix before `key` when `key` ends `full` at a key boundary ("" or ending in '.').
bool prefix_of(const std::string& full, const std::string& key, std::string& prefix) {
  if (full.size() < key.size() || full.compare(full.size() - key.size(), key.size(), key) != 0) return false;
  prefix = full.substr(0, full.size() - key.size());
  return prefix.empty() || prefix.back() == '.';
}

}  // namespace

const std::vector<CheckpointLayout>& checkpoint_layouts() {
  static const std::vector<CheckpointLayout> table = {hugging_face(), book()};
  return table;
}

const char* layout_copy_text(LayoutCopy copy) {
  switch (copy) {
    case LayoutCopy::AsIs:
      return "copied as is";
    case LayoutCopy::Transposed:
      return "transposed";
    case LayoutCopy::SplitThree:
      return "split in three along dim 0";
    case LayoutCopy::SplitThreeTransposed:
      return "split in three along dim 1, each transposed";
  }
  return "";
}

FoundLayout find_checkpoint_layout(const SafetensorsHeader& header) {
  std::vector<FoundLayout> found;
  for (const CheckpointLayout& layout : checkpoint_layouts()) {
    std::set<std::string> prefixes;
    const std::string embedding = layout.model.front().key;
    for (const SafetensorsEntry& e : header.entries) {
      std::string prefix;
      if (!prefix_of(e.key, embedding, prefix)) continue;
      bool allowed = layout.prefixes.empty();
      for (const char* p : layout.prefixes) allowed = allowed || prefix == p;
      if (allowed) prefixes.insert(prefix);
    }
    if (prefixes.empty()) continue;
    if (prefixes.size() > 1 && layout.prefixes.empty()) {
      throw AttentionError("checkpoint_bad_header", "",
                           "the file has " + *prefixes.begin() + embedding + " and " + *prefixes.rbegin() + embedding + ": two models' keys in one file",
                           "Save one model per file: torch.save(model.state_dict(), \"model.pth\").");
    }
    found.push_back({&layout, *prefixes.begin()});  // Hugging Face's: wte.weight before transformer.wte.weight
  }
  if (found.empty()) {
    throw AttentionError("checkpoint_missing_key", "", "the file has no wte.weight, which the whole model needs (nor the book's tok_emb.weight)",
                         "Use a GPT-2 checkpoint: Hugging Face's model.safetensors (wte.weight, h.{i}.attn.c_attn.weight ...) or the book's GPTModel state_dict "
                         "(tok_emb.weight, trf_blocks.{i}.att.W_query.weight ...).");
  }
  if (found.size() > 1) {
    throw AttentionError("checkpoint_bad_header", "",
                         "the file has both " + found[0].prefix + found[0].layout->model.front().key + " (" + found[0].layout->name + ") and " + found[1].prefix +
                             found[1].layout->model.front().key + " (" + found[1].layout->name + "): two models' keys in one file",
                         "Save one model per file.");
  }
  return found.front();
}

const LayoutTensor* layout_row(const CheckpointLayout& layout, const std::string& target, bool in_block) {
  for (const LayoutTensor& row : in_block ? layout.block : layout.model)
    for (const char* t : row.targets)
      if (target == t) return &row;
  return nullptr;
}

std::string layout_key(const CheckpointLayout& layout, const std::string& prefix, const LayoutTensor& row, int64_t block) {
  if (row.unprefixed) return row.key;
  if (block < 0) return prefix + row.key;
  return prefix + layout.block_stem + std::to_string(block) + "." + row.key;
}

void layout_weights(const LayoutTensor& row, std::vector<float> v, const Shape& shape, const std::function<void(NamedTensor)>& put) {
  switch (row.copy) {
    case LayoutCopy::AsIs:
      put({row.targets[0], Tensor(shape, std::move(v))});
      break;
    case LayoutCopy::Transposed: {  // (rows, cols) -> (cols, rows)
      Tensor t({shape[1], shape[0]});
      transpose_into(t.data.data(), v.data(), shape[0], shape[1], shape[1]);
      put({row.targets[0], std::move(t)});
      break;
    }
    case LayoutCopy::SplitThree: {
      const int64_t n = shape[0] / 3;
      for (int part = 0; part < 3; ++part) put({row.targets[part], Tensor({n}, std::vector<float>(v.begin() + part * n, v.begin() + (part + 1) * n))});
      break;
    }
    case LayoutCopy::SplitThreeTransposed:
      for (int part = 0; part < 3; ++part) {  // (d_out, d_in) = c_attn.weight[:, part*n:(part+1)*n].T
        const int64_t n = shape[1] / 3;
        Tensor t({n, shape[0]});
        transpose_into(t.data.data(), v.data() + part * n, shape[0], n, shape[1]);
        put({row.targets[part], std::move(t)});
      }
      break;
  }
}

std::string layout_buffer_text(const LayoutBuffer& buffer, const Shape& shape) {
  std::string text = buffer.what;
  if (const size_t at = text.find("{shape}"); at != std::string::npos) text.replace(at, 7, shape_string(shape));
  return text;
}

std::string layout_mapping_line(const std::string& key, const Shape& shape, const LayoutTensor& row, bool in_block) {
  std::string line = key + " " + shape_string(shape) + ": " + layout_copy_text(row.copy);
  std::string targets;
  for (const char* t : row.targets) {
    std::string name = t;
    if (in_block && name.rfind("att.", 0) == 0) name = name.substr(4);  // the book's MultiHeadAttention's own names
    targets += (targets.empty() ? "" : ", ") + name + " " + shape_string(target_shape(shape, row.copy));
  }
  if (row.targets.size() == 1 && std::string(row.key) == row.targets.front()) return line;
  return line + " -> " + targets;
}

}  // namespace attention_lab

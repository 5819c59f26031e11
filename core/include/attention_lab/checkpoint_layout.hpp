// Checkpoint layouts as data: which key of a file is which weight of the book's GPTModel, and how it is
// copied (as classes are recipes). One table (core/src/checkpoint_layout.cpp) holds Hugging Face's GPT-2
// (GPT2Model / GPT2LMHeadModel: Conv1D weights (in, out), q, k, v packed in c_attn) and the book's GPTModel
// (`model.state_dict()` of chapters 4 to 6: nn.Linear weights (out, in)). The whole model's run, its
// layer inputs and generation read every key through it; the page shows its mapping text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attention_lab/checkpoint.hpp"

namespace attention_lab {

/// How a tensor of the file becomes the book's weight(s) it gives.
enum class LayoutCopy {
  AsIs,                  // the same values and shape
  Transposed,            // Conv1D (in, out) -> nn.Linear (out, in)
  SplitThree,            // split in three along dim 0 (q | k | v biases)
  SplitThreeTransposed,  // split in three along dim 1, each transposed (c_attn.weight -> W_query, W_key, W_value)
};

/// A dimension of a layout tensor's shape: a positive n is n x the width d; the others name a size.
constexpr int64_t kDimVocab = -1;    // the token embedding's rows
constexpr int64_t kDimContext = -2;  // the position embedding's rows (context_length)
constexpr int64_t kDimOutputs = -3;  // the output head's rows (vocab_size for a language model, num_classes for a classifier)

struct LayoutTensor {
  const char* key;                   // the file's key after the prefix (and, in a block, after "<block stem>{L}.")
  std::vector<const char*> targets;  // the book's GPTModel weights it gives (in a block: after "trf_blocks.{L}.")
  LayoutCopy copy;
  std::vector<int64_t> shape;  // in the file (kDim* or multiples of d)
  bool optional = false;       // may be absent: the book's q/k/v biases (qkv_bias=False), the head's bias, lm_head
  bool unprefixed = false;     // not under the prefix (GPT2LMHeadModel's lm_head.weight beside transformer.*)
};

/// A key of the file that is not a weight: checked when present, never required.
struct LayoutBuffer {
  const char* key;             // in a block, after "<block stem>{L}."
  const char* what;            // why it is not read; "{shape}" stands for its shape (layout_buffer_text)
  std::vector<int64_t> shape;  // checked when given (kDim* or multiples of d); empty: not checked
};

struct CheckpointLayout {
  const char* id;          // "huggingface", "book"
  const char* name;        // for the page: "Hugging Face GPT-2", "the book's GPTModel"
  const char* block_stem;  // "h." / "trf_blocks.": a block's keys start "<prefix><stem>{L}."
  /// The prefixes the layout's files use ("" and "transformer."); empty: any key prefix ("module." from
  /// nn.DataParallel, "model." ...): the prefix is what stands before the token embedding's key.
  std::vector<const char*> prefixes;
  std::vector<LayoutTensor> model;  // the embeddings, the final norm, the head
  std::vector<LayoutTensor> block;  // one block's, in the order a block is read
  std::vector<LayoutBuffer> buffers;
  /// When the head's key is absent: the key (after the prefix) whose rows the head shares (GPT-2's tied
  /// wte); nullptr: the head is required.
  const char* tied_head;
  const char* hint;  // what a refusal of a file in this layout suggests
};

/// The table: Hugging Face's GPT-2 first, then the book's GPTModel.
const std::vector<CheckpointLayout>& checkpoint_layouts();

/// "split in three along dim 1, each transposed", ... (the page's words for a copy rule).
const char* layout_copy_text(LayoutCopy copy);

/// The layout a file's keys follow and its prefix: the layout whose token embedding key (wte.weight,
/// tok_emb.weight) the file has at a key boundary, under one of its prefixes. Throws AttentionError
/// checkpoint_missing_key (neither layout's embedding: names both keys), checkpoint_bad_header (both
/// layouts' keys, or the book's under two prefixes: names them).
struct FoundLayout {
  const CheckpointLayout* layout = nullptr;
  std::string prefix;
};
FoundLayout find_checkpoint_layout(const SafetensorsHeader& header);

/// The row of the layout that gives `target` (a model-level weight: "tok_emb.weight", "out_head.weight",
/// or a block's: "att.W_query.weight"); nullptr when none does.
const LayoutTensor* layout_row(const CheckpointLayout& layout, const std::string& target, bool in_block);

/// The file key of a row: "<prefix><key>", "<prefix><stem>{L}.<key>" in a block, "<key>" when unprefixed.
std::string layout_key(const CheckpointLayout& layout, const std::string& prefix, const LayoutTensor& row, int64_t block = -1);

/// One line of the page's mapping: "<key> <shape>: <copy rule> -> <target> <shape>, ..." (the targets
/// of a block's attention by the book's MultiHeadAttention's names: "W_query.weight"); no arrow when the
/// key is the book's own ("trf_blocks.0.att.W_query.weight (768, 768): copied as is").
std::string layout_mapping_line(const std::string& key, const Shape& shape, const LayoutTensor& row, bool in_block);

/// The buffer's `what` with its shape in place of "{shape}".
std::string layout_buffer_text(const LayoutBuffer& buffer, const Shape& shape);

/// A file tensor of `shape` (its float32 values) as the book's weights of its row, by the row's copy
/// rule: `put(target, value)` for each of row.targets in turn (c_attn.weight's three parts, W_query
/// first), each part made only when the one before is handed over (a GPT-2 block's loading holds one
/// part at a time, as its memory estimate counts).
void layout_weights(const LayoutTensor& row, std::vector<float> values, const Shape& shape, const std::function<void(NamedTensor)>& put);

}  // namespace attention_lab

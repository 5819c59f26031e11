// The four GPT-2 sizes: the one table the validator's hints, the presets, the checkpoint loader's
// head counts, the whole-model size names and the page read (through the facade's gpt2Sizes).
#pragma once

#include <cstdint>
#include <iterator>

namespace attention_lab {

/// One GPT-2 size (Radford et al. 2019; Hugging Face gpt2, gpt2-medium, gpt2-large, gpt2-xl): width
/// n_embd, head count n_head (head_dim 64 in all four), layers n_layer, context n_ctx 1024.
struct Gpt2Size {
  const char* name;  // "small", "medium", "large", "XL"
  int64_t n_embd;
  int64_t n_head;
  int64_t n_layer;
};

inline constexpr Gpt2Size kGpt2Sizes[] = {
    {"small", 768, 12, 12},
    {"medium", 1024, 16, 24},
    {"large", 1280, 20, 36},
    {"XL", 1600, 25, 48},
};
inline constexpr int64_t kGpt2Context = 1024;
inline constexpr int64_t kGpt2Vocab = 50257;

/// The size of that width, nullptr when no GPT-2 is that wide.
inline const Gpt2Size* gpt2_size_of_width(int64_t n_embd) {
  for (const auto& s : kGpt2Sizes)
    if (s.n_embd == n_embd) return &s;
  return nullptr;
}

}  // namespace attention_lab

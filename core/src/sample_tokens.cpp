// The sample tokens a forward can run on: the book's six 3-d embeddings, and seeded ones
// (torch.rand on a seeded generator), by word or by count.
#include <algorithm>
#include <string>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/torch_generator.hpp"

namespace attention_lab {

Tensor book_tokens() {
  // "Your journey starts with one step" (section 3.3.1)
  return Tensor({6, 3}, {0.43f, 0.15f, 0.89f, 0.55f, 0.87f, 0.66f, 0.57f, 0.85f, 0.64f, 0.22f, 0.58f, 0.33f, 0.77f, 0.25f, 0.10f, 0.05f, 0.80f, 0.55f});
}

Tensor sentence_tokens(const std::vector<std::string>& words, int64_t d_in, uint64_t seed) {
  std::vector<std::string> vocab;  // first-occurrence order
  std::vector<int64_t> index;
  for (const auto& w : words) {
    const auto it = std::find(vocab.begin(), vocab.end(), w);
    index.push_back(it - vocab.begin());
    if (it == vocab.end()) vocab.push_back(w);
  }
  const Tensor table = seeded_tokens(static_cast<int64_t>(vocab.size()), d_in, seed);  // (len(vocab), d_in)
  Tensor x({static_cast<int64_t>(words.size()), d_in});                                // (num_tokens, d_in)
  for (size_t t = 0; t < words.size(); ++t) std::copy_n(table.data.begin() + index[t] * d_in, d_in, x.data.begin() + static_cast<std::ptrdiff_t>(t) * d_in);
  return x;
}

Tensor seeded_tokens(int64_t num_tokens, int64_t d_in, uint64_t seed) {
  TorchGenerator g(seed);
  return g.rand({num_tokens, d_in});
}

}  // namespace attention_lab

// The book's multi-head attention (chapter 3, section 3.6.2) in C++, with the installed package:
//   torch.manual_seed(123)
//   batch = torch.stack((inputs, inputs), dim=0)   # (2, 6, 3)
//   mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
//   context_vecs = mha(batch)
//   print(context_vecs); print("context_vecs.shape:", context_vecs.shape)
// Built by the CMakeLists.txt beside it (find_package(attention_lab), attention_lab::core);
// tests/node/cmake-package.test.mjs builds and runs it against `cmake --install` of the repository.
#include <cstdio>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/torch_generator.hpp"
#include "attention_lab/typed.hpp"

using namespace attention_lab;

int main() {
  // "Your journey starts with one step": six tokens of d_in = 3 values each, row-major.
  const std::vector<float> inputs = {
      0.43f, 0.15f, 0.89f,  // Your     (x^1)
      0.55f, 0.87f, 0.66f,  // journey  (x^2)
      0.57f, 0.85f, 0.64f,  // starts   (x^3)
      0.22f, 0.58f, 0.33f,  // with     (x^4)
      0.77f, 0.25f, 0.10f,  // one      (x^5)
      0.05f, 0.80f, 0.55f,  // step     (x^6)
  };
  std::vector<float> batch = inputs;
  batch.insert(batch.end(), inputs.begin(), inputs.end());  // torch.stack((inputs, inputs), dim=0)
  const Tensor x = tensor_from(batch.data(), {2, 6, 3});    // (b, num_tokens, d_in)

  TorchGenerator generator(123);  // torch.manual_seed(123)
  const AttentionModule mha(validated_config(typed::MultiHeadAttention{3, 2, 6, 0.0, 2}), generator);
  const Tensor context_vecs = mha.forward(x);  // (b, num_tokens, d_out) = (2, 6, 2)

  std::printf("%s\n", tensor_string(context_vecs).c_str());
  std::printf("context_vecs.shape: %s\n", shape_string(context_vecs.shape).c_str());
  std::printf("context_vecs[0, 5, 1] = %.4f\n", static_cast<double>(context_vecs.at({0, 5, 1})));

  // A bad value is refused with the code, slot, message and hint the page and the JS library show.
  try {
    validated_config(typed::MultiHeadAttention{3, 3, 6, 0.0, 2});
  } catch (const AttentionError& e) {
    std::printf("%s (%s): %s\n", e.code().c_str(), e.slot().c_str(), e.what());
  }
  return 0;
}

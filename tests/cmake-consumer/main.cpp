// GPT-2 small's attention, MultiHeadAttention(768, 768, 1024, 0.0, 12), made after torch.manual_seed(123)
// and run on 6 seeded tokens; prints the output's shape and its first values (one JSON line).
#include <cstdio>

#include "attention_lab/modules.hpp"
#include "attention_lab/torch_generator.hpp"
#include "attention_lab/validator.hpp"

using namespace attention_lab;

int main() {
  SlotMap slots;
  slots["d_in"] = SlotValue::integer(768);
  slots["d_out"] = SlotValue::integer(768);
  slots["context_length"] = SlotValue::integer(1024);
  slots["dropout"] = SlotValue::floating(0.0);
  slots["num_heads"] = SlotValue::integer(12);
  const ModuleConfig config = validated_config("MultiHeadAttention", slots);
  TorchGenerator generator(123);
  const AttentionModule mha(config, generator);
  Tensor x = seeded_tokens(6, 768, 7);
  x.shape = {1, 6, 768};
  ForwardOptions options;
  options.training = false;
  const Tensor y = mha.forward(x, options);
  std::printf("{\"shape\": [%lld, %lld, %lld], \"first\": [%.9g, %.9g, %.9g, %.9g]}\n", static_cast<long long>(y.shape[0]), static_cast<long long>(y.shape[1]),
              static_cast<long long>(y.shape[2]), y.data[0], y.data[1], y.data[2], y.data[3]);
  return 0;
}

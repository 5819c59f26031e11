// Converting between MultiHeadAttentionWrapper and MultiHeadAttention (the chapter's lesson that they
// compute the same thing): the equivalent setup, the weights moved head by head, and the code that does it.
#include <algorithm>

#include "attention_lab/validator.hpp"
#include "attention_lab/weight_transfer.hpp"

namespace attention_lab {

ModuleConfig equivalent_config(const ModuleConfig& c) {
  ModuleConfig out = c;
  const ClassSpec* to = find_class(c.recipe().converts_to);
  if (to != nullptr && c.recipe().heads == HeadsRule::Modules) {
    out.spec = to;
    out.d_out = c.num_heads * c.d_out;
  } else if (to != nullptr && c.recipe().heads == HeadsRule::Fused) {
    out.spec = to;
    out.d_out = c.head_dim();
  } else {
    throw AttentionError("convert_unsupported", "", c.class_name() + " has no multi-head equivalent", "Convert between MultiHeadAttentionWrapper and MultiHeadAttention.");
  }
  return out;
}

AttentionModule fused_from_wrapper(const AttentionModule& wrapper, HeadLayout layout) {
  const ModuleConfig& w = wrapper.config();
  if (w.recipe().heads != HeadsRule::Modules || w.recipe().converts_to.empty()) {
    throw AttentionError("convert_unsupported", "", "expected a MultiHeadAttentionWrapper, got " + w.class_name(), "");
  }
  const int64_t H = w.num_heads, hd = w.d_out, d_in = w.d_in, total = H * hd;
  // The equivalent is checked like any setup (its out_proj can be far larger than the wrapper): a
  // fused module over the memory budget is refused before anything is allocated.
  const ModuleConfig target = equivalent_config(w);
  AttentionModule fused(validated_config(target.class_name(), target.slots()));
  // Head h's row j lands in row h*hd + j (stacked) or j*H + h (interleaved: the mistake).
  const auto row = [&](int64_t h, int64_t j) { return layout == HeadLayout::Stacked ? h * hd + j : j * H + h; };
  for (const char* m : {"W_query", "W_key", "W_value"}) {
    Tensor weight({total, d_in});  // (d_out_total, d_in)
    Tensor bias({total});
    for (int64_t h = 0; h < H; ++h) {
      const std::string head = "heads." + std::to_string(h) + "." + m;
      const Tensor hw = *wrapper.parameter(head + ".weight");  // (hd, d_in)
      for (int64_t j = 0; j < hd; ++j) std::copy_n(hw.data.begin() + j * d_in, d_in, weight.data.begin() + row(h, j) * d_in);
      if (w.qkv_bias) {
        const Tensor hb = *wrapper.parameter(head + ".bias");
        for (int64_t j = 0; j < hd; ++j) bias.data[static_cast<size_t>(row(h, j))] = hb.data[static_cast<size_t>(j)];
      }
    }
    fused.set_parameter(std::string(m) + ".weight", weight);
    if (w.qkv_bias) fused.set_parameter(std::string(m) + ".bias", bias);
  }
  Tensor identity({total, total});  // out_proj = I, bias 0: the fused module adds nothing after the merge
  for (int64_t i = 0; i < total; ++i) identity.data[static_cast<size_t>(i * total + i)] = 1.0f;
  fused.set_parameter("out_proj.weight", identity);
  fused.set_parameter("out_proj.bias", Tensor({total}));
  return fused;
}

AttentionModule wrapper_from_fused(const AttentionModule& mha) {
  const ModuleConfig& c = mha.config();
  if (c.recipe().heads != HeadsRule::Fused || c.recipe().converts_to.empty()) {
    throw AttentionError("convert_unsupported", "", "expected a MultiHeadAttention, got " + c.class_name(), "");
  }
  const int64_t H = c.num_heads, hd = c.head_dim(), d_in = c.d_in;
  const ModuleConfig target = equivalent_config(c);
  AttentionModule wrapper(validated_config(target.class_name(), target.slots()));
  for (const char* m : {"W_query", "W_key", "W_value"}) {
    const Tensor fw = *mha.parameter(std::string(m) + ".weight");  // (d_out, d_in)
    for (int64_t h = 0; h < H; ++h) {
      const std::string head = "heads." + std::to_string(h) + "." + m;
      Tensor weight({hd, d_in});  // rows h*hd .. (h+1)*hd - 1
      std::copy_n(fw.data.begin() + h * hd * d_in, hd * d_in, weight.data.begin());
      wrapper.set_parameter(head + ".weight", weight);
      if (c.qkv_bias) {
        const Tensor fb = *mha.parameter(std::string(m) + ".bias");
        wrapper.set_parameter(head + ".bias", Tensor({hd}, std::vector<float>(fb.data.begin() + h * hd, fb.data.begin() + (h + 1) * hd)));
      }
    }
  }
  return wrapper;
}

std::string conversion_code(const AttentionModule& from) {
  const ModuleConfig& c = from.config();
  const ModuleConfig to = equivalent_config(c);
  std::string code;
  if (c.recipe().heads == HeadsRule::Modules) {
    code += "mha = " + to.python_call() + "\n";
    for (const char* m : {"W_query", "W_key", "W_value"}) {
      code += "mha." + std::string(m) + ".weight = torch.nn.Parameter(torch.cat([h." + m + ".weight for h in wrapper.heads], dim=0))\n";
      if (c.qkv_bias) code += "mha." + std::string(m) + ".bias = torch.nn.Parameter(torch.cat([h." + m + ".bias for h in wrapper.heads], dim=0))\n";
    }
    code += "mha.out_proj.weight = torch.nn.Parameter(torch.eye(" + std::to_string(to.d_out) + "))\n";
    code += "mha.out_proj.bias = torch.nn.Parameter(torch.zeros(" + std::to_string(to.d_out) + "))\n";
  } else {
    code += "wrapper = " + to.python_call() + "\n";
    code += "for h, head in enumerate(wrapper.heads):\n";
    code += "    rows = slice(h * " + std::to_string(to.d_out) + ", (h + 1) * " + std::to_string(to.d_out) + ")\n";
    for (const char* m : {"W_query", "W_key", "W_value"}) {
      code += "    head." + std::string(m) + ".weight = torch.nn.Parameter(mha." + m + ".weight[rows])\n";
      if (c.qkv_bias) code += "    head." + std::string(m) + ".bias = torch.nn.Parameter(mha." + m + ".bias[rows])\n";
    }
    code += "# the wrapper has no out_proj: it matches mha only if mha.out_proj is the identity with zero bias\n";
  }
  return code;
}

}  // namespace attention_lab

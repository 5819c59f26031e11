// Seeded construction: a module's parameters drawn from a TorchGenerator exactly as its PyTorch
// constructor draws them after torch.manual_seed (the recipe's init steps: nn.Linear's
// kaiming_uniform_, xavier, randn, zeros), in the recipe's order.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/modules.hpp"
#include "module_impl.hpp"

namespace attention_lab {

namespace {

/// nn.Linear's kaiming_uniform_(a=sqrt(5)) bound, in double exactly as torch.nn.init computes it.
float kaiming_bound(int64_t fan_in) {
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double std_dev = gain / std::sqrt(static_cast<double>(fan_in));
  return static_cast<float>(std::sqrt(3.0) * std_dev);
}
float fan_in_bound(int64_t fan_in) { return fan_in > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in))) : 0.0f; }

/// torch.nn.init._calculate_fan_in_and_fan_out: (size(1) x receptive field, size(0) x receptive field).
std::pair<int64_t, int64_t> fans(const Shape& s) {
  if (s.size() < 2) return {s.empty() ? 0 : s[0], s.empty() ? 0 : s[0]};
  int64_t receptive = 1;
  for (size_t i = 2; i < s.size(); ++i) receptive *= s[i];
  return {s[1] * receptive, s[0] * receptive};
}

}  // namespace

AttentionModule::AttentionModule(const ModuleConfig& config, TorchGenerator& generator) : AttentionModule(config) {
  // Draws in the recipe's init order (module by module for the wrapper's heads); a step may fill a
  // parameter a later step overwrites (MHAEinsum's randn, then kaiming_uniform_): its draws still count.
  const auto specs = parameter_specs(config);
  std::vector<NamedTensor> values;
  for (const auto& spec : specs) values.push_back({spec.name, Tensor(spec.shape)});
  const auto find = [&](const std::string& name) -> NamedTensor* {
    for (auto& v : values)
      if (v.name == name) return &v;
    return nullptr;
  };
  for (int64_t h = 0; h < module_count(config); ++h) {
    for (const InitStep& step : config.recipe().init) {
      NamedTensor* v = find(head_prefix(config, h) + step.param);
      if (v == nullptr) continue;  // a bias the setup does not have
      Tensor& t = v->tensor;
      switch (step.init) {
        case Init::Rand:
          for (float& x : t.data) x = generator.random_float();
          break;
        case Init::Randn:
          generator.normal(t.data.data(), t.numel(), 0.0, 1.0);
          break;
        case Init::KaimingUniform: {
          const float bound = kaiming_bound(fans(t.shape).first);
          generator.uniform(t.data.data(), t.numel(), -bound, bound);
          break;
        }
        case Init::FanInUniform: {
          const NamedTensor* of = find(head_prefix(config, h) + step.fan_of);
          const float bound = fan_in_bound(of ? fans(of->tensor.shape).first : 0);
          generator.uniform(t.data.data(), t.numel(), -bound, bound);
          break;
        }
        case Init::XavierUniform: {
          const auto [fan_in, fan_out] = fans(t.shape);
          const float a = static_cast<float>(std::sqrt(3.0) * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
          generator.uniform(t.data.data(), t.numel(), -a, a);
          break;
        }
        case Init::XavierNormal: {
          const auto [fan_in, fan_out] = fans(t.shape);
          generator.normal(t.data.data(), t.numel(), 0.0, std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
          break;
        }
        case Init::Zeros:
          std::fill(t.data.begin(), t.data.end(), 0.0f);
          break;
      }
    }
  }
  set_parameters(values);
}

}  // namespace attention_lab

// Native speed of the core's forward (npm run bench): GPT-2 small attention,
// MultiHeadAttention(768, 768, 1024, 0.0, 12) seeded with torch.manual_seed(123), eval mode, batch 1,
// on seeded_tokens(T, 768, 1) -- the same module and input as the WASM rows.
//
//   attention_lab_native_bench [--tokens 6,64,256,1024] [--reps 5]
//       runs every T once (one warm-up, then --reps timed forwards) and prints one JSON object:
//       {"engine": "native", "results": [{"T": 6, "samples_ms": [...], "median_ms": ...}, ...]}
//   attention_lab_native_bench --stdin
//       for bench/run.mjs, which interleaves engines: reads lines "T reps", answers each with one JSON
//       line {"T": ..., "samples_ms": [...], "checksum": ...} (reps 0: just the checksum); "quit" or end of input stops it.
//   attention_lab_native_bench --header-keys 1000000 [--reps 3]
//       parses a safetensors header of GPT-2 layer 0 (width 4) plus that many one-element tensors (the
//       browser suite's million-key file, built in memory) --reps times and prints one JSON object:
//       {"engine": "native", "header": {"keys": ..., "bytes": ..., "samples_ms": [...], "median_ms": ..., "find_1001_ms": ..., "plan_ms": ...}}
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/schema.hpp"
#include "attention_lab/torch_generator.hpp"

namespace al = attention_lab;

namespace {

al::ModuleConfig gpt2_small() {
  al::ModuleConfig c = al::ModuleConfig::of("MultiHeadAttention");
  c.d_in = 768;
  c.d_out = 768;
  c.context_length = 1024;
  c.dropout = 0.0;
  c.num_heads = 12;
  c.qkv_bias = false;
  return c;
}

struct Bench {
  al::AttentionModule module;
  std::map<int64_t, al::Tensor> inputs;

  explicit Bench(al::TorchGenerator gen) : module(gpt2_small(), gen) {}

  const al::Tensor& input(int64_t T) {
    auto it = inputs.find(T);
    if (it == inputs.end()) {
      al::Tensor x = al::seeded_tokens(T, 768, 1);
      x.shape = {1, T, 768};
      it = inputs.emplace(T, std::move(x)).first;
    }
    return it->second;
  }

  /// One warm-up forward, then `reps` timed ones (milliseconds); `checksum` is the output's sum.
  std::vector<double> run(int64_t T, int reps, double& checksum) {
    const al::Tensor& x = input(T);
    al::ForwardOptions options;
    options.training = false;
    al::Tensor out = module.forward(x, options);
    std::vector<double> samples;
    for (int i = 0; i < reps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      out = module.forward(x, options);
      auto t1 = std::chrono::steady_clock::now();
      samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    checksum = 0.0;
    for (float v : out.data) checksum += v;
    return samples;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

std::string json_samples(const std::vector<double>& samples) {
  std::ostringstream s;
  s.precision(6);
  s << "[";
  for (size_t i = 0; i < samples.size(); ++i) s << (i ? "," : "") << samples[i];
  s << "]";
  return s.str();
}

/// The browser suite's million-key file, header only: "__metadata__", layer 0 of width 4 (tests/safetensors.mjs
/// layer0Shapes), then `extra` one-element F32 tensors "x0", "x1", ..., back to back. `data_bytes` is the
/// size of the data section the header claims.
std::string million_key_header(int64_t extra, uint64_t& data_bytes) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> layer0 = {{"h.0.attn.c_attn.bias", {12}}, {"h.0.attn.c_attn.weight", {4, 12}},
                                                                            {"h.0.attn.c_proj.bias", {4}},  {"h.0.attn.c_proj.weight", {4, 4}},
                                                                            {"h.0.ln_1.bias", {4}},         {"h.0.ln_1.weight", {4}},
                                                                            {"wpe.weight", {32, 4}},        {"wte.weight", {16, 4}}};
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  const auto add = [&](const std::string& key, const std::vector<int64_t>& shape) {
    uint64_t bytes = 4;
    std::string dims;
    for (int64_t d : shape) {
      bytes *= static_cast<uint64_t>(d);
      dims += (dims.empty() ? "" : ",") + std::to_string(d);
    }
    json += ",\"" + key + "\":{\"dtype\":\"F32\",\"shape\":[" + dims + "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  };
  for (const auto& [key, shape] : layer0) add(key, shape);
  for (int64_t i = 0; i < extra; ++i) add("x" + std::to_string(i), {1});
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');
  data_bytes = offset;
  return json;
}

/// parse_safetensors_header on the million-key header, `reps` times; after the first, 1001 finds spread over
/// the keys and plan_gpt2_attention for layer 0 (which lists every other key as ignored).
int header_bench(int64_t extra, int reps) {
  uint64_t data_bytes = 0;
  const std::string json = million_key_header(extra, data_bytes);
  const auto* bytes = reinterpret_cast<const uint8_t*>(json.data());
  const uint64_t file_size = 8 + json.size() + data_bytes;
  std::vector<double> samples;
  size_t keys = 0;
  double find_ms = 0, plan_ms = 0;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const al::SafetensorsHeader h = al::parse_safetensors_header(bytes, json.size(), file_size);
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    keys = h.entries.size();
    if (i == 0) {
      size_t found = 0;
      const auto f0 = std::chrono::steady_clock::now();
      for (int64_t k = 0; k < 1000; ++k) found += h.find("x" + std::to_string(k * std::max<int64_t>(extra / 1000, 1))) != nullptr;
      found += h.find("h.0.attn.c_attn.weight") != nullptr;
      const auto f1 = std::chrono::steady_clock::now();
      find_ms = std::chrono::duration<double, std::milli>(f1 - f0).count();
      if (found != std::min<size_t>(1000, static_cast<size_t>(extra)) + 1 && extra >= 1000) throw std::runtime_error("find missed a key");
      al::CheckpointOptions options;
      options.num_heads = 2;
      const auto p0 = std::chrono::steady_clock::now();
      const al::CheckpointPlan plan = al::plan_gpt2_attention(h, options);
      const auto p1 = std::chrono::steady_clock::now();
      plan_ms = std::chrono::duration<double, std::milli>(p1 - p0).count();
      if (plan.report.ignored_count != extra + 4) throw std::runtime_error("the plan's ignored count is not every other key");
    }
  }
  std::cout << "{\"engine\": \"native\", \"header\": {\"keys\": " << keys << ", \"bytes\": " << json.size() << ", \"samples_ms\": " << json_samples(samples)
            << ", \"median_ms\": " << median(samples) << ", \"find_1001_ms\": " << find_ms << ", \"plan_ms\": " << plan_ms << "}}" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> tokens = {6, 64, 256, 1024};
  int reps = 5;
  bool serve = false;
  int64_t header_keys = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--stdin") {
      serve = true;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--header-keys" && i + 1 < argc) {
      header_keys = std::max<int64_t>(0, std::atoll(argv[++i]));
    } else if (a == "--tokens" && i + 1 < argc) {
      tokens.clear();
      std::stringstream list(argv[++i]);
      for (std::string t; std::getline(list, t, ',');) tokens.push_back(std::atoll(t.c_str()));
    } else {
      std::fprintf(stderr, "usage: %s [--tokens 6,64,256,1024] [--reps 5] | --stdin | --header-keys 1000000 [--reps 3]\n", argv[0]);
      return 2;
    }
  }
  try {
    if (header_keys >= 0) return header_bench(header_keys, reps);
    Bench bench{al::TorchGenerator(123)};
    if (serve) {
      std::cout << "{\"ready\": true}" << std::endl;
      std::string line;
      while (std::getline(std::cin, line)) {
        if (line == "quit") break;
        std::istringstream in(line);
        int64_t T = 0;
        int n = 0;
        if (!(in >> T >> n) || T < 1 || T > 1024 || n < 0) {
          std::cout << "{\"error\": \"bad command\"}" << std::endl;
          continue;
        }
        double checksum = 0.0;
        auto samples = bench.run(T, n, checksum);
        std::cout << "{\"T\": " << T << ", \"samples_ms\": " << json_samples(samples) << ", \"checksum\": " << checksum << "}" << std::endl;
      }
      return 0;
    }
    std::cout << "{\"engine\": \"native\", \"config\": \"MultiHeadAttention(768, 768, 1024, 0.0, 12)\", \"results\": [";
    for (size_t i = 0; i < tokens.size(); ++i) {
      double checksum = 0.0;
      auto samples = bench.run(tokens[i], reps, checksum);
      std::cout << (i ? ", " : "") << "{\"T\": " << tokens[i] << ", \"samples_ms\": " << json_samples(samples) << ", \"median_ms\": " << median(samples)
                << ", \"checksum\": " << checksum << "}";
    }
    std::cout << "]}" << std::endl;
  } catch (const std::exception& e) {
    std::cout << "{\"error\": \"" << e.what() << "\"}" << std::endl;
    return 1;
  }
  return 0;
}

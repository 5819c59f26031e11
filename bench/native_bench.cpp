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
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> tokens = {6, 64, 256, 1024};
  int reps = 5;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--stdin") {
      serve = true;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--tokens" && i + 1 < argc) {
      tokens.clear();
      std::stringstream list(argv[++i]);
      for (std::string t; std::getline(list, t, ',');) tokens.push_back(std::atoll(t.c_str()));
    } else {
      std::fprintf(stderr, "usage: %s [--tokens 6,64,256,1024] [--reps 5] | --stdin\n", argv[0]);
      return 2;
    }
  }
  try {
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

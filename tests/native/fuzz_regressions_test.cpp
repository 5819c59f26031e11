// Replays every committed fuzz input (tests/fuzz/corpus/<target>/ and tests/fuzz/regressions/<target>/)
// through the entry functions the libFuzzer targets use (tests/fuzz/fuzz_entries.hpp): the core may
// answer with AttentionError, and nothing else may escape. Under the sanitize preset, ASan and UBSan
// watch the replay too.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "../fuzz/fuzz_entries.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using Entry = std::function<void(const uint8_t*, size_t)>;

const fs::path kFuzzDir = fs::path(attention_lab::test_paths::fixtures) / ".." / "fuzz";

/// Every file under <kind>/<target>/ (missing folders are fine: no regression yet).
std::vector<fs::path> inputs(const std::string& kind, const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = kFuzzDir / kind / target;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

int replay(const std::string& target, const Entry& entry) {
  int count = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    for (const auto& path : inputs(kind, target)) {
      INFO("input ", path.string());
      std::ifstream in(path, std::ios::binary);
      const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
      try {
        attention_lab::fuzz::run(entry, bytes.data(), bytes.size());
      } catch (const std::exception& e) {
        FAIL_CHECK("escaped: " << std::string(e.what()));
      }
      ++count;
    }
  }
  return count;
}

}  // namespace

TEST_SUITE("fuzz inputs replayed") {
  TEST_CASE("fuzz_call_parser: every seed and regression parses without escaping") { CHECK(replay("fuzz_call_parser", attention_lab::fuzz::call_parser) >= 12); }
  TEST_CASE("fuzz_validator: every seed and regression validates (and runs) without escaping") { CHECK(replay("fuzz_validator", attention_lab::fuzz::validator) >= 12); }
  TEST_CASE("fuzz_checkpoint_header: every seed and regression reads without escaping") { CHECK(replay("fuzz_checkpoint_header", attention_lab::fuzz::checkpoint_header) >= 12); }
  TEST_CASE("fuzz_torch_save: every seed and regression opens (or is refused) without escaping") { CHECK(replay("fuzz_torch_save", attention_lab::fuzz::torch_save) >= 12); }
  TEST_CASE("fuzz_gpt2_file: every seed and regression builds, configures and runs without escaping") { CHECK(replay("fuzz_gpt2_file", attention_lab::fuzz::gpt2_file) >= 12); }
}

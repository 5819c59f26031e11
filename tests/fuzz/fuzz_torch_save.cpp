// libFuzzer target: see attention_lab::fuzz::torch_save in fuzz_entries.hpp (run by scripts/fuzz.sh).
#include "fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  attention_lab::fuzz::run(attention_lab::fuzz::torch_save, data, size);
  return 0;
}

// A check file: what the check snippet of docs/check-module.md saves with torch.save, read as a
// checkpoint (open_torch_save) and turned into check_module's arguments. Its keys: "call" (a string:
// the constructor call as written), "state_dict.*", "x", "output", optionally "stages.*" and "seed"
// (an int: torch.manual_seed(seed) was called right before the forward, in training mode).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/check_module.hpp"
#include "attention_lab/checkpoint.hpp"

namespace attention_lab {

/// What a check file holds, from its header alone: the call, and the entries to read (each by key).
struct CheckFilePlan {
  std::string call;
  std::vector<SafetensorsEntry> state_dict;  // keys "state_dict.<name>"
  SafetensorsEntry x, output;
  std::vector<SafetensorsEntry> stages;  // keys "stages.<id>"
  std::optional<double> seed;            // "seed" as saved (the caller applies the seed rule, session_detail::seed_from); none: eval mode
  /// Every entry above, the order they are read in.
  std::vector<SafetensorsEntry> reads() const;
};

/// The snippet's line that writes `key` ("call", "x", "output", "state_dict", "stages", "seed"), for hints.
std::string check_file_snippet_line(const std::string& key);

/// Plans reading a check file from its opened header. Throws AttentionError check_file: a safetensors
/// file (not a check file; the hint gives the snippet), a missing "call", "x", "output" or no
/// "state_dict.*" key, a "call" that is not a string, or a "seed" saved as a string or a tensor (names
/// the key; the hint shows the snippet line that writes it).
CheckFilePlan plan_check_file(const SafetensorsHeader& header);
/// Throws AttentionError too_large when the bytes to read, their float32 copies and check_bytes of
/// `config` (the parsed call's) on x exceed `budget`: called before any tensor is read.
void check_file_fits(const CheckFilePlan& plan, const ModuleConfig& config, double budget);

/// The tensors of the plan from their bytes (by key): float32 values (F32, F16, BF16, F64; BOOL, as a
/// mask buffer, as 0 and 1), names without their "state_dict." / "stages." prefix.
struct CheckFileTensors {
  std::vector<NamedTensor> state_dict, stages;
  Tensor x, output;
};
CheckFileTensors read_check_file(const CheckFilePlan& plan, const std::map<std::string, std::vector<uint8_t>>& bytes);

}  // namespace attention_lab

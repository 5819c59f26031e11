// What the files of Session share (session*.cpp only; not part of the public headers): the objects kept
// under handles, and the rules that read a caller's plain values (sizes, seeds, whole-number options,
// token ids, copy plans, the bytes of a read). Session's calls are split by job:
//   session.cpp             facts and configs, runs of a setup, memory, made tokens, lifetimes
//   session_input.cpp       the rules below, and tensor_from_input / slot_value_of_*
//   session_traces.cpp      resident traces (heatmaps, windows, copies of a stage)
//   session_modules.cpp     generators, modules, forwards, KV caches, conversions and copies
//   session_checkpoints.cpp checkpoint files: headers, plans, loads, a layer's input
//   session_gpt2.cpp        GPT-2 files: the whole-model run and generation, step by step
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/session.hpp"

namespace attention_lab {

struct Session::Gpt2File {
  std::shared_ptr<const SafetensorsHeader> header;  // shared with the checkpoint file it came from
  Gpt2Config config;
  std::unique_ptr<Gpt2Run> run;  // at most one of run and generation is in progress
  std::unique_ptr<Gpt2Generation> generation;
};

struct Session::Objects {
  std::map<uint32_t, std::unique_ptr<AttentionModule>> modules;  // a tree: its memory follows what is live
  // Generators are shared: a module keeps the one its training forwards draw on (dropout_generators),
  // so releasing the generator's handle (generator.dispose()) leaves that stream to the module.
  std::map<uint32_t, std::shared_ptr<TorchGenerator>> generators;
  std::map<uint32_t, std::shared_ptr<TorchGenerator>> dropout_generators;  // module -> its default generator
  std::map<uint32_t, std::shared_ptr<const SafetensorsHeader>> headers;
  std::map<uint32_t, std::unique_ptr<Gpt2File>> gpt2;
  std::map<uint32_t, std::pair<uint32_t, KvCache>> caches;  // handle -> (its module, the cache)
  std::map<uint32_t, std::vector<Stage>> traces;            // resident traces: the stages, values and all
  std::unique_ptr<ThreadPool> pool;                         // null: one thread (set_threads)
  uint32_t next = 1;
  std::map<uint32_t, double> revisions;  // module -> its parameters' revision (absent: as created)
  double writes = 0;
  void wrote(uint32_t module) { revisions[module] = ++writes; }

  /// The stages of resident trace `h`; AttentionError disposed when it was released.
  const std::vector<Stage>& trace(uint32_t h) const;
  /// Keeps `stages` under a new handle; the caller's copy of their facts.
  ResidentTrace keep_trace(std::vector<Stage> stages);
  /// Each object by its handle; AttentionError disposed (naming the kind and how to make one again) when it was released.
  AttentionModule& module(uint32_t h) const;
  const std::shared_ptr<TorchGenerator>& shared_generator(uint32_t h) const;
  TorchGenerator& generator(uint32_t h) const { return *shared_generator(h); }
  /// The generator a module's training forward draws on when it is given none (nullptr: none yet).
  TorchGenerator* dropout_generator(uint32_t module) const;
  const std::shared_ptr<const SafetensorsHeader>& header(uint32_t h) const;
  Gpt2File& model(uint32_t h) const;
  std::pair<uint32_t, KvCache>& cache(uint32_t h);
  /// Cache `h` as the caller sees it.
  CacheState state(uint32_t h);
  /// Keeps a module just made under a new handle.
  ModuleInfo keep(AttentionModule m);
};

namespace session_detail {

/// The largest count a call takes (2**31 - 1): a range up to it is written "from 1".
constexpr double kLargestCount = 2147483647.0;

/// The sizes as a Shape, else AttentionError tensor_shape naming `what` and the size that is not one.
Shape shape_from_input(const std::vector<double>& sizes, const std::string& what);
std::optional<Shape> optional_shape(const std::optional<std::vector<double>>& sizes);
/// A seed in [kLowestSeed, kHighestSeed] as torch.manual_seed's 64 bits (a negative one wraps, as there).
uint64_t seed_from(double seed);
/// A count or an index the caller gave: `x` as a whole number from `lowest` to `highest`, else
/// AttentionError `code` naming `name`, the range and `x` as it was typed ("num_tokens must be a whole
/// number from 1, got 1.5"; NaN, 1e-40 and Infinity too, never truncated or printed as 0.000000).
int64_t whole_number(double x, const std::string& name, double lowest, double highest, const char* code, const std::string& hint);
/// What an option was given as, for a refusal: "a number", "a boolean" or "a string".
std::string given_as(const NumberOption& v);
/// An optional whole-number option in [lowest, 2**31): nullopt when absent; AttentionError `code`
/// naming `key` for anything else (a string, NaN, 2.5, a number below `lowest`).
std::optional<int64_t> whole_option(const NumberOption& v, const char* key, double lowest, const char* code, int64_t example);
/// Token ids: whole numbers. One that is not (1.5, NaN) is refused here, naming its position and value;
/// a whole number outside the vocabulary (-1, 50257) is refused by the checkpoint code, which knows it.
std::vector<int64_t> ids_from(const std::vector<double>& ids);
CopyPlan plan_from(const std::vector<PlanEntryInput>& entries);

/// A check's constructor call (Session::parse_call's): its first error diagnostic thrown as AttentionError (its code
/// and slot), then validated_config's errors.
ModuleConfig checked_call(const ParsedCall& parsed);

using Buffers = std::map<std::string, std::vector<uint8_t>>;
/// The caller's bytes, once every read is among them (a read it did not give is checkpoint_truncated).
template <typename Read, typename NameOf>
const Buffers& given(const std::vector<Read>& reads, NameOf name_of, const Buffers& buffers) {
  for (const auto& r : reads)
    if (buffers.count(name_of(r)) == 0) throw AttentionError("checkpoint_truncated", "", name_of(r) + " could not be read", "");
  return buffers;
}
const Buffers& bytes_of(const std::vector<ByteRead>& reads, const Buffers& buffers);
/// The reads with absolute file offsets.
std::vector<FileRead> file_reads(const SafetensorsHeader& h, const std::vector<ByteRead>& reads);

}  // namespace session_detail

}  // namespace attention_lab

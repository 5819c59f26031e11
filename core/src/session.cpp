#include "attention_lab/session.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <new>

#include "attention_lab/ops.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

namespace {

/// A size: a whole number in [0, 2**31).
bool is_size(double x) { return x >= 0 && x == std::floor(x) && x < 2147483648.0; }

/// Why `x` is not a size (", below 0", ...), or "" when it is one: each refusal says what it saw.
std::string not_a_size(double x) {
  if (std::isnan(x)) return " is NaN, not a number";
  if (x < 0) return " is " + format_number(x) + ", below 0";
  if (std::isfinite(x) && x != std::floor(x)) return " is " + format_number(x) + ", not a whole number";
  if (!is_size(x)) return " is " + format_number(x) + ", over the largest size here, 2,147,483,647 (2**31 - 1)";
  return "";
}

Shape shape_from_input(const std::vector<double>& sizes, const std::string& what) {
  if (sizes.size() > kMaxTensorAxes)
    throw AttentionError("tensor_shape", what, what + " has " + std::to_string(sizes.size()) + " axes", "Tensors here have at most " + std::to_string(kMaxTensorAxes) + " axes.");
  // "x.shape[0]", but "shape[0]" and "inputShape[0]" for a shape given alone.
  const bool is_shape = what.size() >= 5 && (what.compare(what.size() - 5, 5, "shape") == 0 || what.compare(what.size() - 5, 5, "Shape") == 0);
  Shape shape;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (const std::string why = not_a_size(sizes[i]); !why.empty())
      throw AttentionError("tensor_shape", what, what + (is_shape ? "[" : ".shape[") + std::to_string(i) + "]" + why, "Sizes are whole numbers from 0 to 2,147,483,647.");
    shape.push_back(static_cast<int64_t>(sizes[i]));
  }
  return shape;
}

/// A seed in [kLowestSeed, kHighestSeed] as torch.manual_seed's 64 bits (a negative one wraps, as there).
uint64_t seed_from(double seed) {
  if (!(seed == std::floor(seed) && seed >= kLowestSeed && seed <= kHighestSeed)) {  // NaN and infinities fail too
    const std::string highest = std::to_string(static_cast<int64_t>(kHighestSeed));
    throw AttentionError("seed", "seed", "the seed must be a whole number from -" + highest + " to " + highest + " (2**53 - 1), got " + format_number(seed),
                         "torch.manual_seed takes an int, e.g. 123.");
  }
  return seed < 0 ? static_cast<uint64_t>(static_cast<int64_t>(seed)) : static_cast<uint64_t>(seed);
}

std::optional<Shape> optional_shape(const std::optional<std::vector<double>>& sizes) {
  if (!sizes) return std::nullopt;
  return shape_from_input(*sizes, "inputShape");
}

/// The largest count a call takes (2**31 - 1): a range up to it is written "from 1".
constexpr double kLargestCount = 2147483647.0;

/// "from 1" or "from 0 to 3".
std::string range_text(double lowest, double highest) { return "from " + format_number(lowest) + (highest < kLargestCount ? " to " + format_number(highest) : ""); }

/// A count or an index the caller gave: `x` as a whole number from `lowest` to `highest`, else
/// AttentionError `code` naming `name`, the range and `x` as it was typed ("num_tokens must be a whole
/// number from 1, got 1.5"; NaN, 1e-40 and Infinity too, never truncated or printed as 0.000000).
int64_t whole_number(double x, const std::string& name, double lowest, double highest, const char* code, const std::string& hint) {
  if (x >= lowest && x <= highest && x == std::floor(x)) return static_cast<int64_t>(x);
  throw AttentionError(code, name, name + " must be a whole number " + range_text(lowest, highest) + ", got " + format_number(x), hint);
}

/// What an option was given as, for a refusal: "a number", "a boolean" or "a string".
std::string given_as(const NumberOption& v) { return v.number ? "a number" : v.boolean ? "a boolean" : "a string"; }

/// An optional whole-number option in [lowest, 2**31): nullopt when absent; AttentionError `code`
/// naming `key` for anything else (a string, NaN, 2.5, a number below `lowest`).
std::optional<int64_t> whole_option(const NumberOption& v, const char* key, double lowest, const char* code) {
  if (!v.given) return std::nullopt;
  if (!v.number) throw AttentionError(code, key, std::string(key) + " must be a whole number " + range_text(lowest, kLargestCount) + ", got " + given_as(v), "");
  return whole_number(v.value, key, lowest, kLargestCount, code, "");
}

/// Most token ids one call reads (a GPT-2 context is 1,024; the facade passes at most one more).
constexpr size_t kMaxTokenIds = 100000;

/// Token ids: whole numbers. One that is not (1.5, NaN) is refused here, naming its position and value;
/// a whole number outside the vocabulary (-1, 50257) is refused by the checkpoint code, which knows it.
std::vector<int64_t> ids_from(const std::vector<double>& ids) {
  if (ids.size() > kMaxTokenIds)
    throw AttentionError("too_large", "tokens", "more than " + with_commas(static_cast<double>(kMaxTokenIds)) + " token ids",
                         "A GPT-2 context holds 1,024 tokens; give at most that many.");
  std::vector<int64_t> out;
  out.reserve(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) {
    const double x = ids[t];
    std::string why;
    if (std::isnan(x))
      why = "NaN, not a number";
    else if (!std::isfinite(x) || std::fabs(x) > 9007199254740992.0)
      why = format_number(x) + ", far outside any vocabulary";
    else if (x != std::floor(x))
      why = format_number(x) + ", not a whole number";
    if (!why.empty()) throw AttentionError("checkpoint_token", "tokens", "token " + std::to_string(t) + " is " + why, "Token ids are whole numbers, e.g. 15496 for \"Hello\".");
    out.push_back(static_cast<int64_t>(x));
  }
  return out;
}

CopyPlan plan_from(const std::vector<PlanEntryInput>& entries) {
  CopyPlan plan;
  for (const auto& e : entries) {
    if (!e.object)
      throw AttentionError("copy_plan", e.name, "the copy plan entry for '" + e.name + "' must be {copy, transpose}", "For example {W_query: {copy: true, transpose: true}}.");
    plan[e.name] = {e.copy, e.transpose};
  }
  return plan;
}

/// The caller's bytes, once every read is among them (a read it did not give is checkpoint_truncated).
template <typename Read, typename NameOf>
const std::map<std::string, std::vector<uint8_t>>& given(const std::vector<Read>& reads, NameOf name_of, const std::map<std::string, std::vector<uint8_t>>& buffers) {
  for (const auto& r : reads)
    if (buffers.count(name_of(r)) == 0) throw AttentionError("checkpoint_truncated", "", name_of(r) + " could not be read", "");
  return buffers;
}
const std::string& read_name(const ByteRead& r) { return r.name; }

const std::map<std::string, std::vector<uint8_t>>& bytes_of(const std::vector<ByteRead>& reads, const std::map<std::string, std::vector<uint8_t>>& buffers) {
  return given(reads, read_name, buffers);
}

std::vector<FileRead> file_reads(const SafetensorsHeader& h, const std::vector<ByteRead>& reads) {
  std::vector<FileRead> out;
  for (const auto& r : reads) out.push_back({r.name, static_cast<double>(h.data_start() + r.entry.begin), static_cast<double>(h.data_start() + r.entry.end)});
  return out;
}

}  // namespace

SlotValue slot_value_of_number(double v) { return std::isfinite(v) && v == std::floor(v) ? SlotValue::integer(v) : SlotValue::floating(v); }

SlotValue slot_value_of_text(const std::string& text) { return parse_literal(text); }

Tensor tensor_from_input(TensorInput t, const std::string& what) {
  Shape shape = shape_from_input(t.shape, what);
  int64_t numel = 0;
  const bool fits = checked_numel(shape, numel);  // false when the product overflows 64 bits
  if (!fits || static_cast<double>(numel) != static_cast<double>(t.data.size()))
    throw AttentionError(
        "tensor_size", what,
        what + " has shape " + shape_string(shape) + " (" + std::to_string(static_cast<long long>(numel)) + " values) but data holds " + std::to_string(t.data.size()),
        "Give exactly as many values as the product of the shape, row-major.");
  return Tensor(std::move(shape), std::move(t.data));
}

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

  const std::vector<Stage>& trace(uint32_t h) const {
    const auto it = traces.find(h);
    if (it == traces.end()) throw AttentionError("disposed", "trace", "this trace was disposed", "Run again for a new trace (or keep it until you are done drawing it).");
    return it->second;
  }
  /// Keeps `stages` under a new handle; the caller's copy of their facts.
  ResidentTrace keep_trace(std::vector<Stage> stages) {
    ResidentTrace r;
    r.handle = next++;
    std::vector<float> scratch;
    for (const Stage& st : stages) {
      const bool empty = numel_of(st.shape()) == 0;
      r.stages.push_back({st.id, st.display, st.title, st.formula, st.axes, st.shape(), st.summary, st.slice_summaries,
                          empty ? std::nan("") : static_cast<double>(*stage_rows(stages, st, 0, 1, scratch))});
      r.bytes += 4.0 * static_cast<double>(st.tensor.data.size());  // a view holds none
    }
    traces[r.handle] = std::move(stages);
    return r;
  }

  AttentionModule& module(uint32_t h) const {
    const auto it = modules.find(h);
    if (it == modules.end()) throw AttentionError("disposed", "module", "this module was disposed", "Create it again with lab.create (or keep it until you are done).");
    return *it->second;
  }
  const std::shared_ptr<TorchGenerator>& shared_generator(uint32_t h) const {
    const auto it = generators.find(h);
    if (it == generators.end()) throw AttentionError("disposed", "generator", "this generator was disposed", "Make a new one with lab.manualSeed(seed).");
    return it->second;
  }
  TorchGenerator& generator(uint32_t h) const { return *shared_generator(h); }
  /// The generator a module's training forward draws on when it is given none (nullptr: none yet).
  TorchGenerator* dropout_generator(uint32_t module) const {
    const auto it = dropout_generators.find(module);
    return it == dropout_generators.end() ? nullptr : it->second.get();
  }
  const std::shared_ptr<const SafetensorsHeader>& header(uint32_t h) const {
    const auto it = headers.find(h);
    if (it == headers.end()) throw AttentionError("disposed", "checkpoint", "this checkpoint file was disposed", "Open the file again with lab.openCheckpoint.");
    return it->second;
  }
  Gpt2File& model(uint32_t h) const {
    const auto it = gpt2.find(h);
    if (it == gpt2.end()) throw AttentionError("disposed", "model", "this GPT-2 model was disposed", "Load the file again with lab.loadGPT2.");
    return *it->second;
  }
  std::pair<uint32_t, KvCache>& cache(uint32_t h) {
    const auto it = caches.find(h);
    if (it == caches.end()) throw AttentionError("disposed", "cache", "this KV cache was disposed", "Make a new one with module.newCache().");
    return it->second;
  }
  CacheState state(uint32_t h) {
    const auto& [module, c] = cache(h);
    const double rows = static_cast<double>(std::max<int64_t>(c.batch, 1) * c.entries());  // tokens held over every batch row
    const auto owner = modules.find(module);                                               // a cache can outlive its module's handle
    const double mha = owner == modules.end() ? 0.0 : rows * owner->second->config().kv_cache_bytes_per_token_mha();
    return {h, module, static_cast<double>(c.window), static_cast<double>(c.position), static_cast<double>(c.entries()), c.bytes(), mha};
  }
  ModuleInfo keep(AttentionModule m) {
    ModuleInfo info;
    info.config = m.config();
    info.parameter_count = attention_lab::parameter_count(info.config);
    info.handle = next++;
    modules[info.handle] = std::make_unique<AttentionModule>(std::move(m));
    return info;
  }
};

Session::Session() : objects_(std::make_unique<Objects>()) {}
Session::~Session() = default;

// ---- facts and configs ----

std::vector<ClassSpec> Session::classes() const { return class_specs(); }

std::vector<double> Session::seed_range() const { return {kLowestSeed, kHighestSeed}; }

std::vector<Gpt2Size> Session::gpt2_sizes() const { return {std::begin(kGpt2Sizes), std::end(kGpt2Sizes)}; }

bool Session::kernel_fuses_multiply_add() const { return ops::kernel_fuses_multiply_add(); }

double Session::set_threads(double threads) {
  whole_number(threads, "threads", 1, ThreadPool::kMaxThreads, "bad_threads", "Pass {threads: 1} for one thread, or leave threads out for as many as the machine has (at most 4).");
  objects_->pool.reset();  // join the old workers before starting new ones
  if (threads > 1) objects_->pool = std::make_unique<ThreadPool>(static_cast<int>(threads));
  return this->threads();
}

double Session::threads() const { return objects_->pool ? objects_->pool->size() : 1; }

ParsedCall Session::parse_call(const std::string& text) const {
  ParsedCall c = attention_lab::parse_call(text);
  // A float written in an int slot (768.0) keeps its text, so create(config) reports it like the call did.
  if (const ClassSpec* spec = find_class(c.class_name)) {
    for (const auto& slot : spec->slots) {
      const auto it = c.config.find(slot.name);
      if (it != c.config.end() && slot.type == SlotType::Int && it->second.kind == SlotValue::Kind::Float) it->second = SlotValue::string(it->second.python());
    }
  }
  return c;
}

std::vector<Diagnostic> Session::check(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape,
                                       const std::optional<bool>& training) const {
  CheckOptions opts;
  opts.training = training;
  opts.input_shape = optional_shape(input_shape);
  return check_config(class_name, config, opts);
}

Setup Session::setup(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape, const std::optional<bool>& training,
                     bool trace) const {
  SetupOptions opts;
  opts.training = training;
  opts.input_shape = optional_shape(input_shape);
  opts.trace = trace;
  return make_setup(class_name, config, opts);
}

Setup Session::describe(const std::string& class_name, const SlotMap& config) const { return make_setup(class_name, config, SetupOptions{}); }

RunResult Session::run_module(const std::string& class_name, const SlotMap& config, TensorInput x, double seed, bool training, bool trace) const {
  return run_with(class_name, config, std::move(x), seed, training, trace, false);
}

RunResult Session::run_with(const std::string& class_name, const SlotMap& config, TensorInput x, double seed, bool training, bool trace, bool views) const {
  const Tensor input = tensor_from_input(std::move(x), "x");
  RunOptions opts;
  opts.seed = seed_from(seed);
  opts.training = training;
  opts.trace = trace;
  opts.pool = objects_->pool.get();
  opts.stage_views = views;
  return attention_lab::run_module(class_name, config, input, opts);
}

ResidentRun Session::run_resident(const std::string& class_name, const SlotMap& config, TensorInput x, double seed, bool training) {
  RunResult r = run_with(class_name, config, std::move(x), seed, training, true, true);
  return {std::move(r.config), std::move(r.output), objects_->keep_trace(std::move(r.trace)), std::move(r.warnings)};
}

MemoryEstimate Session::estimate_resident_bytes(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape) const {
  const ModuleConfig c = validated_config(class_name, config);
  return {plan_resident_bytes(plan_forward(c), optional_shape(input_shape)), kDefaultMemoryBudgetBytes};
}

namespace {
const Stage& stage_of(const std::vector<Stage>& stages, const std::string& id) {
  for (const Stage& s : stages)
    if (s.id == id) return s;
  std::string ids;
  for (const Stage& s : stages) ids += (ids.empty() ? "" : ", ") + s.id;
  throw AttentionError("trace_stage", "stage", "this trace has no stage '" + id + "'", "Its stages are " + ids + ".");
}

/// index as a whole number in [0, size) of axis `axis` of `s`, else trace_range naming both.
int64_t index_in(const Stage& s, size_t axis, double index, const char* what) {
  const double size = static_cast<double>(s.shape()[axis]);
  if (!(index == std::floor(index)))  // NaN, 1.5: not an index at all
    whole_number(index, what, 0, std::max(size - 1, 0.0), "trace_range", "Give an index of axis " + std::to_string(axis) + " (" + s.axes[axis] + ") of " + s.id + ".");
  if (!(index >= 0 && index < size))
    throw AttentionError("trace_range", what,
                         std::string(what) + " " + format_number(index) + " is outside axis " + std::to_string(axis) + " (" + s.axes[axis] + ") of " + s.id + ", which has " +
                             format_g(size, 12) + (size == 1 ? " entry" : " entries"),
                         size > 0 ? "Use a whole number from 0 to " + format_g(size - 1, 12) + "." : "That axis is empty.");
  return static_cast<int64_t>(index);
}
}  // namespace

TraceHeatmap Session::trace_heatmap(uint32_t trace, const std::string& stage, const std::vector<double>& leading, double height, double width) const {
  const std::vector<Stage>& stages = objects_->trace(trace);
  const Stage& s = stage_of(stages, stage);
  const Shape& shape = s.shape();
  const size_t nd = shape.size();
  const size_t lead = nd >= 2 ? nd - 2 : 0;
  if (leading.size() != lead)
    throw AttentionError("trace_range", "leading", s.id + " has " + std::to_string(lead) + " axes before its last two, got " + std::to_string(leading.size()) + " indices",
                         lead == 0 ? "Give no batch or head index for this stage." : "Give one index per leading axis (batch, then head).");
  for (const auto& [side, name] : {std::pair{height, "height"}, std::pair{width, "width"}})
    whole_number(side, name, 1, 4096, "trace_range", std::string("The heatmap's ") + name + " in cells (default 512); a slice smaller than that is drawn at its own size.");
  int64_t offset = 0;
  for (size_t i = 0; i < lead; ++i) offset = offset * shape[i] + index_in(s, i, leading[i], i == 0 ? "batch" : "head");
  const int64_t rows = nd >= 2 ? shape[nd - 2] : 1, cols = nd >= 1 ? shape[nd - 1] : 1;
  TraceHeatmap h;
  h.rows = static_cast<double>(rows);
  h.cols = static_cast<double>(cols);
  const int64_t hh = std::min(rows, static_cast<int64_t>(height)), ww = std::min(cols, static_cast<int64_t>(width));
  h.height = static_cast<double>(hh);
  h.width = static_cast<double>(ww);
  std::vector<float> scratch;
  if (rows > 0 && cols > 0) h.values = max_pool(stage_rows(stages, s, offset * rows, rows, scratch), rows, cols, hh, ww);
  return h;
}

TraceWindow Session::trace_window(uint32_t trace, const std::string& stage, const std::vector<double>& offsets, const std::vector<double>& sizes) const {
  const std::vector<Stage>& stages = objects_->trace(trace);
  const Stage& s = stage_of(stages, stage);
  const Shape& shape = s.shape();
  const size_t nd = shape.size();
  if (offsets.size() != nd || sizes.size() != nd)
    throw AttentionError("trace_range", "offsets",
                         s.id + " has " + std::to_string(nd) + " axes, got " + std::to_string(offsets.size()) + " offsets and " + std::to_string(sizes.size()) + " sizes",
                         "Give one offset and one size per axis.");
  std::vector<int64_t> at(nd), n(nd);
  for (size_t i = 0; i < nd; ++i) {
    const double size = static_cast<double>(shape[i]);
    for (const auto& [v, name] : {std::pair{offsets[i], "offsets"}, std::pair{sizes[i], "sizes"}})
      if (!(v == std::floor(v)))  // NaN, 1.5: not a position at all
        throw AttentionError("trace_range", name, std::string(name) + "[" + std::to_string(i) + "] must be a whole number, got " + format_number(v),
                             "Give one whole number per axis of " + s.id + ", e.g. offsets [0, 0, 0, 0] and sizes [1, 1, 6, 6].");
    if (!(offsets[i] >= 0 && offsets[i] <= size && offsets[i] == std::floor(offsets[i])) || !(sizes[i] >= 0 && sizes[i] == std::floor(sizes[i]) && offsets[i] + sizes[i] <= size))
      throw AttentionError("trace_range", "offsets",
                           "offset " + format_number(offsets[i]) + " and size " + format_number(sizes[i]) + " on axis " + std::to_string(i) + " (" + s.axes[i] + ") of " + s.id +
                               " reach past its " + format_g(size, 12) + " entries",
                           "Keep offset + size within the axis: at most " + format_g(size, 12) + ".");
    at[i] = static_cast<int64_t>(offsets[i]);
    n[i] = static_cast<int64_t>(sizes[i]);
  }
  std::vector<float> scratch;
  const RowReader row = [&](int64_t r) { return stage_rows(stages, s, r, 1, scratch); };
  return {tensor_window(shape, row, at, n), window_row_sums(shape, row, at, n)};
}

Tensor Session::trace_data(uint32_t trace, const std::string& stage) const {
  const std::vector<Stage>& stages = objects_->trace(trace);
  return stage_tensor(stages, stage_of(stages, stage));
}

double Session::trace_bytes_in_use() const {
  double bytes = 0;
  for (const auto& [h, stages] : objects_->traces)
    for (const Stage& s : stages) bytes += 4.0 * static_cast<double>(s.tensor.data.size());
  return bytes;
}

MemoryEstimate Session::estimate_bytes(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape, bool trace) const {
  const ModuleConfig c = validated_config(class_name, config);
  return {attention_lab::estimate_bytes(c, optional_shape(input_shape), trace), kDefaultMemoryBudgetBytes};
}

MemoryEstimate Session::reserve_memory(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape, bool resident, bool trace) {
  const MemoryEstimate e = resident ? estimate_resident_bytes(class_name, config, input_shape) : estimate_bytes(class_name, config, input_shape, trace);
  if (e.bytes > e.budget)
    throw AttentionError("too_large", "inputShape",
                         "a run of this setup needs about " + format_g(e.bytes / 1048576.0, 4) + " MiB, over the memory budget of " + format_g(e.budget / 1048576.0, 4) + " MiB",
                         "Use fewer tokens or a smaller batch.");
  const size_t n = static_cast<size_t>(e.bytes);
  std::unique_ptr<char[]> block(new (std::nothrow) char[n]);
  if (block == nullptr)
    throw AttentionError("out_of_memory", "inputShape", "the heap could not grow by " + format_g(e.bytes / 1048576.0, 4) + " MiB for this run",
                         "Close other tabs or use fewer tokens.");
  // One write per 4 KiB page makes the system map it now (a page's first touch is what costs here,
  // ~2 ms per 10 MiB on these VMs), by every thread of the pool on its own 4 MiB chunks.
  constexpr size_t kPage = 4096, kChunk = size_t{1} << 22;
  volatile char* page = block.get();  // volatile: the writes are the point, and must not be optimized away
  const int64_t chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
  parallel_for(objects_->pool.get(), chunks, static_cast<double>(n), [&](int64_t c) {
    const size_t end = std::min(n, static_cast<size_t>(c + 1) * kChunk);
    for (size_t i = static_cast<size_t>(c) * kChunk; i < end; i += kPage) page[i] = 0;
  });
  return e;
}

ModuleConfig Session::equivalent_config(const std::string& class_name, const SlotMap& config) const {
  return attention_lab::equivalent_config(validated_config(class_name, config));
}

std::string Session::copy_code(const std::string& from_class, const std::string& to_class, const std::vector<PlanEntryInput>& plan) const {
  const auto spec_of = [](const std::string& name) {
    const ClassSpec* spec = find_class(name);
    if (spec == nullptr) throw AttentionError("copy_unsupported", "", "weight copy works between SelfAttention_v1 and SelfAttention_v2 (got " + name + ")", "");
    return spec;
  };
  return attention_lab::copy_code(*spec_of(from_class), *spec_of(to_class), plan_from(plan));
}

Tensor Session::book_tokens() const { return attention_lab::book_tokens(); }

namespace {
/// The most numbers a token matrix made here holds (num_tokens x d_in): 64 Mi floats, 256 MiB.
constexpr double kMaxTokenValues = 64.0 * 1024 * 1024;

/// d_in of made tokens, a whole number from 1 whose product with num_tokens fits kMaxTokenValues.
int64_t token_width(double num_tokens, double d_in, const char* example) {
  const int64_t d = whole_number(d_in, "d_in", 1, kLargestCount, "tensor_shape", std::string("d_in is the width of each token's embedding, e.g. ") + example + ".");
  if (num_tokens * static_cast<double>(d) > kMaxTokenValues)
    throw AttentionError("too_large", "d_in",
                         format_number(num_tokens) + " tokens of width " + format_number(d_in) + " would be " + with_commas(num_tokens * static_cast<double>(d)) +
                             " numbers, over the " + with_commas(kMaxTokenValues) + " made here",
                         "Use fewer tokens or a smaller d_in (GPT-2 small's is 768).");
  return d;
}
}  // namespace

Tensor Session::seeded_tokens(double num_tokens, double d_in, double seed) const {
  const char* example = "seededTokens(6, 3, 123): six tokens of width 3";
  const int64_t n = whole_number(num_tokens, "num_tokens", 1, kLargestCount, "tensor_shape", std::string("num_tokens is how many tokens to make, e.g. ") + example + ".");
  return attention_lab::seeded_tokens(n, token_width(num_tokens, d_in, example), seed_from(seed));
}

Tensor Session::sentence_tokens(const std::vector<std::string>& words, double d_in, double seed) const {
  if (words.empty()) throw AttentionError("tensor_shape", "words", "there are no words to embed", "Type at least one word.");
  const int64_t d = token_width(static_cast<double>(words.size()), d_in, "sentenceTokens([\"Your\", \"journey\"], 3, 123)");
  return attention_lab::sentence_tokens(words, d, seed_from(seed));
}

// ---- generators ----

uint32_t Session::manual_seed(double seed) {
  const uint64_t s = seed_from(seed);
  objects_->generators.emplace(objects_->next, std::make_shared<TorchGenerator>(s));
  return objects_->next++;
}

std::vector<uint32_t> Session::generator_state(uint32_t generator) const { return objects_->generator(generator).state(); }

Tensor Session::rand(uint32_t generator, const std::vector<double>& shape) {
  TorchGenerator& g = objects_->generator(generator);
  const Shape s = shape_from_input(shape, "shape");
  int64_t numel = 0;
  if (!checked_numel(s, numel) || static_cast<double>(numel) > 256.0 * 1024 * 1024) throw AttentionError("too_large", "shape", "rand of " + shape_string(s) + " is too large", "");
  return g.rand(s);
}

Tensor Session::dropout(uint32_t generator, TensorInput x, double p) {
  TorchGenerator& g = objects_->generator(generator);
  return g.dropout(tensor_from_input(std::move(x), "tensor"), p);
}

// ---- modules ----

ModuleInfo Session::create(const std::string& class_name, const SlotMap& config, uint32_t generator) {
  const ModuleConfig c = validated_config(class_name, config);
  const ModuleInfo info = objects_->keep(AttentionModule(c, objects_->generator(generator)));
  use_generator(info.handle, generator);  // torch: dropout draws go on where the constructor's draws ended
  return info;
}

bool Session::use_generator(uint32_t module, uint32_t generator) {
  objects_->module(module);  // disposed
  objects_->dropout_generators[module] = objects_->shared_generator(generator);
  return true;
}

ModuleInfo Session::from_parameters(const std::string& class_name, const SlotMap& config, std::vector<ParameterInput> parameters) {
  const ModuleConfig c = validated_config(class_name, config);
  std::vector<NamedTensor> given;
  for (auto& p : parameters) given.push_back({p.name, tensor_from_input(std::move(p.tensor), "parameter")});
  std::vector<std::string> notes;
  ModuleInfo info = objects_->keep(module_from_state_dict(c, given, &notes));
  info.notes = std::move(notes);
  return info;
}

std::vector<NamedTensor> Session::parameters(uint32_t module) const { return objects_->module(module).parameters(); }

bool Session::set_parameter(uint32_t module, const std::string& name, TensorInput t) {
  objects_->module(module).set_parameter(name, tensor_from_input(std::move(t), name));
  objects_->wrote(module);
  return true;
}

std::vector<HeadShare> Session::head_shares(uint32_t module, double parts, bool training) const {
  const AttentionModule& m = objects_->module(module);
  const int64_t n = whole_number(parts, "parts", 1, 64, "bad_options", "Pass the number of Workers the forward may use, e.g. 2.");
  return attention_lab::head_shares(m.plan(), n, training);
}

Tensor Session::forward_share(uint32_t module, TensorInput x, double first, double count, bool training) const {
  const AttentionModule& m = objects_->module(module);
  const auto whole = [](double v) { return v >= 0 && v <= 1e6 && std::floor(v) == v; };
  if (!whole(first) || !whole(count))
    throw AttentionError("head_share", "share",
                         "a share is a first head and a count of heads, whole numbers; got first " + format_number(first) + ", count " + format_number(count),
                         "Take the shares module.headShares(parts) gives.");
  const HeadShare share{static_cast<int64_t>(first), static_cast<int64_t>(count)};
  const Tensor input = tensor_from_input(std::move(x), "x");
  ForwardOptions opts;
  opts.training = training;
  opts.share = &share;
  return m.forward(input, opts);
}

ForwardResult Session::project_heads(uint32_t module, TensorInput x, std::vector<TensorInput> parts, bool training) const {
  const AttentionModule& m = objects_->module(module);
  const Tensor input = tensor_from_input(std::move(x), "x");
  check_input(m.plan(), input, "x", kDefaultMemoryBudgetBytes, false);  // as forward checks it, the budget included, before the join allocates
  // heads_concat: the parts side by side along the last axis, each (b, num_tokens, width_i)
  std::vector<Tensor> pieces;
  int64_t width = 0;
  for (TensorInput& part : parts) {
    pieces.push_back(tensor_from_input(std::move(part), "heads_concat"));
    const Shape& s = pieces.back().shape;
    if (s.size() != 3 || input.shape.size() != 3 || s[0] != input.shape[0] || s[1] != input.shape[1])
      throw AttentionError("head_share", "heads_concat",
                           "share " + std::to_string(pieces.size() - 1) + " has shape " + shape_string(s) + ", not (b, num_tokens, width) of x " + shape_string(input.shape),
                           "Pass each share's forwardShare output for this x, in head order.");
    width += s[2];
  }
  if (width != m.plan().proj_width)
    throw AttentionError("head_share", "heads_concat", "the parts are " + std::to_string(width) + " wide together, and the heads make " + std::to_string(m.plan().proj_width),
                         "Pass every share's forwardShare output of module.headShares(parts), in head order.");
  const int64_t rows = input.shape[0] * input.shape[1];
  Tensor concat({input.shape[0], input.shape[1], width});
  int64_t column = 0;
  for (const Tensor& piece : pieces) {
    const int64_t w = piece.shape[2];
    for (int64_t r = 0; r < rows; ++r) std::copy_n(piece.data.data() + r * w, w, concat.data.data() + r * width + column);
    column += w;
  }
  ForwardResult r;
  ForwardOptions opts;
  opts.training = training;
  opts.warnings = &r.warnings;
  opts.pool = objects_->pool.get();
  r.output = m.project_heads(input, concat, opts);
  return r;
}

double Session::module_revision(uint32_t module) const {
  objects_->module(module);  // disposed
  const auto it = objects_->revisions.find(module);
  return it == objects_->revisions.end() ? 0.0 : it->second;
}

ForwardResult Session::forward(uint32_t module, TensorInput x, bool training, uint32_t generator, bool trace, uint32_t cache) {
  return forward_with(module, std::move(x), training, generator, trace, cache, false);
}

ForwardResult Session::forward_with(uint32_t module, TensorInput x, bool training, uint32_t generator, bool trace, uint32_t cache, bool views) {
  const AttentionModule& m = objects_->module(module);
  KvCache* kv = nullptr;
  if (cache != 0) {
    auto& [owner, c] = objects_->cache(cache);
    if (owner != module) throw AttentionError("cache_module", "cache", "this cache was made by another module", "Make the cache with the module that runs it: module.newCache().");
    kv = &c;
  }
  const Tensor input = tensor_from_input(std::move(x), "x");  // forward checks the memory budget before allocating
  ForwardResult r;
  std::vector<Stage> stages;
  ForwardOptions opts;
  opts.training = training;
  // The draws go to a copy, kept only when the forward succeeds: a failed one (the heap full) leaves the
  // generator as it was, so calling it again draws the same masks. The module's own generator when none is given.
  TorchGenerator* source = generator != 0 ? &objects_->generator(generator) : objects_->dropout_generator(module);
  std::optional<TorchGenerator> draws;
  if (source != nullptr) draws = *source;
  opts.generator = draws ? &*draws : nullptr;
  opts.trace = trace ? &stages : nullptr;
  opts.warnings = &r.warnings;
  opts.cache = kv;
  opts.pool = objects_->pool.get();
  opts.stage_views = views;
  r.output = m.forward(input, opts);
  if (draws) *source = *draws;
  if (trace) r.trace = std::move(stages);
  if (kv != nullptr) r.cache = objects_->state(cache);
  return r;
}

ResidentForward Session::forward_resident(uint32_t module, TensorInput x, bool training, uint32_t generator, uint32_t cache) {
  ForwardResult r = forward_with(module, std::move(x), training, generator, true, cache, true);
  return {std::move(r.output), objects_->keep_trace(std::move(*r.trace)), std::move(r.warnings), std::move(r.cache)};
}

CacheState Session::new_cache(uint32_t module, const NumberOption& window) {
  const AttentionModule& m = objects_->module(module);
  if (!m.caches_keys())
    throw AttentionError("cache_unsupported", "cache", m.config().class_name() + " has no causal mask over its own keys, so there is nothing to cache",
                         "A KV cache works for the classes with a causal mask (their facts say mask: causal).");
  KvCache c;
  c.window = whole_option(window, "window", 1, "cache_window").value_or(0);
  const uint32_t h = objects_->next++;
  objects_->caches[h] = {module, std::move(c)};
  return objects_->state(h);
}

CacheState Session::reset_cache(uint32_t cache) {
  KvCache& c = objects_->cache(cache).second;
  KvCache fresh;
  fresh.window = c.window;
  c = std::move(fresh);
  return objects_->state(cache);
}

ModuleInfo Session::convert(uint32_t module, const std::string& layout) {
  const AttentionModule& from = objects_->module(module);
  if (layout != "stacked" && layout != "interleaved") throw AttentionError("convert_layout", "layout", "layout must be 'stacked' or 'interleaved', got '" + layout + "'", "");
  AttentionModule to =
      from.config().recipe().heads == HeadsRule::Modules ? fused_from_wrapper(from, layout == "stacked" ? HeadLayout::Stacked : HeadLayout::Interleaved) : wrapper_from_fused(from);
  const std::string code = conversion_code(from);
  ModuleInfo info = objects_->keep(std::move(to));
  info.code = code;
  return info;
}

std::vector<StageDiff> Session::compare(uint32_t a, uint32_t b, TensorInput x) const {
  return compare_stages(objects_->module(a), objects_->module(b), tensor_from_input(std::move(x), "x"));
}

CopyReport Session::copy_weights(uint32_t from, uint32_t to, const std::vector<PlanEntryInput>& plan, std::optional<TensorInput> tokens) {
  const AttentionModule& source = objects_->module(from);
  AttentionModule& target = objects_->module(to);
  const CopyPlan p = plan_from(plan);
  std::optional<Tensor> x;
  if (tokens) x = tensor_from_input(std::move(*tokens), "tokens");
  AttentionModule copy = target;
  CopyReport r = attention_lab::copy_weights(source, copy, p, x);
  target = std::move(copy);
  objects_->wrote(to);
  return r;
}

// ---- checkpoint files ----

double Session::checkpoint_header_length(const std::vector<uint8_t>& first8, double file_size) const {
  return static_cast<double>(safetensors_header_length(first8.data(), first8.size(), static_cast<uint64_t>(file_size)));
}

OpenedFile Session::checkpoint_open(const std::vector<uint8_t>& header, double file_size) {
  auto parsed = std::make_shared<const SafetensorsHeader>(parse_safetensors_header(header.data(), header.size(), static_cast<uint64_t>(file_size)));
  OpenedFile out{objects_->next++, static_cast<double>(parsed->entries.size()), static_cast<double>(parsed->data_start())};
  objects_->headers[out.handle] = std::move(parsed);
  return out;
}

namespace {
CheckpointOptions checkpoint_options(const CheckpointOptionsInput& in) {
  CheckpointOptions o;
  o.layer = whole_option(in.layer, "layer", 0, "checkpoint_layer").value_or(0);
  o.num_heads = whole_option(in.num_heads, "num_heads", 1, "checkpoint_num_heads");
  o.context_length = whole_option(in.context_length, "context_length", 1, "checkpoint_context_length");
  if (!in.into_class.empty()) o.into = validated_config(in.into_class, in.into_config);
  return o;
}
}  // namespace

CheckpointPlanResult Session::plan_checkpoint(uint32_t file, const CheckpointOptionsInput& options) const {
  const SafetensorsHeader& h = *objects_->header(file);
  const CheckpointPlan plan = plan_gpt2_attention(h, checkpoint_options(options));
  CheckpointPlanResult out;
  for (const auto& e : plan.needed) out.needed.push_back({e.key, static_cast<double>(h.data_start() + e.begin), static_cast<double>(h.data_start() + e.end)});
  out.config = plan.config.slots();
  out.report = plan.report;
  return out;
}

ModuleInfo Session::load_checkpoint(uint32_t file, const CheckpointOptionsInput& options, const std::map<std::string, std::vector<uint8_t>>& buffers, uint32_t into) {
  const SafetensorsHeader& h = *objects_->header(file);
  const CheckpointPlan plan = plan_gpt2_attention(h, checkpoint_options(options));
  AttentionModule loaded = load_gpt2_attention(plan, given(
                                                         plan.needed, [](const SafetensorsEntry& e) -> const std::string& { return e.key; }, buffers));
  ModuleInfo info;
  if (into != 0) {
    AttentionModule& target = objects_->module(into);
    target = std::move(loaded);
    objects_->wrote(into);
    info.config = target.config();
    info.parameter_count = attention_lab::parameter_count(info.config);
  } else {
    info = objects_->keep(std::move(loaded));
  }
  info.report = plan.report;
  return info;
}

std::vector<FileRead> Session::plan_block_input(uint32_t file, const std::vector<double>& ids, const NumberOption& layer) const {
  const SafetensorsHeader& h = *objects_->header(file);
  return file_reads(h, plan_gpt2_block_input(h, ids_from(ids), whole_option(layer, "layer", 0, "checkpoint_layer").value_or(0)));
}

Tensor Session::block_input(uint32_t file, const std::vector<double>& ids, const NumberOption& layer, const std::map<std::string, std::vector<uint8_t>>& buffers) const {
  const SafetensorsHeader& h = *objects_->header(file);
  const std::vector<int64_t> token_ids = ids_from(ids);
  const int64_t L = whole_option(layer, "layer", 0, "checkpoint_layer").value_or(0);
  return gpt2_block_input(h, token_ids, L, bytes_of(plan_gpt2_block_input(h, token_ids, L), buffers));
}

// ---- GPT-2: a run or a generation, one step per call ----

namespace {
/// The k most likely next tokens a run ends with (as each generated token's `top`).
constexpr int kRunTopTokens = 5;
}  // namespace

OpenedModel Session::gpt2_open(uint32_t file, const NumberOption& num_heads) {
  auto f = std::make_unique<Gpt2File>();
  f->header = objects_->header(file);  // shared, not copied
  f->config = gpt2_config(*f->header, whole_option(num_heads, "num_heads", 1, "checkpoint_num_heads"));
  OpenedModel out{objects_->next++, f->config};
  objects_->gpt2[out.handle] = std::move(f);
  return out;
}

double Session::gpt2_estimate(uint32_t model, double num_tokens, const std::string& attention) const {
  const Gpt2Config& c = objects_->model(model).config;
  const int64_t T = whole_number(num_tokens, "num_tokens", 1, static_cast<double>(c.n_ctx), "run_option",
                                 "model.estimateBytes(num_tokens) takes the tokens of a run: 1 to n_ctx (" + std::to_string(c.n_ctx) + ", the rows of wpe.weight).");
  return gpt2_run_bytes(c, T, gpt2_attention_of(attention));
}

bool Session::gpt2_run(uint32_t model, const std::vector<double>& ids, const std::string& attention, const NumberOption& input_of, double budget) {
  Gpt2File& f = objects_->model(model);
  const Gpt2Attention mode = gpt2_attention_of(attention);
  const std::optional<int64_t> layer = whole_option(input_of, "layer", 0, "checkpoint_layer");
  f.run.reset();
  f.generation.reset();
  f.run = std::make_unique<Gpt2Run>(*f.header, f.config, ids_from(ids), budget > 0 ? budget : kDefaultMemoryBudgetBytes, mode, layer);
  f.run->use_pool(objects_->pool.get());
  return true;
}

std::vector<FileRead> Session::gpt2_reads(uint32_t model) const {
  const Gpt2File& f = objects_->model(model);
  if (f.run) return file_reads(*f.header, f.run->reads());
  if (f.generation) return file_reads(*f.header, f.generation->reads());
  throw AttentionError("not_in_progress", "", "no run or generation of this model is in progress", "Start one with model.run or model.generate.");
}

RunStepResult Session::gpt2_run_step(uint32_t model, const std::map<std::string, std::vector<uint8_t>>& buffers) {
  Gpt2File& f = objects_->model(model);
  if (!f.run) throw AttentionError("not_in_progress", "", "no run of this model is in progress", "Start one with model.run.");
  Gpt2Run& run = *f.run;
  Gpt2Run::Step s = run.step(bytes_of(run.reads(), buffers));
  RunStepResult out;
  out.step = s.piece;
  if (s.layer >= 0) out.layer = static_cast<double>(s.layer);
  out.done = static_cast<double>(s.done);
  out.total = static_cast<double>(s.total);
  out.block = std::move(s.block);
  out.input = std::move(s.input);
  out.finished = run.finished();
  if (out.finished && !out.input) {
    Gpt2Result r;
    // the top tokens first (their index of every row is freed before the logits are copied: gpt2_run_bytes counts one at a time)
    for (const auto& [id, p] : run.top_tokens(kRunTopTokens)) r.next_tokens.push_back({static_cast<double>(id), p});
    r.last_logits = run.last_logits();
    out.logits = std::move(r);
  }
  if (out.finished) f.run.reset();
  return out;
}

bool Session::gpt2_stop(uint32_t model) {
  const auto it = objects_->gpt2.find(model);
  if (it != objects_->gpt2.end()) {
    it->second->run.reset();
    it->second->generation.reset();
  }
  return true;
}

namespace {
/// A boolean option: its default when absent; AttentionError generate_option naming `key` otherwise.
std::optional<bool> bool_option(const NumberOption& v, const char* key) {
  if (!v.given) return std::nullopt;
  if (!v.boolean) throw AttentionError("generate_option", key, std::string(key) + " must be true or false, got " + given_as(v), "");
  return v.value != 0;
}
}  // namespace

GenerateStart Session::gpt2_generate(uint32_t model, const std::vector<double>& ids, const GenerateOptionsInput& in, double budget) {
  Gpt2File& f = objects_->model(model);
  f.run.reset();
  f.generation.reset();
  Gpt2GenerateOptions o;
  const auto maybe = whole_option(in.max_new_tokens, "maxNewTokens", 1, "generate_option");
  if (!maybe) throw AttentionError("generate_option", "maxNewTokens", "maxNewTokens is required: how many tokens to generate", "For example {maxNewTokens: 20}.");
  o.max_new_tokens = *maybe;
  if (in.temperature.given) {
    if (!in.temperature.number)
      throw AttentionError("generate_option", "temperature", "temperature must be a number, got " + given_as(in.temperature), "For example {temperature: 1.0}.");
    o.temperature = in.temperature.value;
  }
  o.top_k = whole_option(in.top_k, "topK", 1, "generate_option");
  o.eos_id = whole_option(in.eos_id, "eosId", 0, "generate_option");
  o.cache = bool_option(in.cache, "cache").value_or(true);
  o.resident = bool_option(in.resident, "resident");
  o.window = whole_option(in.window, "window", 1, "generate_option");
  o.attention = bool_option(in.attention, "attention").value_or(false);
  f.generation = std::make_unique<Gpt2Generation>(*f.header, f.config, ids_from(ids), o, budget > 0 ? budget : kDefaultMemoryBudgetBytes);
  f.generation->use_pool(objects_->pool.get());
  return {f.generation->resident(), f.generation->estimate_bytes()};
}

GenerateStepResult Session::gpt2_generate_step(uint32_t model, uint32_t generator, const std::map<std::string, std::vector<uint8_t>>& buffers) {
  Gpt2File& f = objects_->model(model);
  if (!f.generation) throw AttentionError("not_in_progress", "", "no generation is in progress", "Start one with model.generate.");
  Gpt2Generation& g = *f.generation;
  TorchGenerator* gen = generator != 0 ? &objects_->generator(generator) : nullptr;
  GenerateStepResult out;
  if (std::optional<Gpt2Step> s = g.step(bytes_of(g.reads(), buffers), gen)) {
    GeneratedToken t{static_cast<double>(s->token), s->prob, {}, static_cast<double>(s->cache_tokens), s->cache_bytes, {}};
    for (const auto& [id, p] : s->top) t.top.push_back({static_cast<double>(id), p});
    if (s->attention_keys > 0) t.attention = Tensor{{f.config.n_layer, f.config.n_head, s->attention_keys}, std::move(s->attention)};
    out.token = std::move(t);
  }
  out.finished = g.finished();
  out.eos = g.stopped_by_eos();
  if (out.finished) f.generation.reset();
  return out;
}

// ---- lifetimes ----

bool Session::release(uint32_t handle) {
  objects_->modules.erase(handle);
  objects_->revisions.erase(handle);
  objects_->generators.erase(handle);
  objects_->dropout_generators.erase(handle);
  objects_->headers.erase(handle);
  objects_->gpt2.erase(handle);
  objects_->caches.erase(handle);
  objects_->traces.erase(handle);
  return true;
}

double Session::handles_in_use() const {
  return static_cast<double>(objects_->modules.size() + objects_->generators.size() + objects_->headers.size() + objects_->gpt2.size() + objects_->caches.size() +
                             objects_->traces.size());
}

}  // namespace attention_lab

// Session's facts and configs (classes, sizes, seeds, threads, calls, checks, setups), runs of a setup
// and their memory, made tokens, the objects kept under handles and their lifetimes. The other calls
// live by job in session_*.cpp (session_detail.hpp lists them).
#include "attention_lab/session.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <new>

#include "attention_lab/ops.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"
#include "session_detail.hpp"

namespace attention_lab {

using namespace session_detail;

// ---- the objects under handles ----

const std::vector<Stage>& Session::Objects::trace(uint32_t h) const {
  const auto it = traces.find(h);
  if (it == traces.end()) throw AttentionError("disposed", "trace", "this trace was disposed", "Run again for a new trace (or keep it until you are done drawing it).");
  return it->second;
}

ResidentTrace Session::Objects::keep_trace(std::vector<Stage> stages) {
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

AttentionModule& Session::Objects::module(uint32_t h) const {
  const auto it = modules.find(h);
  if (it == modules.end()) throw AttentionError("disposed", "module", "this module was disposed", "Create it again with lab.create (or keep it until you are done).");
  return *it->second;
}

const std::shared_ptr<TorchGenerator>& Session::Objects::shared_generator(uint32_t h) const {
  const auto it = generators.find(h);
  if (it == generators.end()) throw AttentionError("disposed", "generator", "this generator was disposed", "Make a new one with lab.manualSeed(seed).");
  return it->second;
}

TorchGenerator* Session::Objects::dropout_generator(uint32_t module) const {
  const auto it = dropout_generators.find(module);
  return it == dropout_generators.end() ? nullptr : it->second.get();
}

const std::shared_ptr<const SafetensorsHeader>& Session::Objects::header(uint32_t h) const {
  const auto it = headers.find(h);
  if (it == headers.end()) throw AttentionError("disposed", "checkpoint", "this checkpoint file was disposed", "Open the file again with lab.openCheckpoint.");
  return it->second;
}

Session::Gpt2File& Session::Objects::model(uint32_t h) const {
  const auto it = gpt2.find(h);
  if (it == gpt2.end()) throw AttentionError("disposed", "model", "this GPT-2 model was disposed", "Load the file again with lab.loadGPT2.");
  return *it->second;
}

std::pair<uint32_t, KvCache>& Session::Objects::cache(uint32_t h) {
  const auto it = caches.find(h);
  if (it == caches.end()) throw AttentionError("disposed", "cache", "this KV cache was disposed", "Make a new one with module.newCache().");
  return it->second;
}

CacheState Session::Objects::state(uint32_t h) {
  const auto& [module, c] = cache(h);
  const double rows = static_cast<double>(std::max<int64_t>(c.batch, 1) * c.entries());  // tokens held over every batch row
  const auto owner = modules.find(module);                                               // a cache can outlive its module's handle
  const double mha = owner == modules.end() ? 0.0 : rows * owner->second->config().kv_cache_bytes_per_token_mha();
  return {h, module, static_cast<double>(c.window), static_cast<double>(c.position), static_cast<double>(c.entries()), c.bytes(), mha};
}

ModuleInfo Session::Objects::keep(AttentionModule m) {
  ModuleInfo info;
  info.config = m.config();
  info.parameter_count = attention_lab::parameter_count(info.config);
  info.handle = next++;
  modules[info.handle] = std::make_unique<AttentionModule>(std::move(m));
  return info;
}

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

// Session's generators and modules: seeded draws, modules made, copied, converted and compared, their
// forwards (whole, by shares of the heads, traced in WASM memory) and their KV caches.
#include <algorithm>
#include <cmath>
#include <memory>

#include "attention_lab/text.hpp"
#include "session_detail.hpp"

namespace attention_lab {

using namespace session_detail;

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
  c.window = whole_option(window, "window", 1, "cache_window", 1024).value_or(0);
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

namespace session_detail {
ModuleConfig checked_call(const ParsedCall& parsed) {
  for (const Diagnostic& d : parsed.diagnostics)
    if (d.severity == Severity::Error) throw AttentionError(d.code, d.slots.empty() ? "call" : d.slots.front(), d.message, d.hint);
  return validated_config(parsed.class_name, parsed.config);
}
}  // namespace session_detail

CheckReport Session::check_module(const std::string& call, std::vector<ParameterInput> state_dict, TensorInput x, TensorInput output, std::vector<ParameterInput> stages,
                                  std::optional<double> seed) const {
  const std::optional<uint64_t> stream = seed ? std::optional<uint64_t>(seed_from(*seed)) : std::nullopt;  // the one seed rule (lab.seedRange)
  const ModuleConfig c = checked_call(parse_call(call));
  std::vector<NamedTensor> given, named_stages;
  for (auto& p : state_dict) given.push_back({p.name, tensor_from_input(std::move(p.tensor), p.name)});
  for (auto& p : stages) named_stages.push_back({p.name, tensor_from_input(std::move(p.tensor), p.name)});
  return attention_lab::check_module(c, given, tensor_from_input(std::move(x), "x"), tensor_from_input(std::move(output), "output"), named_stages, kDefaultMemoryBudgetBytes,
                                     objects_->pool.get(), stream);
}

}  // namespace attention_lab

// The only file that includes <emscripten/...>: embind glue between the core and the JS facade
// (web/lib/attention-lab.js). Every function takes and returns plain JS values; tensors are copied in
// and out (no live heap views); errors come back as data ({ok: false, error: {code, slot, message,
// hint}}), never as raw exception pointers. Modules and generators live here, in WASM memory, under
// numeric handles: their parameters are written once and a forward passes only its input. The
// facade releases a handle when its JS object is garbage-collected or disposed.
#include <emscripten/bind.h>
#include <emscripten/val.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <new>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/checkpoint.hpp"
#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/setup.hpp"
#include "attention_lab/validator.hpp"
#include "attention_lab/weight_transfer.hpp"

using emscripten::val;
using namespace attention_lab;

namespace {

val array_of_strings(const std::vector<std::string>& items) {
  val out = val::array();
  for (const auto& s : items) out.call<void>("push", s);
  return out;
}

val shape_to_js(const Shape& shape) {
  val out = val::array();
  for (int64_t d : shape) out.call<void>("push", static_cast<double>(d));
  return out;
}

val tensor_to_js(const Tensor& t) {
  val out = val::object();
  out.set("shape", shape_to_js(t.shape));
  // new Float32Array(view) copies out of the heap.
  out.set("data", val::global("Float32Array").new_(emscripten::typed_memory_view(t.data.size(), t.data.data())));
  return out;
}

Shape shape_from_js(const val& v, const char* what) {
  if (!v.isArray()) throw AttentionError("tensor_shape", what, std::string(what) + ".shape must be an array of sizes", "For example {shape: [6, 3], data}.");
  Shape shape;
  const unsigned n = v["length"].as<unsigned>();
  if (n > kMaxTensorAxes)
    throw AttentionError("tensor_shape", what, std::string(what) + " has " + std::to_string(n) + " axes", "Tensors here have at most " + std::to_string(kMaxTensorAxes) + " axes.");
  for (unsigned i = 0; i < n; ++i) {
    const val d = v[i];
    const double x = d.isNumber() ? d.as<double>() : -1.0;
    if (!(x >= 0 && x == std::floor(x) && x < 2147483648.0))
      throw AttentionError("tensor_shape", what, std::string(what) + ".shape[" + std::to_string(i) + "] is not a size", "Sizes are whole numbers, 0 or more.");
    shape.push_back(static_cast<int64_t>(x));
  }
  return shape;
}

Tensor tensor_from_js(const val& v, const char* what) {
  if (v.isNull() || v.isUndefined() || v.typeOf().as<std::string>() != "object")
    throw AttentionError("tensor_shape", what, std::string(what) + " must be a tensor {shape, data}", "For example {shape: [6, 3], data: new Float32Array(18)}.");
  Shape shape = shape_from_js(v["shape"], what);
  const val data = v["data"];
  if (data.isNull() || data.isUndefined() || data["length"].isUndefined())
    throw AttentionError("tensor_size", what, std::string(what) + ".data is missing", "Give the values as a Float32Array, row-major.");
  int64_t numel = 0;
  const bool fits = checked_numel(shape, numel);  // false when the product overflows 64 bits
  const double expected = static_cast<double>(numel);
  const double given = data["length"].as<double>();
  if (!fits || expected != given)
    throw AttentionError("tensor_size", what,
                         std::string(what) + " has shape " + shape_string(shape) + " (" + std::to_string(static_cast<long long>(expected)) + " values) but data holds " +
                             std::to_string(static_cast<long long>(given)),
                         "Give exactly as many values as the product of the shape, row-major.");
  return Tensor(std::move(shape), emscripten::convertJSArrayToNumberVector<float>(data));
}

SlotValue slot_value_from_js(const val& v) {
  const std::string type = v.typeOf().as<std::string>();
  if (type == "number") {
    const double x = v.as<double>();
    return std::isfinite(x) && x == std::floor(x) ? SlotValue::integer(x) : SlotValue::floating(x);
  }
  if (type == "boolean") return SlotValue::boolean_value(v.as<bool>());
  // A string is the text of a form field or a URL: read it as Python would read it in a call.
  if (type == "string") return parse_literal(v.as<std::string>());
  if (v.isNull() || v.isUndefined()) return SlotValue::none();
  return SlotValue::expression("<" + type + ">");
}

SlotMap config_from_js(const val& config) {
  SlotMap m;
  if (config.isNull() || config.isUndefined() || config.typeOf().as<std::string>() != "object") return m;
  const val keys = val::global("Object").call<val>("keys", config);
  const unsigned n = keys["length"].as<unsigned>();
  for (unsigned i = 0; i < n; ++i) {
    const std::string key = keys[i].as<std::string>();
    const val v = config[key];
    if (v.isUndefined()) continue;
    m[key] = slot_value_from_js(v);
  }
  return m;
}

val slot_value_to_js(const SlotValue& v) {
  switch (v.kind) {
    case SlotValue::Kind::Int:
    case SlotValue::Kind::Float:
      return val(v.number);
    case SlotValue::Kind::Bool:
      return val(v.boolean);
    case SlotValue::Kind::None:
      return val::null();
    case SlotValue::Kind::String:
    case SlotValue::Kind::Expression:
      return val(v.text);
  }
  return val::null();
}

val config_to_js(const SlotMap& m) {
  val out = val::object();
  for (const auto& [k, v] : m) out.set(k, slot_value_to_js(v));
  return out;
}

val diagnostics_to_js(const std::vector<Diagnostic>& ds) {
  val out = val::array();
  for (const auto& d : ds) {
    val o = val::object();
    o.set("severity", std::string(severity_name(d.severity)));
    o.set("code", d.code);
    o.set("slots", array_of_strings(d.slots));
    o.set("message", d.message);
    o.set("hint", d.hint);
    o.set("pytorch", d.pytorch);
    val fixes = val::array();
    for (const Fix& f : d.fixes) {
      val fix = val::object();
      fix.set("slot", f.slot);
      fix.set("value", f.value);
      fixes.call<void>("push", fix);
    }
    o.set("fixes", fixes);
    out.call<void>("push", o);
  }
  return out;
}

val error_to_js(const std::string& code, const std::string& slot, const std::string& message, const std::string& hint) {
  val e = val::object();
  e.set("code", code);
  e.set("slot", slot);
  e.set("message", message);
  e.set("hint", hint);
  val out = val::object();
  out.set("ok", false);
  out.set("error", e);
  return out;
}

/// Runs `body` and turns every C++ failure into {ok: false, error}.
template <typename F>
val guarded(F&& body) {
  try {
    return body();
  } catch (const AttentionError& e) {
    return error_to_js(e.code(), e.slot(), e.what(), e.hint());
  } catch (const std::bad_alloc&) {
    return error_to_js("out_of_memory", "", "the WebAssembly heap ran out of memory", "Use smaller sizes or fewer tokens; the page keeps working.");
  } catch (const std::exception& e) {
    return error_to_js("internal", "", e.what(), "This is a bug in attention-lab; please report the setup.");
  }
}

val ok() {
  val out = val::object();
  out.set("ok", true);
  return out;
}

/// A GPT-2 file opened by loadGPT2: its header (parsed once, shared with the checkpoint file it came
/// from), its shape, and the run in progress (if any).
struct Gpt2File {
  std::shared_ptr<const SafetensorsHeader> header;
  Gpt2Config config;
  std::unique_ptr<Gpt2Run> run;
};

/// What lives between calls: modules, generators, parsed checkpoint headers and GPT-2 files by handle
/// (0 is never a handle).
struct Registry {
  std::map<uint32_t, std::unique_ptr<AttentionModule>> modules;  // a tree: its memory follows what is live
  std::map<uint32_t, TorchGenerator> generators;
  std::map<uint32_t, std::shared_ptr<const SafetensorsHeader>> headers;  // checkpointOpen
  std::map<uint32_t, std::unique_ptr<Gpt2File>> gpt2;
  uint32_t next = 1;
  uint32_t add(std::unique_ptr<AttentionModule> m) {
    modules[next] = std::move(m);
    return next++;
  }
};
Registry& registry() {
  static Registry r;
  return r;
}

AttentionModule& module_at(double handle) {
  const auto it = registry().modules.find(static_cast<uint32_t>(handle));
  if (it == registry().modules.end()) throw AttentionError("disposed", "module", "this module was disposed", "Create it again with lab.create (or keep it until you are done).");
  return *it->second;
}

TorchGenerator& generator_at(double handle) {
  const auto it = registry().generators.find(static_cast<uint32_t>(handle));
  if (it == registry().generators.end()) throw AttentionError("disposed", "generator", "this generator was disposed", "Make a new one with lab.manualSeed(seed).");
  return it->second;
}

/// A generator state crosses the boundary as a Uint32Array of 625 words (see Mt19937::words).
val state_to_js(const TorchGenerator& g) {
  const std::vector<uint32_t> words = g.state();
  return val::global("Uint32Array").new_(emscripten::typed_memory_view(words.size(), words.data()));
}

std::vector<NamedTensor> parameters_from_js(const val& params) {
  std::vector<NamedTensor> out;
  const unsigned n = params["length"].as<unsigned>();
  for (unsigned i = 0; i < n; ++i) {
    const val p = params[i];
    out.push_back({p["name"].as<std::string>(), tensor_from_js(p, "parameter")});
  }
  return out;
}

/// A module from plain data (lab.fromParameters): every parameter must be given, by its PyTorch name.
std::unique_ptr<AttentionModule> module_from_js(const std::string& class_name, const val& config, const val& params, std::vector<std::string>& notes) {
  const ModuleConfig c = validated_config(class_name, config_from_js(config));
  return std::make_unique<AttentionModule>(module_from_state_dict(c, parameters_from_js(params), &notes));
}

val parameters_to_js(const AttentionModule& m) {
  val out = val::array();
  for (const auto& p : m.parameters()) {
    val o = tensor_to_js(p.tensor);
    o.set("name", p.name);
    out.call<void>("push", o);
  }
  return out;
}

/// The facts of a module and its new handle (its parameters stay in WASM memory: see parameters_js).
val module_info_to_js(std::unique_ptr<AttentionModule> module) {
  const AttentionModule& m = *module;
  const ModuleConfig& c = m.config();
  val out = ok();
  out.set("className", c.class_name());
  out.set("config", config_to_js(c.slots()));
  out.set("headDim", static_cast<double>(c.head_dim()));
  out.set("outputWidth", static_cast<double>(c.output_width()));
  out.set("outputWidthRule", c.output_width_rule());
  out.set("parameterCount", static_cast<double>(parameter_count(c)));
  out.set("handle", registry().add(std::move(module)));
  return out;
}

// ---- exported functions ----

/// The GPT-2 sizes (gpt2_sizes.hpp): [{name, n_embd, n_head, n_layer}], smallest first.
val gpt2_sizes() {
  val out = val::array();
  for (const Gpt2Size& s : kGpt2Sizes) {
    val o = val::object();
    o.set("name", std::string(s.name));
    o.set("n_embd", static_cast<double>(s.n_embd));
    o.set("n_head", static_cast<double>(s.n_head));
    o.set("n_layer", static_cast<double>(s.n_layer));
    out.call<void>("push", o);
  }
  return out;
}

val classes() {
  val out = val::array();
  for (const auto& spec : class_specs()) {
    val c = val::object();
    c.set("name", spec.name);
    c.set("doc", spec.doc);
    c.set("source", spec.source());
    val book = val::object();
    book.set("chapter", spec.book.chapter);
    book.set("folder", spec.book.folder);
    book.set("file", spec.book.file);
    book.set("section", spec.book.section);
    c.set("book", book);
    val slots = val::array();
    for (const auto& s : spec.slots) {
      val o = val::object();
      o.set("name", s.name);
      o.set("position", s.position);
      o.set("type", std::string(slot_type_name(s.type)));
      o.set("default", s.default_value ? slot_value_to_js(*s.default_value) : val::undefined());
      o.set("doc", s.doc);
      slots.call<void>("push", o);
    }
    c.set("slots", slots);
    c.set("inputAxes", array_of_strings(spec.input_axes()));
    c.set("heads", std::string(heads_rule_name(spec.heads)));
    c.set("mask", std::string(mask_rule_name(spec.mask)));
    c.set("maskBufferDtype", std::string(spec.mask_buffer_dtype()));
    c.set("contextLimit", spec.context_limit);
    c.set("dropoutRule", std::string(dropout_rule_name(spec.dropout)));
    c.set("needsSquare", !spec.needs_square.empty());
    val presets = val::array();
    for (const Preset& p : spec.presets) {
      val o = val::object();
      o.set("key", p.key);
      val texts = val::object();
      for (const auto& [slot, text] : p.slots) texts.set(slot, text);
      o.set("slots", texts);
      o.set("tokens", p.tokens);
      o.set("batch", p.batch);
      o.set("note", p.note);
      o.set("order", p.order);
      presets.call<void>("push", o);
    }
    c.set("presets", presets);
    c.set("tolerance", kAgreementTolerance);
    c.set("pythonName", spec.python_name);
    c.set("bookSeed", static_cast<double>(spec.book_seed));
    c.set("weights", spec.queries_in_out() ? "matrix" : "linear");
    val from = val::array();
    for (const CopyPartner& p : spec.copies_from) {
      val o = val::object();
      o.set("from", p.from);
      o.set("note", p.note);
      from.call<void>("push", o);
    }
    c.set("copiesFrom", from);
    c.set("copiesWith", array_of_strings(spec.copies_with));
    c.set("convertsTo", spec.converts_to);
    c.set("loadsCheckpoints", spec.loads_checkpoints);
    out.call<void>("push", c);
  }
  return out;
}

val parse_call_js(const std::string& text) {
  return guarded([&] {
    const ParsedCall c = parse_call(text);
    val out = ok();
    out.set("className", c.class_name);
    // A float written in an int slot (768.0) keeps its text, so create(config) reports it like the call did.
    val config = config_to_js(c.config);
    if (const ClassSpec* spec = find_class(c.class_name)) {
      for (const auto& slot : spec->slots) {
        const auto it = c.config.find(slot.name);
        if (it != c.config.end() && slot.type == SlotType::Int && it->second.kind == SlotValue::Kind::Float) config.set(slot.name, it->second.python());
      }
    }
    out.set("config", config);
    val slots = val::array();
    for (const auto& s : c.slots) {
      val o = val::object();
      o.set("name", s.name);
      o.set("position", s.position);
      o.set("value", slot_value_to_js(s.value));
      o.set("source", s.source);
      o.set("text", s.text);
      slots.call<void>("push", o);
    }
    out.set("slots", slots);
    out.set("diagnostics", diagnostics_to_js(c.diagnostics));
    return out;
  });
}

val check_js(const std::string& class_name, const val& config, const val& input_shape, const val& training) {
  return guarded([&] {
    CheckOptions opts;
    if (training.isTrue() || training.isFalse()) opts.training = training.isTrue();
    if (!input_shape.isNull() && !input_shape.isUndefined()) opts.input_shape = shape_from_js(input_shape, "inputShape");
    val out = ok();
    out.set("diagnostics", diagnostics_to_js(check_config(class_name, config_from_js(config), opts)));
    return out;
  });
}

/// torch.manual_seed takes any int in [-2**63, 2**64); negative seeds wrap as 64-bit two's complement.
uint64_t seed_from_js(double seed) {
  if (!(std::isfinite(seed) && seed == std::floor(seed) && seed >= -9223372036854775808.0 && seed < 18446744073709551616.0))
    throw AttentionError("seed", "seed", "the seed must be a whole number from -2**63 to 2**64 - 1", "torch.manual_seed takes an int, e.g. 123.");
  return seed < 0 ? static_cast<uint64_t>(static_cast<int64_t>(seed)) : static_cast<uint64_t>(seed);
}

val manual_seed_js(double seed) {
  return guarded([&] {
    const uint64_t s = seed_from_js(seed);
    Registry& r = registry();
    r.generators.emplace(r.next, TorchGenerator(s));
    val out = ok();
    out.set("handle", r.next++);
    return out;
  });
}

/// The MT19937 state of a generator as 625 words (Mt19937::words): for tests and debugging.
val generator_state_js(double handle) {
  return guarded([&] {
    val out = ok();
    out.set("state", state_to_js(generator_at(handle)));
    return out;
  });
}

void release_generator_js(double handle) { registry().generators.erase(static_cast<uint32_t>(handle)); }
void release_module_js(double handle) { registry().modules.erase(static_cast<uint32_t>(handle)); }
double handles_in_use() { return static_cast<double>(registry().modules.size() + registry().generators.size() + registry().headers.size() + registry().gpt2.size()); }

val create_js(const std::string& class_name, const val& config, double generator) {
  return guarded([&] {
    const ModuleConfig c = validated_config(class_name, config_from_js(config));
    return module_info_to_js(std::make_unique<AttentionModule>(c, generator_at(generator)));
  });
}

val parameters_js(double handle) {
  return guarded([&] {
    val out = ok();
    out.set("parameters", parameters_to_js(module_at(handle)));
    return out;
  });
}

val set_parameter_js(double handle, const std::string& name, const val& tensor) {
  return guarded([&] {
    AttentionModule& m = module_at(handle);
    m.set_parameter(name, tensor_from_js(tensor, name.c_str()));
    return ok();
  });
}

val summary_to_js(const TensorSummary& s) {
  val out = val::object();
  out.set("min", s.min);
  out.set("max", s.max);
  out.set("mean", s.mean);
  out.set("negInf", static_cast<double>(s.neg_inf));
  out.set("zeros", static_cast<double>(s.zeros));
  out.set("count", static_cast<double>(s.count));
  return out;
}

/// A trace as JS stages: {shape, data, id, title, formula, axes, summary, sliceSummaries}.
val stages_to_js(const std::vector<Stage>& trace) {
  val stages = val::array();
  for (const auto& s : trace) {
    val o = tensor_to_js(s.tensor);
    o.set("id", s.id);
    o.set("title", s.title);
    o.set("formula", s.formula);
    o.set("axes", array_of_strings(s.axes));
    o.set("summary", summary_to_js(s.summary));
    val slices = val::array();
    for (const auto& slice : s.slice_summaries) slices.call<void>("push", summary_to_js(slice));
    o.set("sliceSummaries", slices);
    stages.call<void>("push", o);
  }
  return stages;
}

val forward_js(double handle, const val& x, bool training, double generator, bool want_trace) {
  return guarded([&] {
    const AttentionModule& m = module_at(handle);
    const Tensor input = tensor_from_js(x, "x");  // forward checks the memory budget before allocating
    std::vector<Stage> trace;
    ForwardOptions opts;
    opts.training = training;
    opts.generator = generator != 0 ? &generator_at(generator) : nullptr;
    opts.trace = want_trace ? &trace : nullptr;
    std::vector<Diagnostic> warnings;
    opts.warnings = &warnings;
    const Tensor y = m.forward(input, opts);
    val out = ok();
    out.set("output", tensor_to_js(y));
    if (!warnings.empty()) out.set("warnings", diagnostics_to_js(warnings));
    if (want_trace) out.set("trace", stages_to_js(trace));
    return out;
  });
}

val rand_js(double generator, const val& shape) {
  return guarded([&] {
    TorchGenerator& g = generator_at(generator);
    const Shape s = shape_from_js(shape, "shape");
    int64_t numel = 0;
    if (!checked_numel(s, numel) || static_cast<double>(numel) > 256.0 * 1024 * 1024)
      throw AttentionError("too_large", "shape", "rand of " + shape_string(s) + " is too large", "");
    val out = ok();
    out.set("tensor", tensor_to_js(g.rand(s)));
    return out;
  });
}

val dropout_js(double generator, const val& tensor, double p) {
  return guarded([&] {
    TorchGenerator& g = generator_at(generator);
    const Tensor x = tensor_from_js(tensor, "tensor");
    val out = ok();
    out.set("tensor", tensor_to_js(g.dropout(x, p)));
    return out;
  });
}

val stage_diffs_to_js(const std::vector<StageDiff>& diffs) {
  val out = val::array();
  for (const auto& d : diffs) {
    val o = val::object();
    o.set("id", d.id);
    o.set("maxAbsDiff", d.max_abs_diff);
    out.call<void>("push", o);
  }
  return out;
}

val equivalent_config_js(const std::string& class_name, const val& config) {
  return guarded([&] {
    const ModuleConfig c = equivalent_config(validated_config(class_name, config_from_js(config)));
    val out = ok();
    out.set("className", c.class_name());
    out.set("config", config_to_js(c.slots()));
    out.set("pythonCall", c.python_call());
    return out;
  });
}

val convert_js(double handle, const std::string& layout) {
  return guarded([&] {
    const AttentionModule& from = module_at(handle);
    if (layout != "stacked" && layout != "interleaved") throw AttentionError("convert_layout", "layout", "layout must be 'stacked' or 'interleaved', got '" + layout + "'", "");
    auto to = std::make_unique<AttentionModule>(from.config().recipe().heads == HeadsRule::Modules
                                                    ? fused_from_wrapper(from, layout == "stacked" ? HeadLayout::Stacked : HeadLayout::Interleaved)
                                                    : wrapper_from_fused(from));
    const std::string code = conversion_code(from);
    val out = module_info_to_js(std::move(to));
    out.set("code", code);
    return out;
  });
}

val compare_js(double a, double b, const val& x) {
  return guarded([&] {
    const AttentionModule& ma = module_at(a);
    const AttentionModule& mb = module_at(b);
    val out = ok();
    out.set("stages", stage_diffs_to_js(compare_stages(ma, mb, tensor_from_js(x, "x"))));
    return out;
  });
}

/// {W_query: {copy, transpose}, ...} -> CopyPlan; an entry that is not an object is "copy_plan".
CopyPlan plan_from_js(const val& plan_js) {
  CopyPlan plan;
  if (plan_js.isNull() || plan_js.isUndefined()) return plan;
  const val keys = val::global("Object").call<val>("keys", plan_js);
  for (unsigned i = 0; i < keys["length"].as<unsigned>(); ++i) {
    const std::string k = keys[i].as<std::string>();
    const val e = plan_js[k];
    // Reading a field of null would throw a JS TypeError straight through the WASM call.
    if (e.isNull() || e.typeOf().as<std::string>() != "object")
      throw AttentionError("copy_plan", k, "the copy plan entry for '" + k + "' must be {copy, transpose}", "For example {W_query: {copy: true, transpose: true}}.");
    plan[k] = {e["copy"].isTrue(), e["transpose"].isTrue()};
  }
  return plan;
}

/// The PyTorch lines of a v1/v2 copy plan, before any module exists (the page's live preview).
val copy_code_js(const std::string& from_class, const std::string& to_class, const val& plan_js) {
  return guarded([&] {
    const auto single_head = [](const std::string& name) {
      const ClassSpec* spec = find_class(name);
      if (spec == nullptr) throw AttentionError("copy_unsupported", "", "weight copy works between SelfAttention_v1 and SelfAttention_v2 (got " + name + ")", "");
      return spec;
    };
    val out = ok();
    out.set("code", copy_code(*single_head(from_class), *single_head(to_class), plan_from_js(plan_js)));
    return out;
  });
}

val copy_weights_js(double from_handle, double to_handle, const val& plan_js, const val& tokens_js) {
  return guarded([&] {
    const AttentionModule& from = module_at(from_handle);
    AttentionModule& target = module_at(to_handle);
    const CopyPlan plan = plan_from_js(plan_js);
    std::optional<Tensor> tokens;
    if (!tokens_js.isNull() && !tokens_js.isUndefined()) tokens = tensor_from_js(tokens_js, "tokens");
    AttentionModule to = target;  // all or nothing: the target changes only when the copy succeeded
    const CopyReport r = copy_weights(from, to, plan, tokens);
    val out = ok();
    val matrices = val::array();
    for (const auto& m : r.matrices) {
      val o = val::object();
      o.set("name", m.name);
      o.set("action", m.action);
      o.set("sources", array_of_strings(m.sources));
      o.set("fromShape", shape_to_js(m.from_shape));
      o.set("toShape", shape_to_js(m.to_shape));
      o.set("hint", m.hint);
      matrices.call<void>("push", o);
    }
    val report = val::object();
    report.set("matrices", matrices);
    report.set("maxAbsDiff", r.max_abs_diff ? val(*r.max_abs_diff) : val::null());
    report.set("agree", r.agree);
    report.set("notes", array_of_strings(r.notes));
    report.set("tokens", tensor_to_js(r.tokens));
    report.set("stages", stage_diffs_to_js(r.stages));
    report.set("code", r.code);
    out.set("report", report);
    target = std::move(to);
    return out;
  });
}

val book_tokens_js() { return tensor_to_js(book_tokens()); }

val seeded_tokens_js(double num_tokens, double d_in, double seed) {
  return guarded([&] {
    if (!(num_tokens >= 1 && d_in >= 1 && num_tokens == std::floor(num_tokens) && d_in == std::floor(d_in) && num_tokens * d_in <= 64.0 * 1024 * 1024))
      throw AttentionError("tensor_shape", "d_in", "cannot make " + std::to_string(num_tokens) + " tokens of width " + std::to_string(d_in),
                           "Use whole numbers: at least one token and d_in >= 1.");
    const uint64_t s = seed_from_js(seed);
    val out = ok();
    out.set("tensor", tensor_to_js(seeded_tokens(static_cast<int64_t>(num_tokens), static_cast<int64_t>(d_in), s)));
    return out;
  });
}

std::vector<uint8_t> bytes_from_js(const val& v, const char* what) {
  if (v.isNull() || v.isUndefined() || v["length"].isUndefined()) throw AttentionError("checkpoint_truncated", "", std::string(what) + " could not be read", "");
  if (!v.instanceof (val::global("Uint8Array"))) return emscripten::convertJSArrayToNumberVector<uint8_t>(v);
  // One bulk copy into the heap (a wte chunk is megabytes; element by element it took seconds).
  std::vector<uint8_t> out(v["length"].as<size_t>());
  val(emscripten::typed_memory_view(out.size(), out.data())).call<void>("set", v);
  return out;
}

/// An optional whole-number option in [lowest, 2**31): nullopt when absent (undefined or null);
/// AttentionError `code` naming `key` for anything else (a string, NaN, 2.5, a negative number).
std::optional<int64_t> whole_option(const val& options, const char* key, double lowest, const char* code) {
  const val v = options[key];
  if (v.isUndefined() || v.isNull()) return std::nullopt;
  const double x = v.isNumber() ? v.as<double>() : std::nan("");
  if (!(x >= lowest && x == std::floor(x) && x < 2147483648.0))
    throw AttentionError(code, key,
                         std::string(key) + " must be a whole number from " + std::to_string(static_cast<int>(lowest)) + ", got " +
                             (v.isNumber() ? std::to_string(x) : "a " + v.typeOf().as<std::string>()),
                         "");
  return static_cast<int64_t>(x);
}

/// The layer of {layer}: one rule with loadCheckpoint's (a whole number from 0; 0.5 and "1" are refused).
int64_t layer_from_js(const val& options) {
  if (options.isNull() || options.isUndefined() || options.typeOf().as<std::string>() != "object") return 0;
  return whole_option(options, "layer", 0, "checkpoint_layer").value_or(0);
}

/// {layer, num_heads, context_length, into: {className, config}} -> CheckpointOptions
CheckpointOptions checkpoint_options_from_js(const val& options) {
  CheckpointOptions o;
  if (options.isNull() || options.isUndefined() || options.typeOf().as<std::string>() != "object") return o;
  o.layer = layer_from_js(options);
  o.num_heads = whole_option(options, "num_heads", 1, "checkpoint_num_heads");
  o.context_length = whole_option(options, "context_length", 1, "checkpoint_context_length");
  const val into = options["into"];
  if (!into.isNull() && !into.isUndefined()) o.into = validated_config(into["className"].as<std::string>(), config_from_js(into["config"]));
  return o;
}

// ---- checkpoint files: a header parsed once (checkpointOpen), kept by handle, shared, never copied ----

/// Parses header bytes (8 + N .. of the file): what every call given bytes rather than a handle does.
std::shared_ptr<const SafetensorsHeader> parsed_header(const val& header_bytes, double file_size) {
  const std::vector<uint8_t> bytes = bytes_from_js(header_bytes, "the header");
  return std::make_shared<const SafetensorsHeader>(parse_safetensors_header(bytes.data(), bytes.size(), static_cast<uint64_t>(file_size)));
}

/// The header a checkpoint function is given: a handle from checkpointOpen (the kept header, which
/// knows its own file size) or, as before, the header bytes (parsed now, for this call alone).
std::shared_ptr<const SafetensorsHeader> header_from_js(const val& header_or_handle, double file_size) {
  if (header_or_handle.isNumber()) {
    const auto it = registry().headers.find(static_cast<uint32_t>(header_or_handle.as<double>()));
    if (it == registry().headers.end()) throw AttentionError("disposed", "checkpoint", "this checkpoint file was disposed", "Open the file again with lab.openCheckpoint.");
    return it->second;
  }
  return parsed_header(header_or_handle, file_size);
}

/// Parses the header once and keeps it: {ok, handle, keys (tensor count), dataStart}.
val checkpoint_open_js(const val& header_bytes, double file_size) {
  return guarded([&] {
    auto header = parsed_header(header_bytes, file_size);
    Registry& r = registry();
    const uint32_t handle = r.next++;
    val out = ok();
    out.set("handle", static_cast<double>(handle));
    out.set("keys", static_cast<double>(header->entries.size()));
    out.set("dataStart", static_cast<double>(header->data_start()));
    r.headers[handle] = std::move(header);
    return out;
  });
}

/// Drops the kept header (a GPT-2 model opened from it keeps its share).
void checkpoint_release_js(double handle) { registry().headers.erase(static_cast<uint32_t>(handle)); }

// ---- end of checkpoint files ----

val checkpoint_report_to_js(const CheckpointReport& r) {
  val out = val::object();
  out.set("used", array_of_strings(r.used));
  val ignored = val::array();
  for (const auto& i : r.ignored) {
    val o = val::object();
    o.set("key", i.key);
    o.set("reason", i.reason);
    ignored.call<void>("push", o);
  }
  out.set("ignored", ignored);
  out.set("missing", array_of_strings(r.missing));
  out.set("transposed", array_of_strings(r.transposed));
  val sources = val::object();
  for (const auto& [k, v] : r.sources) sources.set(k, v);
  out.set("sources", sources);
  return out;
}

val checkpoint_header_length_js(const val& first8, double file_size) {
  return guarded([&] {
    const std::vector<uint8_t> bytes = bytes_from_js(first8, "the first 8 bytes");
    val out = ok();
    out.set("length", static_cast<double>(safetensors_header_length(bytes.data(), bytes.size(), static_cast<uint64_t>(file_size))));
    return out;
  });
}

val plan_checkpoint_js(const val& header_bytes, double file_size, const val& options) {
  return guarded([&] {
    const auto kept = header_from_js(header_bytes, file_size);
    const SafetensorsHeader& h = *kept;
    const CheckpointPlan plan = plan_gpt2_attention(h, checkpoint_options_from_js(options));
    val needed = val::array();
    for (const auto& e : plan.needed) {
      val o = val::object();
      o.set("key", e.key);
      o.set("begin", static_cast<double>(h.data_start() + e.begin));  // absolute file offsets
      o.set("end", static_cast<double>(h.data_start() + e.end));
      needed.call<void>("push", o);
    }
    val out = ok();
    out.set("needed", needed);
    out.set("config", config_to_js(plan.config.slots()));
    out.set("report", checkpoint_report_to_js(plan.report));
    return out;
  });
}

/// Loads into a new module (into = 0) or, when every check passed, replaces module `into`.
val load_checkpoint_js(const val& header_bytes, double file_size, const val& options, const val& buffers, double into) {
  return guarded([&] {
    const auto kept = header_from_js(header_bytes, file_size);
    const SafetensorsHeader& h = *kept;
    const CheckpointPlan plan = plan_gpt2_attention(h, checkpoint_options_from_js(options));
    std::map<std::string, std::vector<uint8_t>> bytes;
    for (const auto& e : plan.needed) bytes[e.key] = bytes_from_js(buffers[e.key], e.key.c_str());
    auto loaded = std::make_unique<AttentionModule>(load_gpt2_attention(plan, bytes));
    if (into != 0) {
      module_at(into) = std::move(*loaded);
      val out = ok();
      out.set("report", checkpoint_report_to_js(plan.report));
      return out;
    }
    val out = module_info_to_js(std::move(loaded));
    out.set("report", checkpoint_report_to_js(plan.report));
    return out;
  });
}

val sentence_tokens_js(const val& words_js, double d_in, double seed) {
  return guarded([&] {
    std::vector<std::string> words;
    const unsigned n = words_js["length"].as<unsigned>();
    for (unsigned i = 0; i < n; ++i) words.push_back(words_js[i].as<std::string>());
    if (words.empty() || !(d_in >= 1 && static_cast<double>(words.size()) * d_in <= 64.0 * 1024 * 1024))
      throw AttentionError("tensor_shape", "d_in", "cannot make embeddings for " + std::to_string(words.size()) + " words of width " + std::to_string(d_in),
                           "Type at least one word and use d_in >= 1.");
    const uint64_t s = seed_from_js(seed);
    val out = ok();
    out.set("tensor", tensor_to_js(sentence_tokens(words, static_cast<int64_t>(d_in), s)));
    return out;
  });
}

std::vector<int64_t> ids_from_js(const val& ids) {
  std::vector<int64_t> out;
  if (ids.isNull() || ids.isUndefined() || ids["length"].isUndefined()) return out;
  const unsigned n = ids["length"].as<unsigned>();
  if (n > 100000) throw AttentionError("too_large", "tokens", std::to_string(n) + " tokens are too many", "");
  for (unsigned i = 0; i < n; ++i) {
    const val v = ids[i];
    const double x = v.isNumber() ? v.as<double>() : -1.0;
    out.push_back(x == std::floor(x) && x >= 0 && x < 1e12 ? static_cast<int64_t>(x) : -1);
  }
  return out;
}

val plan_block_input_js(const val& header_bytes, double file_size, const val& ids, const val& options) {
  return guarded([&] {
    const auto kept = header_from_js(header_bytes, file_size);
    const SafetensorsHeader& h = *kept;
    val reads = val::array();
    for (const auto& r : plan_gpt2_block_input(h, ids_from_js(ids), layer_from_js(options))) {
      val o = val::object();
      o.set("name", r.name);
      o.set("begin", static_cast<double>(h.data_start() + r.entry.begin));
      o.set("end", static_cast<double>(h.data_start() + r.entry.end));
      reads.call<void>("push", o);
    }
    val out = ok();
    out.set("reads", reads);
    return out;
  });
}

val block_input_js(const val& header_bytes, double file_size, const val& ids, const val& options, const val& buffers) {
  return guarded([&] {
    const auto kept = header_from_js(header_bytes, file_size);
    const SafetensorsHeader& h = *kept;
    const std::vector<int64_t> token_ids = ids_from_js(ids);
    const auto reads = plan_gpt2_block_input(h, token_ids, layer_from_js(options));
    std::map<std::string, std::vector<uint8_t>> bytes;
    for (const auto& r : reads) bytes[r.name] = bytes_from_js(buffers[r.name], r.name.c_str());
    val out = ok();
    out.set("tensor", tensor_to_js(gpt2_block_input(reads, bytes, token_ids.size())));
    return out;
  });
}

// ---- GPT-2: the whole model, one step per call (the facade reads each step's byte ranges) ----------

Gpt2File& gpt2_at(double handle) {
  const auto it = registry().gpt2.find(static_cast<uint32_t>(handle));
  if (it == registry().gpt2.end()) throw AttentionError("disposed", "model", "this GPT-2 model was disposed", "Load the file again with lab.loadGPT2.");
  return *it->second;
}

Gpt2Run& gpt2_run_at(double handle) {
  Gpt2File& f = gpt2_at(handle);
  if (!f.run) throw AttentionError("checkpoint_layer", "", "no run of this model is in progress", "");
  return *f.run;
}

val reads_to_js(const SafetensorsHeader& h, const std::vector<ByteRead>& reads) {
  val out = val::array();
  for (const auto& r : reads) {
    val o = val::object();
    o.set("name", r.name);
    o.set("begin", static_cast<double>(h.data_start() + r.entry.begin));
    o.set("end", static_cast<double>(h.data_start() + r.entry.end));
    out.call<void>("push", o);
  }
  return out;
}

/// {ok: true, reads}: the byte ranges (absolute offsets) the next step of a GPT-2 run needs.
val reads_result(double handle, const std::vector<ByteRead>& reads) {
  val out = ok();
  out.set("reads", reads_to_js(*gpt2_at(handle).header, reads));
  return out;
}

std::map<std::string, std::vector<uint8_t>> read_bytes(const std::vector<ByteRead>& reads, const val& buffers) {
  std::map<std::string, std::vector<uint8_t>> bytes;
  for (const auto& r : reads) bytes[r.name] = bytes_from_js(buffers[r.name], r.name.c_str());
  return bytes;
}

val gpt2_open_js(const val& header_bytes, double file_size, const val& options) {
  return guarded([&] {
    auto f = std::make_unique<Gpt2File>();
    f->header = header_from_js(header_bytes, file_size);  // a kept header is shared, not copied
    std::optional<int64_t> heads;
    if (!options.isNull() && !options.isUndefined() && options.typeOf().as<std::string>() == "object") heads = whole_option(options, "num_heads", 1, "checkpoint_num_heads");
    f->config = gpt2_config(*f->header, heads);
    const Gpt2Config& c = f->config;
    val config = val::object();
    config.set("n_embd", static_cast<double>(c.n_embd));
    config.set("n_head", static_cast<double>(c.n_head));
    config.set("n_layer", static_cast<double>(c.n_layer));
    config.set("n_ctx", static_cast<double>(c.n_ctx));
    config.set("vocab_size", static_cast<double>(c.vocab_size));
    config.set("dtype", c.dtype);
    config.set("size", c.size);
    Registry& r = registry();
    const uint32_t handle = r.next++;
    r.gpt2[handle] = std::move(f);
    val out = ok();
    out.set("handle", static_cast<double>(handle));
    out.set("config", config);
    return out;
  });
}

void gpt2_release_js(double handle) { registry().gpt2.erase(static_cast<uint32_t>(handle)); }

val gpt2_estimate_js(double handle, double num_tokens) {
  return guarded([&] {
    val out = ok();
    out.set("bytes", gpt2_run_bytes(gpt2_at(handle).config, static_cast<int64_t>(std::max(1.0, std::floor(num_tokens)))));
    return out;
  });
}

/// Starts a run (dropping any earlier one): the reads of the embedding step.
val gpt2_start_js(double handle, const val& ids, double budget) {
  return guarded([&] {
    Gpt2File& f = gpt2_at(handle);
    f.run.reset();
    f.run = std::make_unique<Gpt2Run>(*f.header, f.config, ids_from_js(ids), budget > 0 ? budget : kDefaultMemoryBudgetBytes);
    return reads_result(handle, f.run->embedding_reads());
  });
}

void gpt2_stop_js(double handle) {
  const auto it = registry().gpt2.find(static_cast<uint32_t>(handle));
  if (it != registry().gpt2.end()) it->second->run.reset();
}

val gpt2_embed_js(double handle, const val& buffers) {
  return guarded([&] {
    Gpt2Run& run = gpt2_run_at(handle);
    run.embed(read_bytes(run.embedding_reads(), buffers));
    return ok();
  });
}

val gpt2_block_reads_js(double handle, double layer) {
  return guarded([&] { return reads_result(handle, gpt2_run_at(handle).block_reads(static_cast<int64_t>(layer))); });
}

val gpt2_block_js(double handle, double layer, const val& buffers) {
  return guarded([&] {
    Gpt2Run& run = gpt2_run_at(handle);
    const int64_t L = static_cast<int64_t>(layer);
    Gpt2Run::Layer l = run.block(L, read_bytes(run.block_reads(L), buffers));
    val out = ok();
    out.set("input", tensor_to_js(l.input));
    out.set("attnWeights", tensor_to_js(l.attn_weights));
    return out;
  });
}

val gpt2_input_reads_js(double handle, double layer) {
  return guarded([&] { return reads_result(handle, gpt2_run_at(handle).attention_input_reads(static_cast<int64_t>(layer))); });
}

val gpt2_input_js(double handle, double layer, const val& buffers) {
  return guarded([&] {
    Gpt2Run& run = gpt2_run_at(handle);
    const int64_t L = static_cast<int64_t>(layer);
    val out = ok();
    out.set("tensor", tensor_to_js(run.attention_input(L, read_bytes(run.attention_input_reads(L), buffers))));
    return out;
  });
}

/// ln_f, then the reads of every logits chunk of wte.
val gpt2_final_js(double handle, const val& buffers) {
  return guarded([&] {
    Gpt2Run& run = gpt2_run_at(handle);
    run.final_norm(read_bytes(run.final_reads(), buffers));
    std::vector<ByteRead> chunks;
    for (int64_t begin = 0; begin < run.config().vocab_size; begin += kGpt2LogitsChunkRows) chunks.push_back(run.logits_read(begin));
    val out = ok();
    out.set("chunks", reads_to_js(*gpt2_at(handle).header, chunks));
    return out;
  });
}

val gpt2_final_reads_js(double handle) {
  return guarded([&] { return reads_result(handle, gpt2_run_at(handle).final_reads()); });
}

val gpt2_logits_js(double handle, double begin, const val& bytes) {
  return guarded([&] {
    gpt2_run_at(handle).logits_rows(static_cast<int64_t>(begin), bytes_from_js(bytes, "a chunk of wte.weight"));
    return ok();
  });
}

/// The run's result at the last position; ends the run.
val gpt2_finish_js(double handle, double k) {
  return guarded([&] {
    Gpt2Run& run = gpt2_run_at(handle);
    const std::vector<float>& z = run.last_logits();
    val next = val::array();
    for (const auto& [id, p] : run.top_tokens(static_cast<int>(k))) {
      val o = val::object();
      o.set("id", static_cast<double>(id));
      o.set("prob", p);
      next.call<void>("push", o);
    }
    val out = ok();
    out.set("lastLogits", val::global("Float32Array").new_(emscripten::typed_memory_view(z.size(), z.data())));
    out.set("nextTokens", next);
    gpt2_at(handle).run.reset();
    return out;
  });
}

val estimate_bytes_js(const std::string& class_name, const val& config, const val& input_shape, bool trace) {
  return guarded([&] {
    const ModuleConfig c = validated_config(class_name, config_from_js(config));
    std::optional<Shape> shape;
    if (!input_shape.isNull() && !input_shape.isUndefined()) shape = shape_from_js(input_shape, "inputShape");
    val out = ok();
    out.set("bytes", estimate_bytes(c, shape, trace));
    out.set("budget", kDefaultMemoryBudgetBytes);
    return out;
  });
}

val from_parameters_js(const std::string& class_name, const val& config, const val& params) {
  return guarded([&] {
    std::vector<std::string> notes;
    val out = module_info_to_js(module_from_js(class_name, config, params, notes));
    out.set("notes", array_of_strings(notes));
    return out;
  });
}

double heap_in_use() { return static_cast<double>(mallinfo().uordblks); }

}  // namespace
extern "C" size_t malloc_max_footprint(void);  // dlmalloc: the most heap ever taken from WASM memory
namespace {

double heap_peak() { return static_cast<double>(malloc_max_footprint()); }

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab) {
  emscripten::function("classes", &classes);
  emscripten::function("gpt2Sizes", &gpt2_sizes);
  emscripten::function("parseCall", &parse_call_js);
  emscripten::function("check", &check_js);
  emscripten::function("manualSeed", &manual_seed_js);
  emscripten::function("generatorState", &generator_state_js);
  emscripten::function("releaseGenerator", &release_generator_js);
  emscripten::function("release", &release_module_js);
  emscripten::function("handlesInUse", &handles_in_use);
  emscripten::function("parameters", &parameters_js);
  emscripten::function("setParameter", &set_parameter_js);
  emscripten::function("create", &create_js);
  emscripten::function("forward", &forward_js);
  emscripten::function("rand", &rand_js);
  emscripten::function("dropout", &dropout_js);
  emscripten::function("copyWeights", &copy_weights_js);
  emscripten::function("copyCode", &copy_code_js);
  emscripten::function("bookTokens", &book_tokens_js);
  emscripten::function("seededTokens", &seeded_tokens_js);
  emscripten::function("heapInUse", &heap_in_use);
  emscripten::function("heapPeak", &heap_peak);
  emscripten::function("estimateBytes", &estimate_bytes_js);
  emscripten::function("fromParameters", &from_parameters_js);
  emscripten::function("sentenceTokens", &sentence_tokens_js);
  emscripten::function("equivalentConfig", &equivalent_config_js);
  emscripten::function("convert", &convert_js);
  emscripten::function("compare", &compare_js);
  emscripten::function("checkpointHeaderLength", &checkpoint_header_length_js);
  emscripten::function("planCheckpoint", &plan_checkpoint_js);
  emscripten::function("loadCheckpoint", &load_checkpoint_js);
  emscripten::function("planBlockInput", &plan_block_input_js);
  emscripten::function("blockInput", &block_input_js);
  emscripten::function("gpt2Open", &gpt2_open_js);
  emscripten::function("gpt2Release", &gpt2_release_js);
  emscripten::function("gpt2Estimate", &gpt2_estimate_js);
  emscripten::function("gpt2Start", &gpt2_start_js);
  emscripten::function("gpt2Stop", &gpt2_stop_js);
  emscripten::function("gpt2Embed", &gpt2_embed_js);
  emscripten::function("gpt2BlockReads", &gpt2_block_reads_js);
  emscripten::function("gpt2Block", &gpt2_block_js);
  emscripten::function("gpt2InputReads", &gpt2_input_reads_js);
  emscripten::function("gpt2Input", &gpt2_input_js);
  emscripten::function("gpt2FinalReads", &gpt2_final_reads_js);
  emscripten::function("gpt2Final", &gpt2_final_js);
  emscripten::function("gpt2Logits", &gpt2_logits_js);
  emscripten::function("gpt2Finish", &gpt2_finish_js);
  // checkpoint files: planCheckpoint, loadCheckpoint, planBlockInput, blockInput and gpt2Open take
  // header bytes or a handle of checkpointOpen
  emscripten::function("checkpointOpen", &checkpoint_open_js);
  emscripten::function("checkpointRelease", &checkpoint_release_js);
}

// ---- setup and run: what a page needs per edit, and a run, each in one call (setup.hpp) ----------

namespace {

val description_to_js(const Description& d) {
  val out = val::object();
  out.set("config", config_to_js(d.config.slots()));
  out.set("headDim", static_cast<double>(d.head_dim));
  out.set("outputWidth", static_cast<double>(d.output_width));
  out.set("outputWidthRule", d.output_width_rule);
  out.set("pythonCall", d.python_call);
  val params = val::array();
  for (const auto& p : d.parameters) {
    val o = val::object();
    o.set("name", p.name);
    o.set("shape", shape_to_js(p.shape));
    o.set("count", static_cast<double>(numel_of(p.shape)));
    params.call<void>("push", o);
  }
  out.set("parameters", params);
  out.set("parameterCount", static_cast<double>(d.parameter_count));
  out.set("keyValueHeads", static_cast<double>(d.key_value_heads));
  out.set("kvCacheBytesPerToken", d.kv_cache_bytes_per_token);
  out.set("kvCacheBytesPerTokenMha", d.kv_cache_bytes_per_token_mha);
  out.set("slidingWindowSize", d.sliding_window_size > 0 ? val(static_cast<double>(d.sliding_window_size)) : val::null());
  out.set("maskBytes", d.mask_bytes);
  return out;
}

/// {ok, className, valid, configDiagnostics, diagnostics, description | null, memory: {bytes, budget} | null}
val setup_js(const std::string& class_name, const val& config, const val& input_shape, const val& training, bool trace) {
  return guarded([&] {
    SetupOptions opts;
    if (training.isTrue() || training.isFalse()) opts.training = training.isTrue();
    if (!input_shape.isNull() && !input_shape.isUndefined()) opts.input_shape = shape_from_js(input_shape, "inputShape");
    opts.trace = trace;
    const Setup s = make_setup(class_name, config_from_js(config), opts);
    val out = ok();
    out.set("className", s.class_name);
    out.set("valid", s.valid);
    out.set("configDiagnostics", diagnostics_to_js(s.config_diagnostics));
    out.set("diagnostics", diagnostics_to_js(s.diagnostics));
    out.set("description", s.description ? description_to_js(*s.description) : val::null());
    if (s.memory) {
      val memory = val::object();
      memory.set("bytes", s.memory->bytes);
      memory.set("budget", s.memory->budget);
      out.set("memory", memory);
    } else {
      out.set("memory", val::null());
    }
    return out;
  });
}

/// describe: the Setup's description and its configuration diagnostics, flat (one rule with setup's:
/// the core's make_setup decides what is described).
val describe_js(const std::string& class_name, const val& config) {
  return guarded([&] {
    const Setup s = make_setup(class_name, config_from_js(config), SetupOptions{});
    val out = s.description ? description_to_js(*s.description) : val::object();
    out.set("ok", true);
    out.set("diagnostics", diagnostics_to_js(s.config_diagnostics));
    out.set("valid", s.valid);
    return out;
  });
}

/// manual_seed + constructor + forward: {ok, className, config, pythonCall, headDim, outputWidth, outputWidthRule, output, trace?, warnings}
val run_module_js(const std::string& class_name, const val& config, const val& x, double seed, bool training, bool want_trace) {
  return guarded([&] {
    const Tensor input = tensor_from_js(x, "x");
    RunOptions opts;
    opts.seed = seed_from_js(seed);
    opts.training = training;
    opts.trace = want_trace;
    const RunResult r = run_module(class_name, config_from_js(config), input, opts);
    val out = ok();
    out.set("className", r.config.class_name());
    out.set("config", config_to_js(r.config.slots()));
    out.set("pythonCall", r.config.python_call());
    out.set("headDim", static_cast<double>(r.config.head_dim()));
    out.set("outputWidth", static_cast<double>(r.config.output_width()));
    out.set("outputWidthRule", r.config.output_width_rule());
    out.set("output", tensor_to_js(r.output));
    if (want_trace) out.set("trace", stages_to_js(r.trace));
    out.set("warnings", diagnostics_to_js(r.warnings));
    return out;
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab_setup) {
  emscripten::function("setup", &setup_js);
  emscripten::function("describe", &describe_js);
  emscripten::function("runModule", &run_module_js);
}

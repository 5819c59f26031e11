// The only file that includes <emscripten/...>: embind declarations of the core's boundary (session.hpp) for the JS facade (web/lib/attention-lab.js).
// It decides nothing: each function is a Session call, each result a value_object of a core struct. The glue: std::vector -> Array (float -> Float32Array,
// uint32 -> Uint32Array, copied out of the heap), std::optional -> the value or null, maps and (name, value) lists -> objects, int64 -> number, SlotValue -> a
// JS value; every call returns {ok, error: {code, slot, message, hint}, value} (no exception reaches JS); heapInUse, heapPeak. ATTENTION_LAB_LEAN: the lean's.
#include <emscripten/bind.h>
#include <emscripten/val.h>
#include <malloc.h>
#include <new>
#include <type_traits>

#include "attention_lab/session.hpp"

using emscripten::val;
using namespace attention_lab;
// ---- how C++ values look in JS ------------------------------------------------------------------

namespace glue {
/// The types that cross as JS values (embind's val) rather than as registered types.
template <typename T>
constexpr bool js_value = std::is_same_v<T, SlotValue>;
template <typename T, typename A>
constexpr bool js_value<std::vector<T, A>> = true;
template <typename T>
constexpr bool js_value<std::optional<T>> = true;
template <typename V>
constexpr bool js_value<std::map<std::string, V>> = true;
template <typename T>
constexpr bool as_js = js_value<std::remove_cv_t<std::remove_reference_t<T>>>;

template <typename T>
val to_js(const T& x) {
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>)
    return val(static_cast<double>(x));
  else
    return val(x);
}
template <typename T>
T from_js(const val& v) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(v.as<double>());
  else
    return v.as<T>();
}
template <typename T, typename A>
val array(const std::vector<T, A>& v) {
  if constexpr (std::is_same_v<T, float>)
    return val::global("Float32Array").new_(emscripten::typed_memory_view(v.size(), v.data()));
  else if constexpr (std::is_same_v<T, uint32_t>)
    return val::global("Uint32Array").new_(emscripten::typed_memory_view(v.size(), v.data()));
  else {
    val out = val::array();
    for (const auto& x : v) out.call<void>("push", to_js(x));
    return out;
  }
}
template <typename Pairs>
val object(const Pairs& pairs) {
  val out = val::object();
  for (const auto& [k, x] : pairs) out.set(k, to_js(x));
  return out;
}
template <typename T>
std::vector<T> vector(const val& v) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, int64_t>)
    return emscripten::convertJSArrayToNumberVector<T>(v);  // one bulk copy
  else {
    std::vector<T> out;
    const unsigned n = v["length"].as<unsigned>();
    for (unsigned i = 0; i < n; ++i) out.push_back(from_js<T>(v[i]));
    return out;
  }
}
}  // namespace glue

namespace emscripten::internal {
template <typename T>
struct TypeID<T, std::enable_if_t<glue::as_js<T>>> {
  static constexpr TYPEID get() { return TypeID<val>::get(); }
};
/// Shared by the JS-value types: a C++ value becomes a JS value (and back) through val.
template <typename T, typename Impl>
struct JsBinding {
  using WireType = BindingType<val>::WireType;
  static WireType toWireType(const T& x) { return BindingType<val>::toWireType(Impl::to(x)); }
  static WireType toWireType(T&& x) { return BindingType<val>::toWireType(Impl::to(std::move(x))); }
  static T fromWireType(WireType w) { return Impl::from(BindingType<val>::fromWireType(w)); }
};
template <typename T, typename A>
struct BindingType<std::vector<T, A>> : JsBinding<std::vector<T, A>, BindingType<std::vector<T, A>>> {
  static val to(const std::vector<T, A>& v) { return glue::array(v); }
  static val to(std::vector<T, A>&& v) {  // moved out: elements that hold tensors are not copied on the way
    if constexpr (std::is_arithmetic_v<T>) return glue::array(v);
    val out = val::array();
    for (auto& x : v) out.call<void>("push", val(std::move(x)));
    return out;
  }
  static std::vector<T, A> from(const val& v) { return glue::vector<T>(v); }
};
template <typename V, typename A>
struct BindingType<std::vector<std::pair<std::string, V>, A>> : JsBinding<std::vector<std::pair<std::string, V>, A>, BindingType<std::vector<std::pair<std::string, V>, A>>> {
  static val to(const std::vector<std::pair<std::string, V>, A>& v) { return glue::object(v); }
  static std::vector<std::pair<std::string, V>, A> from(const val&) { return {}; }  // never given by JS
};
template <typename V>
struct BindingType<std::map<std::string, V>> : JsBinding<std::map<std::string, V>, BindingType<std::map<std::string, V>>> {
  static val to(const std::map<std::string, V>& m) { return glue::object(m); }
  static std::map<std::string, V> from(const val& v) {
    std::map<std::string, V> out;
    if (v.isNull() || v.isUndefined()) return out;
    const val keys = val::global("Object").call<val>("keys", v);
    for (unsigned i = 0; i < keys["length"].as<unsigned>(); ++i) {
      const std::string k = keys[i].as<std::string>();
      if (!v[k].isUndefined()) out[k] = glue::from_js<V>(v[k]);
    }
    return out;
  }
};
template <typename T>
struct BindingType<std::optional<T>> : JsBinding<std::optional<T>, BindingType<std::optional<T>>> {
  static val to(const std::optional<T>& o) { return o ? glue::to_js(*o) : val::null(); }
  static val to(std::optional<T>&& o) { return o ? val(std::move(*o)) : val::null(); }
  static std::optional<T> from(const val& v) {
    if (v.isNull() || v.isUndefined()) return std::nullopt;
    return glue::from_js<T>(v);
  }
};
template <>
struct BindingType<SlotValue> : JsBinding<SlotValue, BindingType<SlotValue>> {
  static val to(const SlotValue& v) {
    if (v.is_number()) return val(v.number);
    if (v.kind == SlotValue::Kind::Bool) return val(v.boolean);
    if (v.kind == SlotValue::Kind::None) return val::null();
    return val(v.text);
  }
  static SlotValue from(const val& v) {
    const std::string type = v.typeOf().as<std::string>();
    if (type == "number") return slot_value_of_number(v.as<double>());
    if (type == "boolean") return SlotValue::boolean_value(v.as<bool>());
    if (type == "string") return slot_value_of_text(v.as<std::string>());
    if (v.isNull() || v.isUndefined()) return SlotValue::none();
    return SlotValue::expression("<" + type + ">");
  }
};
}  // namespace emscripten::internal

// ---- every call returns data ----------------------------------------------------------------------

namespace {

struct Failure {
  std::string code, slot, message, hint;
};
template <typename T>
struct Result {
  bool ok = true;
  Failure error;
  std::optional<T> value;  // null in JS when the call failed
};

/// What a call threw, as data: here once, not in each bound function's catch (120 of them; ~30 KB).
Failure failure_of(const std::exception& e) {
  if (const auto* a = dynamic_cast<const AttentionError*>(&e)) return {a->code(), a->slot(), a->what(), a->hint()};
  if (dynamic_cast<const std::bad_alloc*>(&e)) return {"out_of_memory", "", "the WebAssembly heap ran out of memory", "Use smaller sizes or fewer tokens; the page keeps working."};
  return {"internal", "", e.what(), "This is a bug in attention-lab; please report the setup."};
}

template <typename T, typename F>
Result<T> guarded(F&& body) {
  try {
    return {true, {}, body()};
  } catch (const std::exception& e) {
    return {false, failure_of(e), std::nullopt};
  }
}

Session& session() {
  static Session s;
  return s;
}

/// Session member M (R (Session::*)(A...), const or not) as a JS function returning Result.
template <auto M, typename R, typename... A>
Result<R> run(A... a) {
  return guarded<R>([&] { return (session().*M)(std::forward<A>(a)...); });
}
template <auto M, typename R, typename... A>
constexpr auto runner(R (Session::*)(A...)) {
  return &run<M, R, A...>;
}
template <auto M, typename R, typename... A>
constexpr auto runner(R (Session::*)(A...) const) {
  return &run<M, R, A...>;
}

/// value_object<C>("Name", "field", &C::member or getter, ...): a getter's setter does nothing (out only).
template <typename C>
struct object : emscripten::value_object<C> {
  template <typename... F>
  object(const char* name, F... fields) : emscripten::value_object<C>(name) {
    add(fields...);
  }
  void add() {}
  template <typename M, typename... F>
  void add(const char* name, M m, F... rest) {
    if constexpr (std::is_member_object_pointer_v<M>)
      emscripten::value_object<C>::field(name, m);
    else
      emscripten::value_object<C>::field(name, m, &ignore);
    add(rest...);
  }
  static void ignore(C&, val) {}  // takes a JS value: nothing converts JS back into an out-only field
};

template <typename T>
struct member_of;
template <typename C, typename F>
struct member_of<F C::*> {
  using type = C;
  using field = F;
};
/// A whole-number member as a JS number.
template <auto M>
double num(const typename member_of<decltype(M)>::type& c) {
  return static_cast<double>(c.*M);
}

/// A member moved out, not copied (each struct here is a temporary JS reads once, so its tensors move).
template <auto M>
typename member_of<decltype(M)>::field take(const typename member_of<decltype(M)>::type& c) {
  using C = typename member_of<decltype(M)>::type;
  return std::move(const_cast<C&>(c).*M);
}

/// Declares Result<T> once, however many calls return a T.
template <typename T>
void declare_result() {
  using R = Result<T>;
  static const bool declared =
      (emscripten::value_object<R>(typeid(R).name()).field("ok", &R::ok).field("error", &R::error).field("value", &take<&R::value>, &object<R>::ignore), true);
  (void)declared;
}

template <auto M>
constexpr auto call = runner<M>(M);  // Session member M as a JS function

/// Declares each ("name", call<&Session::member>) pair as the JS function `name`, and its Result type.
inline void functions() {}
template <typename R, typename... A, typename... Rest>
void functions(const char* name, Result<R> (*f)(A...), Rest... rest) {
  declare_result<R>();
  emscripten::function(name, f);
  functions(rest...);
}
}  // namespace
extern "C" size_t malloc_max_footprint(void);                                // dlmalloc: the most heap ever taken from WASM memory
double heap_in_use() { return static_cast<unsigned>(mallinfo().uordblks); }  // an int in its header: unsigned past 2 GiB
double heap_peak() { return static_cast<double>(malloc_max_footprint()); }

// ---- the types --------------------------------------------------------------------------------------
EMSCRIPTEN_BINDINGS(attention_lab_types) {
  object<Failure>("Failure", "code", &Failure::code, "slot", &Failure::slot, "message", &Failure::message, "hint", &Failure::hint);
  object<TensorInput>("TensorInput", "shape", &TensorInput::shape, "data", &TensorInput::data);
  object<ParameterInput>("ParameterInput", "name", &ParameterInput::name, "tensor", &ParameterInput::tensor);
  object<NumberOption>("NumberOption", "given", &NumberOption::given, "number", &NumberOption::number, "boolean", &NumberOption::boolean, "value", &NumberOption::value);
  object<PlanEntryInput>("PlanEntryInput", "name", &PlanEntryInput::name, "copy", &PlanEntryInput::copy, "transpose", &PlanEntryInput::transpose, "object",
                         &PlanEntryInput::object);
  object<Tensor>("Tensor", "shape", &Tensor::shape, "data", &Tensor::data);
  object<NamedTensor>("NamedTensor", "name", &NamedTensor::name, "shape", &NamedTensor::shape, "data", &NamedTensor::data);
  object<Fix>("Fix", "slot", &Fix::slot, "value", &Fix::value, "call", &Fix::call);
  object<Diagnostic>("Diagnostic", "severity", &Diagnostic::severity_text, "code", &Diagnostic::code, "slots", &Diagnostic::slots, "message", &Diagnostic::message, "hint",
                     &Diagnostic::hint, "pytorch", &Diagnostic::pytorch, "fixes", &Diagnostic::fixes);
  object<TensorSummary>("TensorSummary", "min", &TensorSummary::min, "max", &TensorSummary::max, "mean", &TensorSummary::mean, "negInf", &num<&TensorSummary::neg_inf>, "zeros",
                        &num<&TensorSummary::zeros>, "count", &num<&TensorSummary::count>, "nonFinite", &num<&TensorSummary::non_finite>, "nanRows", &num<&TensorSummary::nan_rows>,
                        "masked", &num<&TensorSummary::masked>);
  object<Stage>("Stage", "shape", &Stage::shape, "data", &Stage::data, "id", &Stage::id, "display", &Stage::display, "title", &Stage::title, "formula", &Stage::formula, "axes",
                &Stage::axes, "summary", &Stage::summary, "sliceSummaries", &Stage::slice_summaries);
  object<StageDiff>("StageDiff", "id", &StageDiff::id, "maxAbsDiff", &StageDiff::max_abs_diff);
  object<BookHome>("BookHome", "chapter", &BookHome::chapter, "folder", &BookHome::folder, "file", &BookHome::file, "section", &BookHome::section);
  object<SlotSpec>(
      "SlotSpec", "name", &SlotSpec::name, "position", &SlotSpec::position, "type", +[](const SlotSpec& s) { return std::string(slot_type_name(s.type)); }, "default",
      +[](const SlotSpec& s) { return s.default_value ? glue::to_js(*s.default_value) : val::undefined(); }, "doc", &SlotSpec::doc);
  object<Preset>("Preset", "key", &Preset::key, "slots", &Preset::slots, "tokens", &Preset::tokens, "batch", &Preset::batch, "note", &Preset::note, "order", &Preset::order);
  object<CopyPartner>("CopyPartner", "from", &CopyPartner::from, "note", &CopyPartner::note);
  object<ClassSpec>(
      "ClassSpec", "name", &ClassSpec::name, "doc", &ClassSpec::doc, "source", &ClassSpec::source, "book", &ClassSpec::book, "slots", &ClassSpec::slots, "inputAxes",
      &ClassSpec::input_axes, "heads", +[](const ClassSpec& s) { return std::string(heads_rule_name(s.heads)); }, "mask",
      +[](const ClassSpec& s) { return std::string(mask_rule_name(s.mask)); }, "maskBufferDtype", +[](const ClassSpec& s) { return std::string(s.mask_buffer_dtype()); },
      "contextLimit", &ClassSpec::context_limit, "dropoutRule", +[](const ClassSpec& s) { return std::string(dropout_rule_name(s.dropout)); }, "needsSquare",
      +[](const ClassSpec& s) { return !s.needs_square.empty(); }, "presets", &ClassSpec::presets, "tolerance", +[](const ClassSpec&) { return kAgreementTolerance; }, "pythonName",
      &ClassSpec::python_name, "bookSeed", &num<&ClassSpec::book_seed>, "weights", +[](const ClassSpec& s) { return std::string(s.queries_in_out() ? "matrix" : "linear"); },
      "copiesFrom", &ClassSpec::copies_from, "copiesWith", &ClassSpec::copies_with, "convertsTo", &ClassSpec::converts_to, "loadsCheckpoints", &ClassSpec::loads_checkpoints,
      "maskFill", +[](const ClassSpec& s) { return s.mask_fill(); });
  object<Gpt2Size>(
      "Gpt2Size", "name", +[](const Gpt2Size& s) { return std::string(s.name); }, "n_embd", &num<&Gpt2Size::n_embd>, "n_head", &num<&Gpt2Size::n_head>, "n_layer",
      &num<&Gpt2Size::n_layer>);
  object<ParsedSlot>("ParsedSlot", "name", &ParsedSlot::name, "position", &ParsedSlot::position, "value", &ParsedSlot::value, "source", &ParsedSlot::source, "text",
                     &ParsedSlot::text);
  object<ParsedCall>("ParsedCall", "className", &ParsedCall::class_name, "config", &ParsedCall::config, "slots", &ParsedCall::slots, "diagnostics", &ParsedCall::diagnostics);
  object<ParameterSpec>(
      "ParameterShape", "name", &ParameterSpec::name, "shape", &ParameterSpec::shape, "count", +[](const ParameterSpec& p) { return static_cast<double>(numel_of(p.shape)); });
  object<Description>(
      "Description", "module", &Description::config, "parameters", &Description::parameters, "parameterCount", &num<&Description::parameter_count>, "keyValueHeads",
      &num<&Description::key_value_heads>, "kvCacheBytesPerToken", &Description::kv_cache_bytes_per_token, "kvCacheBytesPerTokenMha", &Description::kv_cache_bytes_per_token_mha,
      "slidingWindowSize", +[](const Description& d) { return d.sliding_window_size > 0 ? std::optional<double>(d.sliding_window_size) : std::nullopt; }, "maskBytes",
      &Description::mask_bytes, "latentDim", +[](const Description& d) { return d.latent_dim > 0 ? std::optional<double>(d.latent_dim) : std::nullopt; });
  object<ModuleConfig>(
      "ModuleConfig", "className", &ModuleConfig::class_name, "config", &ModuleConfig::slots, "pythonCall", &ModuleConfig::python_call, "headDim",
      +[](const ModuleConfig& c) { return static_cast<double>(c.head_dim()); }, "outputWidth", +[](const ModuleConfig& c) { return static_cast<double>(c.output_width()); },
      "outputWidthRule", &ModuleConfig::output_width_rule);
  object<MemoryEstimate>("MemoryEstimate", "bytes", &MemoryEstimate::bytes, "budget", &MemoryEstimate::budget);
  object<Setup>("Setup", "className", &Setup::class_name, "valid", &Setup::valid, "configDiagnostics", &Setup::config_diagnostics, "diagnostics", &Setup::diagnostics,
                "description", &Setup::description, "memory", &Setup::memory);
  object<RunResult>("RunResult", "module", &RunResult::config, "output", &take<&RunResult::output>, "trace", &take<&RunResult::trace>, "warnings", &RunResult::warnings);
  object<CacheState>("CacheState", "handle", &CacheState::handle, "module", &CacheState::module, "window", &CacheState::window, "position", &CacheState::position, "tokens",
                     &CacheState::tokens, "bytes", &CacheState::bytes, "bytesMha", &CacheState::bytes_mha);
  object<ForwardResult>("ForwardResult", "output", &take<&ForwardResult::output>, "trace", &take<&ForwardResult::trace>, "warnings", &ForwardResult::warnings, "cache",
                        &ForwardResult::cache);
  object<TraceStage>("TraceStage", "id", &TraceStage::id, "display", &TraceStage::display, "title", &TraceStage::title, "formula", &TraceStage::formula, "axes", &TraceStage::axes,
                     "shape", &TraceStage::shape, "summary", &TraceStage::summary, "sliceSummaries", &TraceStage::slice_summaries, "first", &TraceStage::first);
  object<ResidentTrace>("ResidentTrace", "handle", &ResidentTrace::handle, "stages", &ResidentTrace::stages, "bytes", &ResidentTrace::bytes);
  object<ResidentRun>("ResidentRun", "module", &ResidentRun::config, "output", &take<&ResidentRun::output>, "trace", &ResidentRun::trace, "warnings", &ResidentRun::warnings);
  object<ResidentForward>("ResidentForward", "output", &take<&ResidentForward::output>, "trace", &ResidentForward::trace, "warnings", &ResidentForward::warnings, "cache",
                          &ResidentForward::cache);
  object<TraceHeatmap>("TraceHeatmap", "rows", &TraceHeatmap::rows, "cols", &TraceHeatmap::cols, "height", &TraceHeatmap::height, "width", &TraceHeatmap::width, "values",
                       &take<&TraceHeatmap::values>);
  object<TraceWindow>("TraceWindow", "window", &take<&TraceWindow::window>, "rowSums", &TraceWindow::row_sums);
  object<IgnoredKey>("IgnoredKey", "key", &IgnoredKey::key, "reason", &IgnoredKey::reason);
  object<CheckpointReport>("CheckpointReport", "used", &CheckpointReport::used, "ignored", &CheckpointReport::ignored, "ignoredCount", &num<&CheckpointReport::ignored_count>,
                           "maxLayer", &num<&CheckpointReport::max_layer>, "missing", &CheckpointReport::missing, "transposed", &CheckpointReport::transposed, "sources",
                           &CheckpointReport::sources, "gpt2Vocab", &CheckpointReport::gpt2_vocab, "layout", &CheckpointReport::layout, "layoutName",
                           &CheckpointReport::layout_name, "mapping", &CheckpointReport::mapping);
  object<ModuleInfo>("ModuleInfo", "handle", &ModuleInfo::handle, "module", &ModuleInfo::config, "parameterCount", &num<&ModuleInfo::parameter_count>, "notes", &ModuleInfo::notes,
                     "code", &ModuleInfo::code, "report", &ModuleInfo::report);
  object<MatrixReport>("MatrixReport", "name", &MatrixReport::name, "action", &MatrixReport::action, "sources", &MatrixReport::sources, "fromShape", &MatrixReport::from_shape,
                       "toShape", &MatrixReport::to_shape, "hint", &MatrixReport::hint);
  object<CopyReport>("CopyReport", "matrices", &CopyReport::matrices, "maxAbsDiff", &CopyReport::max_abs_diff, "agree", &CopyReport::agree, "notes", &CopyReport::notes, "tokens",
                     &take<&CopyReport::tokens>, "stages", &CopyReport::stages, "code", &CopyReport::code);
  object<CheckCause>("CheckCause", "id", &CheckCause::id, "title", &CheckCause::title, "line", &CheckCause::line, "fix", &CheckCause::fix, "source", &CheckCause::source,
                     "explains", &CheckCause::explains);
  object<CheckDifference>("CheckDifference", "stage", &CheckDifference::stage, "axes", &CheckDifference::axes, "shape", &CheckDifference::shape, "index", &CheckDifference::index,
                          "from", &num<&CheckDifference::from>, "yours", &CheckDifference::yours, "book", &CheckDifference::book);
  object<CheckReport>("CheckReport", "className", &CheckReport::class_name, "call", &CheckReport::call, "seed", &CheckReport::seed, "agree", &CheckReport::agree, "maxAbsDiff",
                      &CheckReport::max_abs_diff, "firstStage", &CheckReport::first_stage, "difference", &CheckReport::difference, "causes", &CheckReport::causes, "notes",
                      &CheckReport::notes);
#ifndef ATTENTION_LAB_LEAN  // the types of the checkpoint and GPT-2 readers
  object<CheckpointOptionsInput>("CheckpointOptionsInput", "layer", &CheckpointOptionsInput::layer, "num_heads", &CheckpointOptionsInput::num_heads, "context_length",
                                 &CheckpointOptionsInput::context_length, "intoClass", &CheckpointOptionsInput::into_class, "intoConfig", &CheckpointOptionsInput::into_config);
  object<FileRead>("FileRead", "name", &FileRead::name, "begin", &FileRead::begin, "end", &FileRead::end);
  object<CheckpointPlanResult>("CheckpointPlan", "needed", &CheckpointPlanResult::needed, "config", &CheckpointPlanResult::config, "report", &CheckpointPlanResult::report);
  object<OpenedFile>("OpenedFile", "handle", &OpenedFile::handle, "keys", &OpenedFile::keys, "dataStart", &OpenedFile::data_start);
  object<Gpt2Config>("Gpt2Config", "n_embd", &num<&Gpt2Config::n_embd>, "n_head", &num<&Gpt2Config::n_head>, "n_layer", &num<&Gpt2Config::n_layer>, "n_ctx",
                     &num<&Gpt2Config::n_ctx>, "vocab_size", &num<&Gpt2Config::vocab_size>, "dtype", &Gpt2Config::dtype, "size", &Gpt2Config::size, "qkv_bias",
                     &Gpt2Config::qkv_bias, "n_out", &num<&Gpt2Config::n_out>, "layout", &Gpt2Config::layout_id, "layoutName", &Gpt2Config::layout_name, "mapping",
                     &Gpt2Config::mapping);
  object<OpenedModel>("OpenedModel", "handle", &OpenedModel::handle, "config", &OpenedModel::config);
  object<Gpt2Run::Layer>("Gpt2Layer", "input", &take<&Gpt2Run::Layer::input>, "attnWeights", &take<&Gpt2Run::Layer::attn_weights>, "thumbnail", &take<&Gpt2Run::Layer::thumbnail>,
                         "firstTokens", &take<&Gpt2Run::Layer::first_tokens>);
  object<NextToken>("NextToken", "id", &NextToken::id, "prob", &NextToken::prob);
  object<Gpt2Result>("Gpt2Result", "lastLogits", &take<&Gpt2Result::last_logits>, "nextTokens", &Gpt2Result::next_tokens);
  object<RunStepResult>("RunStepResult", "step", &RunStepResult::step, "layer", &RunStepResult::layer, "done", &RunStepResult::done, "total", &RunStepResult::total, "block",
                        &take<&RunStepResult::block>, "input", &take<&RunStepResult::input>, "logits", &take<&RunStepResult::logits>, "finished", &RunStepResult::finished);
  object<GenerateOptionsInput>("GenerateOptionsInput", "maxNewTokens", &GenerateOptionsInput::max_new_tokens, "temperature", &GenerateOptionsInput::temperature, "topK",
                               &GenerateOptionsInput::top_k, "eosId", &GenerateOptionsInput::eos_id, "cache", &GenerateOptionsInput::cache, "resident",
                               &GenerateOptionsInput::resident, "window", &GenerateOptionsInput::window, "attention", &GenerateOptionsInput::attention);
  object<GenerateStart>("GenerateStart", "resident", &GenerateStart::resident, "estimateBytes", &GenerateStart::estimate_bytes);
  object<GeneratedToken>("GeneratedToken", "token", &GeneratedToken::token, "prob", &GeneratedToken::prob, "top", &GeneratedToken::top, "cacheTokens",
                         &GeneratedToken::cache_tokens, "cacheBytes", &GeneratedToken::cache_bytes, "attention", &GeneratedToken::attention);
  object<GenerateStepResult>("GenerateStepResult", "finished", &GenerateStepResult::finished, "eos", &GenerateStepResult::eos, "token", &GenerateStepResult::token);
  object<HeadShare>("HeadShare", "first", &num<&HeadShare::first>, "count", &num<&HeadShare::count>);
#endif
}

// ---- the calls ----------------------------------------------------------------------------------------
EMSCRIPTEN_BINDINGS(attention_lab_calls) {
  functions(
      "classes", call<&Session::classes>, "gpt2Sizes", call<&Session::gpt2_sizes>, "kernelFusesMultiplyAdd", call<&Session::kernel_fuses_multiply_add>, "setThreads",
      call<&Session::set_threads>, "threads", call<&Session::threads>, "parseCall", call<&Session::parse_call>, "check", call<&Session::check>, "setup", call<&Session::setup>,
      "describe", call<&Session::describe>, "runModule", call<&Session::run_module>, "estimateBytes", call<&Session::estimate_bytes>, "equivalentConfig",
      call<&Session::equivalent_config>, "copyCode", call<&Session::copy_code>, "bookTokens", call<&Session::book_tokens>, "seededTokens", call<&Session::seeded_tokens>,
      "sentenceTokens", call<&Session::sentence_tokens>, "manualSeed", call<&Session::manual_seed>, "generatorState", call<&Session::generator_state>, "rand", call<&Session::rand>,
      "dropout", call<&Session::dropout>, "create", call<&Session::create>, "useGenerator", call<&Session::use_generator>, "fromParameters", call<&Session::from_parameters>,
      "parameters", call<&Session::parameters>, "setParameter", call<&Session::set_parameter>, "forward", call<&Session::forward>, "newCache", call<&Session::new_cache>,
      "resetCache", call<&Session::reset_cache>, "convert", call<&Session::convert>, "compare", call<&Session::compare>, "copyWeights", call<&Session::copy_weights>, "release",
      call<&Session::release>, "handlesInUse", call<&Session::handles_in_use>, "runResident", call<&Session::run_resident>, "forwardResident", call<&Session::forward_resident>,
      "estimateResidentBytes", call<&Session::estimate_resident_bytes>, "traceHeatmap", call<&Session::trace_heatmap>, "traceWindow", call<&Session::trace_window>, "traceData",
      call<&Session::trace_data>, "traceBytesInUse", call<&Session::trace_bytes_in_use>, "seedRange", call<&Session::seed_range>, "checkModule", call<&Session::check_module>);
#ifndef ATTENTION_LAB_LEAN  // reserveMemory, the head split, the checkpoint and GPT-2 readers: not in attention_core_lean*.wasm (the linker drops their code)
  functions("reserveMemory", call<&Session::reserve_memory>, "headShares", call<&Session::head_shares>, "forwardShare", call<&Session::forward_share>, "projectHeads",
            call<&Session::project_heads>, "moduleRevision", call<&Session::module_revision>, "checkpointHeaderLength", call<&Session::checkpoint_header_length>, "checkpointOpen",
            call<&Session::checkpoint_open>, "checkpointFormat", call<&Session::checkpoint_format>, "torchSaveReads", call<&Session::torch_save_reads>, "torchSaveOpen",
            call<&Session::torch_save_open>, "planCheckpoint", call<&Session::plan_checkpoint>, "loadCheckpoint", call<&Session::load_checkpoint>, "planBlockInput",
            call<&Session::plan_block_input>, "blockInput", call<&Session::block_input>, "gpt2Open", call<&Session::gpt2_open>, "gpt2Estimate", call<&Session::gpt2_estimate>,
            "gpt2Run", call<&Session::gpt2_run>, "gpt2RunStep", call<&Session::gpt2_run_step>, "gpt2Generate", call<&Session::gpt2_generate>, "gpt2GenerateStep",
            call<&Session::gpt2_generate_step>, "gpt2Reads", call<&Session::gpt2_reads>, "gpt2Stop", call<&Session::gpt2_stop>, "checkFileReads", call<&Session::check_file_reads>,
            "checkFile", call<&Session::check_file>);
#endif
  emscripten::function("heapInUse", &heap_in_use);
  emscripten::function("heapPeak", &heap_peak);
}

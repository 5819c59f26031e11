// The pickle interpreter of torch.save's data.pkl: see pickle_reader.hpp. Values live in one arena
// (a vector, indexed), so containers that hold each other cost no recursion to free and cycles leak
// nothing; every count is bounded before it grows.
#include "pickle_reader.hpp"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include "pickle_machine.hpp"

namespace attention_lab::pickle {

size_t storage_dtype(const std::string& name, std::string& dtype) {
  static const std::pair<const char*, const char*> kTypes[] = {{"FloatStorage", "F32"}, {"HalfStorage", "F16"}, {"BFloat16Storage", "BF16"}, {"DoubleStorage", "F64"},
                                                               {"LongStorage", "I64"},  {"IntStorage", "I32"},  {"ShortStorage", "I16"},     {"CharStorage", "I8"},
                                                               {"ByteStorage", "U8"},   {"BoolStorage", "BOOL"}};
  static const size_t kSizes[] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 1};
  for (size_t i = 0; i < sizeof(kSizes) / sizeof(kSizes[0]); ++i) {
    if (name == kTypes[i].first) {
      dtype = kTypes[i].second;
      return kSizes[i];
    }
  }
  return 0;
}

namespace {

/// A global's refusal: a class from the saver's own code (a whole pickled module) or anything else.
[[noreturn]] void refuse_global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  static const char* kRuntime[] = {"builtins", "__builtin__", "os", "posix",  "nt",        "subprocess", "sys",   "shutil",  "socket",  "importlib",
                                   "runpy",    "pickle",      "io", "codecs", "functools", "operator",   "types", "copyreg", "copy_reg"};
  bool runtime = false;
  for (const char* m : kRuntime) runtime = runtime || module == m || module.rfind(std::string(m) + ".", 0) == 0;
  const bool is_class = !name.empty() && name[0] >= 'A' && name[0] <= 'Z';
  if (module == "__main__" || module.rfind("torch.nn", 0) == 0 || (is_class && !runtime && module.rfind("torch", 0) != 0))
    throw AttentionError("checkpoint_pickled_module", full,
                         "the file holds a whole pickled object (" + full + "), not a state dict: reading it would need " + module + "'s own code",
                         "In Python, load it and save its weights alone: torch.save(model.state_dict(), \"model.pth\").");
  if (name == "Ellipsis")  // a snippet's `...` placeholder saved as it was
    throw AttentionError("checkpoint_pickle_global", full, "the file holds a ... (Ellipsis) where a tensor belongs: a placeholder of a snippet saved as it was",
                         "Replace each ... with your tensor, or delete that line (the check's \"stages\" are optional), and save the file again.");
  throw AttentionError("checkpoint_pickle_global", full, "the pickle names " + full + ", which a state dict never needs; it was refused and nothing was run",
                       "Open only files saved with torch.save(model.state_dict(), ...) from a source you trust; a state dict needs only OrderedDict, tensors and storages.");
}

}  // namespace

void Machine::global(const std::string& module, const std::string& name) {
  std::string dtype;
  const bool allowed = (module == "collections" && name == "OrderedDict") ||
                       (module == "torch._utils" && (name == "_rebuild_tensor_v2" || name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state")) ||
                       (module == "torch" && storage_dtype(name, dtype) != 0);
  if (!allowed) refuse_global(module, name);
  Obj o{Kind::Global};
  o.text = module + "." + name;
  push(make(std::move(o)));
}

void Machine::persistent_id() {
  const Obj& pid = at(pop());
  if (pid.kind != Kind::Tuple || pid.items.size() < 5 || pid.items.size() > 6) bad("a persistent id that is not ('storage', type, key, location, numel)");
  // the legacy format adds view_metadata: None, or (view_key, offset, size) for a storage view (torch < 0.4)
  if (pid.items.size() == 6 && at(pid.items[5]).kind != Kind::None)
    throw AttentionError("checkpoint_legacy_format", what_,
                         std::string(what_) + " holds a storage view (view_metadata), which torch older than 0.4 wrote; this reader does not read it",
                         "Save it again with a newer torch: torch.save(torch.load(\"model.pth\"), \"model.pth\") writes the zip format.");
  const Obj& tag = at(pid.items[0]);
  const Obj& type = at(pid.items[1]);
  const Obj& key = at(pid.items[2]);
  const Obj& numel = at(pid.items[4]);
  if (tag.kind != Kind::Str || tag.text != "storage" || type.kind != Kind::Global || key.kind != Kind::Str || numel.kind != Kind::Int || numel.number < 0)
    bad("a persistent id that is not ('storage', torch.<Type>Storage, key, location, numel)");
  Storage s;
  s.key = key.text;
  if (storage_dtype(type.text.substr(type.text.rfind('.') + 1), s.dtype) == 0) bad("a persistent id whose type " + type.text + " is not a storage type");
  s.numel = static_cast<uint64_t>(numel.number);
  size_t index = out_.storages.size();
  const auto found = storage_by_key_.find(s.key);
  if (found != storage_by_key_.end()) {
    index = found->second;
    const Storage& seen = out_.storages[index];
    if (seen.dtype != s.dtype || seen.numel != s.numel) bad("storage '" + s.key + "' named twice with different types or sizes");
  } else {
    storage_by_key_.emplace(s.key, index);
    out_.storages.push_back(std::move(s));
  }
  Obj o{Kind::Storage};
  o.number = static_cast<int64_t>(index);
  push(make(std::move(o)));
}

std::vector<int64_t> Machine::whole_tuple(uint32_t i, const char* what) {
  const Obj& t = at(i);
  if (t.kind != Kind::Tuple || t.items.size() > 16) bad(std::string("_rebuild_tensor_v2's ") + what + " is not a tuple of at most 16 whole numbers");
  std::vector<int64_t> out;
  for (uint32_t v : t.items) {
    const Obj& x = at(v);
    if (x.kind != Kind::Int || x.number < 0 || x.number > (int64_t{1} << 48))
      bad(std::string("_rebuild_tensor_v2's ") + what + " holds a value that is not a whole number from 0 to 2**48");
    out.push_back(x.number);
  }
  return out;
}

uint32_t Machine::rebuild_tensor(const Obj& args) {
  if (args.items.size() < 4) bad("_rebuild_tensor_v2 given fewer than 4 arguments");
  const Obj& storage = at(args.items[0]);
  const Obj& offset = at(args.items[1]);
  if (storage.kind != Kind::Storage) bad("_rebuild_tensor_v2's first argument is not a storage");
  if (offset.kind != Kind::Int || offset.number < 0 || offset.number > (int64_t{1} << 48)) bad("_rebuild_tensor_v2's storage offset is not a whole number from 0 to 2**48");
  TensorView t;
  t.storage = static_cast<size_t>(storage.number);
  t.offset = offset.number;
  t.shape = whole_tuple(args.items[2], "size");
  t.stride = whole_tuple(args.items[3], "stride");
  if (t.shape.size() != t.stride.size()) bad("_rebuild_tensor_v2's size and stride have different lengths");
  Obj o{Kind::Tensor};
  o.number = static_cast<int64_t>(tensors_.size());
  tensors_.push_back(std::move(t));
  return make(std::move(o));
}

void Machine::reduce() {
  const uint32_t args_at = pop();
  const Obj& fn = at(pop());
  const Obj& args = at(args_at);
  if (fn.kind != Kind::Global || args.kind != Kind::Tuple) bad("REDUCE of something that is not a listed global with a tuple of arguments");
  if (fn.text == "collections.OrderedDict") {
    if (!args.items.empty()) bad("OrderedDict given arguments; torch.save gives none");
    push(make(Obj{Kind::Dict}));
  } else if (fn.text == "torch._utils._rebuild_tensor_v2") {
    push(rebuild_tensor(args));
  } else if (fn.text == "torch._utils._rebuild_parameter" || fn.text == "torch._utils._rebuild_parameter_with_state") {
    if (args.items.empty() || at(args.items[0]).kind != Kind::Tensor) bad(fn.text + "'s first argument is not a tensor");
    push(args.items[0]);
  } else {
    bad("REDUCE calls " + fn.text + ", which is a type, not a function");
  }
}

void Machine::build() {
  pop();  // the state: an OrderedDict's attributes (state_dict's _metadata), not needed for the tensors
  if (at(top()).kind != Kind::Dict) bad("BUILD on something that is not an OrderedDict");
}

// ---- the tree, flattened ----

void Machine::flatten(uint32_t i, const std::string& prefix, int depth) {
  const Obj& o = at(i);
  if (o.kind == Kind::Tensor) {
    if (prefix.size() > 65536) limit("a key longer than 65536 bytes");
    out_.tensors.emplace_back(prefix, tensors_[static_cast<size_t>(o.number)]);
    return;
  }
  if (o.kind == Kind::Str) {
    if (out_.strings.size() < kMaxStringLeaves && o.text.size() <= kMaxStringLeafBytes && prefix.size() <= 65536) out_.strings.emplace_back(prefix, o.text);
    return;
  }
  if (o.kind == Kind::Int || o.kind == Kind::Float) {  // the top-level dict's numbers only (depth 1): a check file's "seed"
    if (depth == 1 && out_.numbers.size() < kMaxStringLeaves && prefix.size() <= 65536)
      out_.numbers.emplace_back(prefix, o.kind == Kind::Int ? static_cast<double>(o.number) : o.real);
    return;
  }
  if (o.kind != Kind::Dict && o.kind != Kind::List && o.kind != Kind::Tuple) return;
  if (depth >= kMaxDepth) limit("dicts and lists nested deeper than " + std::to_string(kMaxDepth) + " (or one that holds itself)");
  const bool dict = o.kind == Kind::Dict;
  const std::vector<uint32_t> items = o.items;  // flatten may not grow the arena, but keep no reference across calls
  for (size_t k = 0; k < items.size(); k += dict ? 2 : 1) {
    std::string name;
    if (!dict) {
      name = std::to_string(k);
    } else {
      const Obj& key = at(items[k]);
      if (key.kind == Kind::Str)
        name = key.text;
      else if (key.kind == Kind::Int)
        name = std::to_string(key.number);
      else if (at(items[k + 1]).kind == Kind::Tensor || at(items[k + 1]).kind == Kind::Dict)
        bad("a dict key that is neither a string nor a whole number");
      else
        continue;
    }
    flatten(items[k + (dict ? 1 : 0)], prefix.empty() ? name : prefix + "." + name, depth + 1);
  }
}

StateDict read_state_dict(const uint8_t* bytes, size_t length) {
  if (length > kMaxPickleBytes)
    throw AttentionError("checkpoint_limit", "", "data.pkl is " + std::to_string(length) + " bytes; this reader takes at most " + std::to_string(kMaxPickleBytes),
                         "A state dict's pickle is small (GPT-2's: ~30 KB): save only the model's state_dict.");
  Machine m(bytes, length);
  return m.run();
}

}  // namespace attention_lab::pickle

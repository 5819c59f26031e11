// The pickle interpreter's machine (pickle_machine.cpp: the opcode loop and its stack; pickle_reader.cpp:
// the globals, persistent ids, tensors and the tree flattened into a StateDict).
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "pickle_reader.hpp"

namespace attention_lab::pickle {

enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Global, Storage, Tensor };

/// One value in the arena: scalars inline, containers as indices of other values (a dict: key, value, ...).
struct Obj {
  explicit Obj(Kind k = Kind::None) : kind(k) {}
  Kind kind;
  int64_t number = 0;           // Int, Bool; Storage and Tensor: their index
  double real = 0;              // Float
  std::string text;             // Str, Bytes; Global: "module.name"
  std::vector<uint32_t> items;  // List, Tuple, Dict
};

/// Thrown by a Machine reading a prefix of the file when the pickle runs past the bytes it was given.
struct CutOff {};

class Machine {
 public:
  /// `what` names the pickle in errors ("data.pkl"); with `prefix`, `bytes` may stop before the pickle's
  /// STOP (only the start of the file was read), and running past them throws CutOff instead of an error.
  Machine(const uint8_t* bytes, size_t length, const char* what = "data.pkl", bool prefix = false) : p_(bytes), n_(length), what_(what), prefix_(prefix) {}
  /// Runs the pickle to STOP and flattens the dict it made.
  StateDict run();
  /// Runs the pickle to STOP and gives the one value it made (its index: value() reads it).
  uint32_t run_value();
  const Obj& value(uint32_t i) const { return objs_[i]; }
  /// The byte after the pickle's STOP (once run): where the next pickle of a legacy file starts.
  size_t end() const { return at_; }
  /// The storages the persistent ids named so far (run_value leaves them here; run() moves them out).
  const std::vector<Storage>& storages() const { return out_.storages; }

 private:
  // the opcode loop (pickle_machine.cpp)
  bool step();
  bool step_containers(uint8_t op);
  bool step_scalars(uint8_t op);
  bool step_memo(uint8_t op);
  const uint8_t* take(uint64_t k);
  uint64_t le(int n);
  std::string line();
  uint32_t make(Obj o);
  void push(uint32_t i);
  uint32_t pop();
  uint32_t top() const;
  std::vector<uint32_t> pop_mark();
  void add_items(uint64_t count);
  void push_text(Kind kind, uint64_t length);
  const Obj& at(uint32_t i) const { return objs_[i]; }
  [[noreturn]] void bad(const std::string& what) const;
  [[noreturn]] void limit(const std::string& what) const;

  // what a state dict needs (pickle_reader.cpp)
  void global(const std::string& module, const std::string& name);
  void persistent_id();
  void reduce();
  void build();
  uint32_t rebuild_tensor(const Obj& args);
  std::vector<int64_t> whole_tuple(uint32_t i, const char* what);
  void flatten(uint32_t i, const std::string& prefix, int depth);

  const uint8_t* p_;
  size_t n_;
  const char* what_;
  bool prefix_;
  size_t at_ = 0;
  size_t op_at_ = 0;
  uint8_t op_ = 0;
  uint64_t items_ = 0;
  std::vector<Obj> objs_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> storage_by_key_;
  StateDict out_;
};

}  // namespace attention_lab::pickle

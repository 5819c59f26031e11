// The pickle opcode loop: protocol 2 (what torch.save writes) and the few later opcodes a newer pickler
// may use for the same values (FRAME, MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE, BINUNICODE8, BINBYTES8).
// Any other opcode is refused by name; the stack, the memo and the values made are bounded.
#include <cstring>
#include <set>

#include "pickle_machine.hpp"

namespace attention_lab::pickle {

namespace {
const char* kResave = "Save the weights again with torch.save(model.state_dict(), \"model.pth\"), or download the file again.";
}  // namespace

void Machine::bad(const std::string& what) const {
  char op[8];
  std::snprintf(op, sizeof op, "0x%02x", op_);
  throw AttentionError("checkpoint_pickle", what_, std::string(what_) + ", opcode " + std::string(op) + " at byte " + std::to_string(op_at_) + ": " + what, kResave);
}

void Machine::limit(const std::string& what) const {
  throw AttentionError("checkpoint_limit", what_,
                       std::string(what_) + " at byte " + std::to_string(op_at_) + ": " + what + "; this reader holds at most " + std::to_string(kMaxObjects) + " values",
                       "A state dict holds a few hundred tensors: save only the model's state_dict, not other data with it.");
}

const uint8_t* Machine::take(uint64_t k) {
  if (k > n_ - at_) {
    if (prefix_) throw CutOff{};
    bad("its argument runs past the end of " + std::string(what_) + " (cut off)");
  }
  const uint8_t* p = p_ + at_;
  at_ += static_cast<size_t>(k);
  return p;
}

uint64_t Machine::le(int n) {
  const uint8_t* p = take(static_cast<uint64_t>(n));
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string Machine::line() {
  const void* nl = std::memchr(p_ + at_, '\n', std::min<size_t>(n_ - at_, 1024));
  if (nl == nullptr && prefix_ && n_ - at_ < 1024) throw CutOff{};
  if (nl == nullptr) bad("a GLOBAL name without its newline within 1024 bytes");
  const size_t len = static_cast<size_t>(static_cast<const uint8_t*>(nl) - (p_ + at_));
  std::string s(reinterpret_cast<const char*>(take(len)), len);
  take(1);
  return s;
}

uint32_t Machine::make(Obj o) {
  if (objs_.size() >= kMaxObjects) limit("more values than " + std::to_string(kMaxObjects));
  objs_.push_back(std::move(o));
  return static_cast<uint32_t>(objs_.size() - 1);
}

void Machine::push(uint32_t i) {
  if (stack_.size() >= kMaxObjects) limit("a stack deeper than " + std::to_string(kMaxObjects));
  stack_.push_back(i);
}

uint32_t Machine::pop() {
  if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) bad("pops an empty stack");
  const uint32_t i = stack_.back();
  stack_.pop_back();
  return i;
}

uint32_t Machine::top() const {
  if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) bad("reads an empty stack");
  return stack_.back();
}

std::vector<uint32_t> Machine::pop_mark() {
  if (marks_.empty()) bad("no MARK to pop to");
  std::vector<uint32_t> out(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
  stack_.resize(marks_.back());
  marks_.pop_back();
  return out;
}

void Machine::add_items(uint64_t count) {
  items_ += count;
  if (items_ > kMaxObjects) limit("containers holding more than " + std::to_string(kMaxObjects) + " items");
}

void Machine::push_text(Kind kind, uint64_t length) {
  Obj o{kind};
  const uint8_t* p = take(length);
  o.text.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(length));
  push(make(std::move(o)));
}

bool Machine::step_scalars(uint8_t op) {
  Obj o;
  switch (op) {
    case 'N':
      o.kind = Kind::None;
      break;
    case 0x88:
    case 0x89:
      o.kind = Kind::Bool;
      o.number = op == 0x88;
      break;
    case 'J':
      o.kind = Kind::Int;
      o.number = static_cast<int32_t>(static_cast<uint32_t>(le(4)));
      break;
    case 'K':
      o.kind = Kind::Int;
      o.number = static_cast<int64_t>(le(1));
      break;
    case 'M':
      o.kind = Kind::Int;
      o.number = static_cast<int64_t>(le(2));
      break;
    case 0x8a: {  // LONG1: a little-endian two's complement of n bytes
      const uint64_t n = le(1);
      if (n > 8) bad("an integer of " + std::to_string(n) + " bytes (more than 64 bits)");
      uint64_t v = n == 0 ? 0 : le(static_cast<int>(n));
      if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t{0} << (8 * n);
      o.kind = Kind::Int;
      o.number = static_cast<int64_t>(v);
      break;
    }
    case 'G': {
      uint64_t bits = 0;
      const uint8_t* p = take(8);
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];  // big-endian
      o.kind = Kind::Float;
      std::memcpy(&o.real, &bits, 8);
      break;
    }
    case 'X':
      push_text(Kind::Str, le(4));
      return true;
    case 0x8c:
      push_text(Kind::Str, le(1));
      return true;
    case 0x8d:
      push_text(Kind::Str, le(8));
      return true;
    case 'T':
      push_text(Kind::Str, le(4));
      return true;
    case 'U':
      push_text(Kind::Str, le(1));
      return true;
    case 'B':
      push_text(Kind::Bytes, le(4));
      return true;
    case 'C':
      push_text(Kind::Bytes, le(1));
      return true;
    case 0x8e:
      push_text(Kind::Bytes, le(8));
      return true;
    default:
      return false;
  }
  push(make(std::move(o)));
  return true;
}

bool Machine::step_containers(uint8_t op) {
  switch (op) {
    case '}':
      push(make(Obj{Kind::Dict}));
      return true;
    case ']':
      push(make(Obj{Kind::List}));
      return true;
    case ')':
      push(make(Obj{Kind::Tuple}));
      return true;
    case '(':
      if (marks_.size() >= static_cast<size_t>(kMaxDepth) * 32) limit("more than " + std::to_string(kMaxDepth * 32) + " open MARKs");
      marks_.push_back(stack_.size());
      return true;
    case 't':
    case 'l':
    case 0x85:
    case 0x86:
    case 0x87: {
      Obj o{op == 'l' ? Kind::List : Kind::Tuple};
      if (op == 't' || op == 'l') {
        o.items = pop_mark();
      } else {
        o.items.resize(static_cast<size_t>(op - 0x84));
        for (size_t k = o.items.size(); k-- > 0;) o.items[k] = pop();
      }
      add_items(o.items.size());
      push(make(std::move(o)));
      return true;
    }
    case 'd':
    case 'u':
    case 's': {
      std::vector<uint32_t> kv;
      if (op == 's') {
        const uint32_t v = pop();
        kv = {pop(), v};
      } else {
        kv = pop_mark();
      }
      if (kv.size() % 2 != 0) bad("a dict given an odd number of keys and values");
      add_items(kv.size());
      if (op == 'd') {
        Obj o{Kind::Dict};
        o.items = std::move(kv);
        push(make(std::move(o)));
        return true;
      }
      Obj& d = objs_[top()];
      if (d.kind != Kind::Dict) bad("SETITEM(S) on something that is not a dict");
      d.items.insert(d.items.end(), kv.begin(), kv.end());
      return true;
    }
    case 'a':
    case 'e': {
      std::vector<uint32_t> values = op == 'a' ? std::vector<uint32_t>{pop()} : pop_mark();
      add_items(values.size());
      Obj& l = objs_[top()];
      if (l.kind != Kind::List) bad("APPEND(S) on something that is not a list");
      l.items.insert(l.items.end(), values.begin(), values.end());
      return true;
    }
    default:
      return false;
  }
}

bool Machine::step_memo(uint8_t op) {
  switch (op) {
    case 'q':
    case 'r':
    case 0x94: {
      const uint64_t key = op == 'q' ? le(1) : op == 'r' ? le(4) : memo_.size();
      if (memo_.size() >= kMaxObjects) limit("a memo of more than " + std::to_string(kMaxObjects) + " values");
      memo_[key] = top();
      return true;
    }
    case 'h':
    case 'j': {
      const uint64_t key = op == 'h' ? le(1) : le(4);
      const auto it = memo_.find(key);
      if (it == memo_.end()) bad("memo " + std::to_string(key) + " was never stored");
      push(it->second);
      return true;
    }
    case '0':
      pop();
      return true;
    case '1':
      pop_mark();
      return true;
    case '2':
      push(top());
      return true;
    default:
      return false;
  }
}

/// One opcode; false at STOP.
bool Machine::step() {
  op_at_ = at_;
  op_ = 0;
  op_ = *take(1);
  if (op_ == '.') return false;
  if (step_scalars(op_) || step_containers(op_) || step_memo(op_)) return true;
  switch (op_) {
    case 0x80: {
      const uint64_t proto = le(1);
      if (proto < 2 || proto > 5) bad("pickle protocol " + std::to_string(proto) + " (torch.save writes 2)");
      return true;
    }
    case 0x95:
      le(8);
      return true;  // FRAME: a length hint only
    case 'c': {
      const std::string module = line();
      global(module, line());
      return true;
    }
    case 0x93: {
      const Obj& name = at(pop());
      const Obj& module = at(pop());
      if (name.kind != Kind::Str || module.kind != Kind::Str) bad("STACK_GLOBAL of values that are not strings");
      global(std::string(module.text), std::string(name.text));
      return true;
    }
    case 'Q':
      persistent_id();
      return true;
    case 'R':
      reduce();
      return true;
    case 'b':
      build();
      return true;
    default:
      bad("an opcode a state dict never needs (objects are built only by the listed globals)");
  }
}

uint32_t Machine::run_value() {
  while (step()) {}
  const uint32_t root = pop();
  if (!stack_.empty() || !marks_.empty()) bad("STOP with values left on the stack");
  return root;
}

StateDict Machine::run() {
  const uint32_t root = run_value();
  if (at(root).kind != Kind::Dict)
    throw AttentionError("checkpoint_pickle", what_, std::string(what_) + " holds no dict of tensors (a state dict)",
                         "Save the model's weights with torch.save(model.state_dict(), \"model.pth\").");
  flatten(root, "", 0);
  std::set<std::string> keys;
  for (const auto& [key, t] : out_.tensors)
    if (!keys.insert(key).second) throw AttentionError("checkpoint_duplicate_key", key, "two tensors under the key '" + key + "'", kResave);
  keys.clear();
  for (const auto& [key, text] : out_.strings)
    if (!keys.insert(key).second) throw AttentionError("checkpoint_duplicate_key", key, "two strings under the key '" + key + "'", kResave);
  return std::move(out_);
}

}  // namespace attention_lab::pickle

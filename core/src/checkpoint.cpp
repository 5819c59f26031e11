#include "attention_lab/checkpoint.hpp"
#include "attention_lab/checkpoint_layout.hpp"
#include "attention_lab/gpt2_sizes.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

namespace {
std::string shape_text(const Shape& s) { return shape_string(s); }
}  // namespace

int64_t gpt2_preset_heads(int64_t width) {
  const Gpt2Size* size = gpt2_size_of_width(width);
  return size ? size->n_head : 0;
}

HeadCount gpt2_head_count(const SafetensorsHeader& header, int64_t d, std::optional<int64_t> option) {
  HeadCount h;
  if (option) {
    h.n_head = *option;
    h.source = "the num_heads option (" + std::to_string(h.n_head) + ")";
  } else if (const auto it = header.metadata.find("n_head"); it != header.metadata.end()) {
    const std::string& text = it->second;
    const bool digits = !text.empty() && text.size() <= 9 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      throw AttentionError("checkpoint_num_heads", "num_heads", "the file's __metadata__ n_head is \"" + text.substr(0, 40) + "\", not a whole number",
                           "Give num_heads: a whole number that divides n_embd " + std::to_string(d) + ".");
    }
    h.n_head = std::stoll(text);
    h.source = "the file's __metadata__ n_head (" + text + ")";
  } else if (const int64_t preset = gpt2_preset_heads(d); preset > 0) {
    h.n_head = preset;
    h.source = "the GPT-2 preset for width " + std::to_string(d) + " (n_head = " + std::to_string(preset) + "; this file's __metadata__ has no n_head)";
  } else {
    std::string widths;
    const size_t n = std::size(kGpt2Sizes);
    for (size_t i = 0; i < n; ++i) widths += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::to_string(kGpt2Sizes[i].n_embd);
    throw AttentionError("checkpoint_num_heads", "num_heads",
                         "the head count of width " + std::to_string(d) + " is not GPT-2's (" + widths + ") and the file does not say it (no __metadata__ n_head)",
                         "Give num_heads: a whole number that divides " + std::to_string(d) + " (GPT-2's heads are 64 wide: 768 has 12).");
  }
  if (h.n_head < 1 || d % h.n_head != 0) {
    throw AttentionError("checkpoint_num_heads", "num_heads",
                         (option ? "num_heads " : "the file's __metadata__ n_head ") + std::to_string(h.n_head) + " does not divide n_embd " + std::to_string(d),
                         "Give a head count that divides " + std::to_string(d) + (gpt2_preset_heads(d) ? " (GPT-2 uses " + std::to_string(gpt2_preset_heads(d)) + ")" : "") + ".");
  }
  return h;
}

void require_gpt2_dtype(const SafetensorsEntry& e) {
  if (e.dtype != "F32" && e.dtype != "F16" && e.dtype != "BF16")
    throw AttentionError("checkpoint_dtype", "", e.key + " is " + e.dtype + "; GPT-2 files here are F32, F16 or BF16",
                         "Save the checkpoint in float32, float16 or bfloat16 (model.half() or model.to(torch.bfloat16) before saving).");
}

namespace {
float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3FFu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

namespace {
/// The bytes of a strided entry's values gathered in row-major order (each value's `item` bytes).
std::vector<uint8_t> gather(const SafetensorsEntry& e, const uint8_t* bytes, size_t length, size_t item) {
  const size_t n = static_cast<size_t>(numel_of(e.shape)), axes = e.shape.size();
  std::vector<uint8_t> out(n * item);
  std::vector<int64_t> index(axes, 0);
  uint64_t offset = 0;  // in values, from the entry's first
  for (size_t i = 0; i < n; ++i) {
    if ((offset + 1) * item > length)
      throw AttentionError("checkpoint_bad_offsets", e.key, e.key + ": its strides reach past its " + std::to_string(length) + " bytes",
                           "The file is damaged: download it or save it again.");
    std::memcpy(out.data() + i * item, bytes + offset * item, item);
    for (size_t k = axes; k-- > 0;) {  // the next index, last axis fastest
      offset += static_cast<uint64_t>(e.strides[k]);
      if (++index[k] < e.shape[k]) break;
      offset -= static_cast<uint64_t>(e.strides[k] * e.shape[k]);
      index[k] = 0;
    }
  }
  return out;
}
}  // namespace

std::vector<float> decode_tensor(const SafetensorsEntry& entry, const uint8_t* bytes, size_t length) {
  const uint64_t expected = entry.end - entry.begin;
  if (length != expected) {
    throw AttentionError("checkpoint_truncated", "", "read " + std::to_string(length) + " bytes of " + entry.key + ", expected " + std::to_string(expected),
                         "The file is cut off; download it again.");
  }
  if (!entry.strides.empty()) {
    // a non-contiguous torch.save tensor: its values gathered into row-major order, then decoded as one
    const size_t item = safetensors_dtype_size(entry.dtype);
    if (item == 0 || entry.strides.size() != entry.shape.size())
      throw AttentionError("checkpoint_dtype", "", entry.key + " is " + entry.dtype + "; weights must be floating point (F32, F16, BF16, F64)", "");
    const std::vector<uint8_t> values = gather(entry, bytes, length, item);
    SafetensorsEntry row_major = entry;
    row_major.strides.clear();
    row_major.end = row_major.begin + values.size();
    return decode_tensor(row_major, values.data(), values.size());
  }
  const size_t n = static_cast<size_t>(numel_of(entry.shape));
  if (safetensors_dtype_size(entry.dtype) != 0 && static_cast<double>(n) * static_cast<double>(safetensors_dtype_size(entry.dtype)) != static_cast<double>(length)) {
    // Only an entry not made by parse_safetensors_header can get here; never read past `bytes`.
    throw AttentionError("checkpoint_bad_offsets", "", entry.key + ": " + std::to_string(length) + " bytes do not hold " + entry.dtype + " " + shape_text(entry.shape),
                         "The header lies about where the tensors are: the file is damaged.");
  }
  if (entry.dtype == "F32" && reinterpret_cast<uintptr_t>(bytes) % alignof(float) == 0) {
    // little-endian, as x86 and WebAssembly; copied once (no zero-fill first: a GPT-2 file is 0.5 GB)
    const float* values = reinterpret_cast<const float*>(bytes);
    return std::vector<float>(values, values + n);
  }
  std::vector<float> out(n);
  if (entry.dtype == "F32") {
    std::memcpy(out.data(), bytes, n * 4);
  } else if (entry.dtype == "F16") {
    for (size_t i = 0; i < n; ++i) out[i] = half_to_float(static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
  } else if (entry.dtype == "BF16") {
    for (size_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)) << 16;
      std::memcpy(&out[i], &bits, 4);
    }
  } else if (entry.dtype == "F64") {
    for (size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, bytes + 8 * i, 8);
      out[i] = static_cast<float>(v);
    }
  } else {
    throw AttentionError("checkpoint_dtype", "", entry.key + " is " + entry.dtype + "; weights must be floating point (F32, F16, BF16, F64)", "");
  }
  return out;
}

std::vector<float> decode_weight(const SafetensorsEntry& entry, const std::string& name, const uint8_t* bytes, size_t length) {
  std::vector<float> v = decode_tensor(entry, bytes, length);
  if (const std::string where = first_non_finite(v.data(), v.size(), entry.shape); !where.empty()) {
    throw AttentionError("non_finite_parameter", "", "the file's " + name + where + " (" + entry.dtype + ")",
                         entry.dtype == "F16" ? "float16 tops out at 65504: a larger value became inf when the file was saved. Save the checkpoint in float32 or bfloat16."
                                              : "The file holds a NaN or infinity in a weight; it cannot be used as it is.");
  }
  return v;
}

void check_gpt2_stage(const float* values, size_t n, int64_t width, int64_t block, const std::string& stage, const std::string& formula) {
  if (first_non_finite(values, n, Shape{static_cast<int64_t>(n)}).empty()) return;
  size_t i = 0;
  while (std::isfinite(values[i])) ++i;
  const int64_t w = std::max<int64_t>(width, 1), row = static_cast<int64_t>(i) / w, col = static_cast<int64_t>(i) % w;
  const std::string where = block >= 0 ? "block " + std::to_string(block) + " (h." + std::to_string(block) + "): " : "";
  throw AttentionError("non_finite_stage", stage,
                       where + stage + " = " + formula + " is the first stage to turn non-finite although every weight is finite: " +
                           (std::isnan(values[i]) ? "nan"
                            : values[i] > 0       ? "inf"
                                                  : "-inf") +
                           " at " + (stage == "logits" ? "token id " : "token ") + std::to_string(row) + (stage == "logits" ? "" : ", column " + std::to_string(col)),
                       "Finite weights overflowed float32 (about 3.4e38) on the way: the file's values are too large for a real GPT-2; scale them down.");
}

AttentionModule load_gpt2_attention(const CheckpointPlan& plan, const std::map<std::string, std::vector<uint8_t>>& bytes) {
  AttentionModule m(plan.config);
  for (size_t i = 0; i < plan.needed.size(); ++i) {
    const SafetensorsEntry& e = plan.needed[i];
    const auto it = bytes.find(e.key);
    if (it == bytes.end()) throw AttentionError("checkpoint_missing_key", "", "the bytes of " + e.key + " were not given", "");
    layout_weights(*plan.needed_rows.at(i), decode_weight(e, e.key, it->second.data(), it->second.size()), e.shape, [&](NamedTensor t) {
      const std::string name = t.name.substr(4);  // "att.W_query.weight" -> the module's "W_query.weight"
      if (plan.config.qkv_bias || name.size() <= 5 || name.compare(name.size() - 5, 5, ".bias") != 0 || name == "out_proj.bias") m.set_parameter(name, t.tensor);
    });
  }
  return m;
}

SafetensorsEntry rows_of(const SafetensorsEntry& e, int64_t first, int64_t last) {
  SafetensorsEntry out = e;
  if (!e.strides.empty()) {
    // strided: from the first value of row `first` to the last value of row last - 1
    const uint64_t item = safetensors_dtype_size(e.dtype);
    out.shape[0] = last - first;
    out.begin = e.begin + static_cast<uint64_t>(first * e.strides[0]) * item;
    uint64_t reach = 0;
    for (size_t k = 0; k < out.shape.size(); ++k) reach += static_cast<uint64_t>(std::max<int64_t>(out.shape[k] - 1, 0) * e.strides[k]);
    out.end = numel_of(out.shape) == 0 ? out.begin : out.begin + (reach + 1) * item;
    return out;
  }
  const uint64_t row_bytes = (e.end - e.begin) / static_cast<uint64_t>(std::max<int64_t>(e.shape[0], 1));
  out.begin = e.begin + static_cast<uint64_t>(first) * row_bytes;
  out.end = e.begin + static_cast<uint64_t>(last) * row_bytes;
  out.shape[0] = last - first;
  return out;
}

}  // namespace attention_lab

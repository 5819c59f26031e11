// GPT-2's block layout for the native tests that build files: the 12 tensors after "h.{L}." in Hugging
// Face's order, with their shapes for width d (Conv1D weights are (in, out)).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attention_lab/tensor.hpp"

inline std::vector<std::pair<std::string, attention_lab::Shape>> gpt2_block_shapes(int64_t d) {
  return {{"ln_1.weight", {d}}, {"ln_1.bias", {d}}, {"attn.c_attn.weight", {d, 3 * d}}, {"attn.c_attn.bias", {3 * d}}, {"attn.c_proj.weight", {d, d}},    {"attn.c_proj.bias", {d}},
          {"ln_2.weight", {d}}, {"ln_2.bias", {d}}, {"mlp.c_fc.weight", {d, 4 * d}},    {"mlp.c_fc.bias", {4 * d}},    {"mlp.c_proj.weight", {4 * d, d}}, {"mlp.c_proj.bias", {d}}};
}

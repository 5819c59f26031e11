// A check file (tests/fixtures/check_files, saved with torch.save exactly as the page's snippet does by
// tests/fixtures/generate_check_fixtures.py): its call read from the pickle's string leaves, its keys
// planned into check_module's arguments, and the files without a key refused with check_file.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/check_file.hpp"
#include "attention_lab/validator.hpp"
#include "refusal.hpp"
#include "test_paths.hpp"

using namespace attention_lab;

namespace {

std::vector<uint8_t> check_file_bytes(const std::string& name) {
  std::ifstream in(std::string(test_paths::fixtures) + "/check_files/" + name, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), name);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

SafetensorsHeader open_check_file(const std::vector<uint8_t>& file) {
  std::map<std::string, std::vector<uint8_t>> read;
  for (std::vector<TorchSaveRead> next; !(next = torch_save_reads(read, file.size())).empty();)
    for (const TorchSaveRead& r : next) read[r.name].assign(file.begin() + static_cast<std::ptrdiff_t>(r.begin), file.begin() + static_cast<std::ptrdiff_t>(r.end));
  return open_torch_save(read, file.size());
}

}  // namespace

TEST_SUITE("check files") {
  TEST_CASE("the snippet's file gives its call, x, output, state dict and stages; the check agrees, and scale_d_out explains its file") {
    for (const char* name : {"mha_correct.pt", "mha_scale_d_out.pt"}) {
      const std::vector<uint8_t> file = check_file_bytes(name);
      const SafetensorsHeader h = open_check_file(file);
      const CheckFilePlan plan = plan_check_file(h);
      CHECK(plan.call == "MultiHeadAttention(4, 4, 6, 0.0, 2, qkv_bias=False)");
      CHECK(plan.x.shape == Shape{2, 5, 4});
      CHECK(plan.output.shape == Shape{2, 5, 4});
      CHECK(plan.state_dict.size() == 6);  // W_query, W_key, W_value, out_proj weight and bias, mask
      CHECK(plan.stages.size() == 3);
      std::map<std::string, std::vector<uint8_t>> bytes;
      for (const SafetensorsEntry& e : plan.reads()) bytes[e.key].assign(file.begin() + static_cast<std::ptrdiff_t>(e.begin), file.begin() + static_cast<std::ptrdiff_t>(e.end));
      const ParsedCall parsed = parse_call(plan.call);
      const ModuleConfig config = validated_config(parsed.class_name, parsed.config);
      check_file_fits(plan, config, kDefaultMemoryBudgetBytes);
      const CheckFileTensors t = read_check_file(plan, bytes);
      const CheckReport r = check_module(config, t.state_dict, t.x, t.output, t.stages);
      const bool correct = std::string(name) == "mha_correct.pt";
      CHECK(r.agree == correct);
      CHECK(r.first_stage == (correct ? std::nullopt : std::optional<std::string>("attn_weights")));
      for (const CheckCause& c : r.causes) CHECK_MESSAGE(c.explains == (!correct && c.id == "scale_d_out"), c.id);
    }
  }

  TEST_CASE("a file's \"seed\" is the top-level int the reader saved: the check runs in training mode from it") {
    const std::vector<uint8_t> file = check_file_bytes("mha_dropout_missing_seed.pt");
    const SafetensorsHeader h = open_check_file(file);
    CHECK(h.numbers == std::map<std::string, double>{{"seed", 123.0}});  // the top-level dict's numbers only
    const CheckFilePlan plan = plan_check_file(h);
    CHECK(plan.call == "MultiHeadAttention(4, 4, 6, 0.1, 2, qkv_bias=False)");
    REQUIRE(plan.seed.has_value());
    CHECK(*plan.seed == 123.0);
    std::map<std::string, std::vector<uint8_t>> bytes;
    for (const SafetensorsEntry& e : plan.reads()) bytes[e.key].assign(file.begin() + static_cast<std::ptrdiff_t>(e.begin), file.begin() + static_cast<std::ptrdiff_t>(e.end));
    const ParsedCall parsed = parse_call(plan.call);
    const CheckFileTensors t = read_check_file(plan, bytes);
    const CheckReport r = check_module(validated_config(parsed.class_name, parsed.config), t.state_dict, t.x, t.output, t.stages, kDefaultMemoryBudgetBytes, nullptr, 123);
    CHECK_FALSE(r.agree);
    CHECK(r.first_stage == std::optional<std::string>("attn_weights"));
    for (const CheckCause& c : r.causes) CHECK_MESSAGE(c.explains == (c.id == "dropout_missing"), c.id);
    CHECK_FALSE(plan_check_file(open_check_file(check_file_bytes("mha_correct.pt"))).seed.has_value());  // no seed: eval mode
  }

  TEST_CASE("a seed saved as a string or a tensor is refused with check_file naming \"seed\"") {
    const Refused text = refused([] { plan_check_file(open_check_file(check_file_bytes("mha_seed_text.pt"))); });
    CHECK(text.code == "check_file");
    CHECK(text.slot == "seed");
    CHECK(text.message == "the check file's \"seed\" is a string, not an int");
    CHECK(text.hint.find(R"("seed": 123 (an int)") != std::string::npos);
    SafetensorsHeader h = open_check_file(check_file_bytes("mha_correct.pt"));
    SafetensorsEntry seed = h.entries.front();
    seed.key = "seed";
    h.entries.push_back(seed);
    std::sort(h.entries.begin(), h.entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.key < b.key; });
    const Refused tensor = refused([&] { plan_check_file(h); });
    CHECK(tensor.slot == "seed");
    CHECK(tensor.message == "the check file's \"seed\" is a tensor, not an int");
  }

  TEST_CASE("a file without output or call is refused with check_file naming the key; so is a safetensors header") {
    const Refused no_output = refused([] { plan_check_file(open_check_file(check_file_bytes("mha_no_output.pt"))); });
    CHECK(no_output.code == "check_file");
    CHECK(no_output.slot == "output");
    CHECK(no_output.hint.find(R"("output": context_vecs)") != std::string::npos);
    const Refused no_call = refused([] { plan_check_file(open_check_file(check_file_bytes("mha_no_call.pt"))); });
    CHECK(no_call.code == "check_file");
    CHECK(no_call.slot == "call");
    SafetensorsHeader st;
    CHECK(refused([&] { plan_check_file(st); }).slot == "file");
  }

  TEST_CASE("each key the check needs is named when missing, with the snippet's line that writes it") {
    SafetensorsHeader h;
    h.torch_save = true;
    auto entry = [](const std::string& key) {
      SafetensorsEntry e;
      e.key = key;
      e.dtype = "F32";
      e.shape = {1, 2, 4};
      e.end = 32;
      return e;
    };
    h.metadata["call"] = "MultiHeadAttention(4, 4, 6, 0.0, 2)";
    h.entries = {entry("output"), entry("state_dict.W_key.weight"), entry("x")};
    CHECK(plan_check_file(h).state_dict.size() == 1);
    const std::pair<const char*, const char*> lines[] = {{"x", R"("x": batch)"}, {"output", R"("output": context_vecs)"}, {"state_dict", R"("state_dict": mha.state_dict())"}};
    for (const auto& [key, line] : lines) {
      SafetensorsHeader without = h;
      without.entries.erase(std::find_if(without.entries.begin(), without.entries.end(), [&](const SafetensorsEntry& e) { return e.key.rfind(key, 0) == 0; }));
      const Refused r = refused([&] { plan_check_file(without); });
      CHECK(r.code == "check_file");
      CHECK(r.slot == key);
      CHECK_MESSAGE(r.hint.find(line) != std::string::npos, r.hint);
    }
    SafetensorsHeader tensor_call = h;
    tensor_call.metadata.clear();
    tensor_call.entries.insert(tensor_call.entries.begin(), entry("call"));
    const Refused r = refused([&] { plan_check_file(tensor_call); });
    CHECK(r.slot == "call");
    CHECK(r.message.find("is a tensor, not the constructor call as a string") != std::string::npos);
  }

  TEST_CASE("the memory estimate refuses a file before any tensor is read") {
    const CheckFilePlan plan = plan_check_file(open_check_file(check_file_bytes("mha_correct.pt")));
    const ParsedCall parsed = parse_call(plan.call);
    const Refused r = refused([&] { check_file_fits(plan, validated_config(parsed.class_name, parsed.config), 1000); });
    CHECK(r.code == "too_large");
    CHECK(r.message.find("over the") != std::string::npos);
  }
}

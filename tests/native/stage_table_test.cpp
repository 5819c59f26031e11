// The one stage table (core/src/stage_table.cpp): what a traced forward of every class emits is what
// the table says, stage by stage (present, in order, of the size it counts, with a display kind), so
// the memory estimates that sum over it count every stage a forward makes.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/stage_table.hpp"
#include "attention_lab/validator.hpp"

using namespace attention_lab;

namespace {

/// Every class at a small size with every slot it has (dropout 0.25, two heads, one key/value group).
SlotMap small_slots(const ClassSpec& spec, int64_t d, int64_t context_length) {
  SlotMap slots;
  for (const SlotSpec& s : spec.slots) {
    if (s.name == "d_in" || s.name == "d_out") slots[s.name] = SlotValue::integer(static_cast<double>(d));
    if (s.name == "context_length") slots[s.name] = SlotValue::integer(static_cast<double>(context_length));
    if (s.name == "dropout") slots[s.name] = SlotValue::floating(0.25);
    if (s.name == "num_heads") slots[s.name] = SlotValue::integer(spec.rope_theta > 0 ? 3 : 2);  // RoPE: an even head_dim (6 / 3)
    if (s.name == "num_kv_groups") slots[s.name] = SlotValue::integer(1);
    if (s.name == "qkv_bias") slots[s.name] = SlotValue::boolean_value(true);
    if (s.name == "latent_dim") slots[s.name] = SlotValue::integer(3);
  }
  return slots;
}

std::vector<std::string> present_ids(const ForwardPlan& p, bool cached) {
  std::vector<std::string> ids;
  for (int id = 0; id <= static_cast<int>(StageId::Output); ++id)
    if (stage_present(p, static_cast<StageId>(id), cached)) ids.push_back(stage_id_name(static_cast<StageId>(id)));
  return ids;
}

StageId id_of(const std::string& name) {
  for (int id = 0; id <= static_cast<int>(StageId::Output); ++id)
    if (name == stage_id_name(static_cast<StageId>(id))) return static_cast<StageId>(id);
  FAIL("no stage id " << name);
  return StageId::Output;
}

}  // namespace

TEST_SUITE("stage table") {
  TEST_CASE("each stage id has its own name and a display kind; unknown names have none") {
    std::vector<std::string> names;
    for (int id = 0; id <= static_cast<int>(StageId::Output); ++id) {
      const std::string name = stage_id_name(static_cast<StageId>(id));
      CHECK(!name.empty());
      CHECK(std::count(names.begin(), names.end(), name) == 0);
      names.push_back(name);
    }
    CHECK(names.front() == "input");
    CHECK(names.back() == "output");
    CHECK(std::string(stage_display("attn_weights")) == "weights");
    CHECK(std::string(stage_display("attn_weights_dropout")) == "weights");
    CHECK(std::string(stage_display("attn_scores_masked")) == "scores");
    CHECK(std::string(stage_display("mask")) == "mask");
    CHECK(std::string(stage_display("queries")) == "vectors");
    CHECK(std::string(stage_display("dropout_kept")).empty());  // the page's own stage, not the core's
  }

  TEST_CASE("a traced forward of every class emits the table's stages for its plan, each of the size the table counts") {
    for (const ClassSpec& spec : class_specs()) {
      const int64_t T = 5, b = 2, d = 6;
      const ModuleConfig c = validated_config(spec.name, small_slots(spec, d, T + 3));
      const Shape shape = c.batched() ? Shape{b, T, d} : Shape{T, d};
      TorchGenerator g(7);
      const AttentionModule m(c, g);
      const ForwardPlan& p = m.plan();
      std::vector<Stage> trace;
      ForwardOptions o;
      o.generator = &g;
      o.trace = &trace;
      (void)m.forward(Tensor(shape, std::vector<float>(static_cast<size_t>(numel_of(shape)), 0.5f)), o);
      INFO(c.python_call());
      std::vector<std::string> got;
      double floats = 0.0;
      const StageSizes sizes = stage_sizes(p, shape);
      for (const Stage& st : trace) {
        got.push_back(st.id);
        CHECK_MESSAGE(static_cast<double>(numel_of(st.shape())) == stage_floats(p, id_of(st.id), sizes), st.id);
        CHECK_MESSAGE(std::string(stage_display(st.id)) != "", st.id);
        floats += static_cast<double>(numel_of(st.shape()));
      }
      CHECK(got == present_ids(p, false));
      CHECK(static_cast<int>(trace.size()) == stage_count(p, false));
      CHECK(sum_stage_floats(p, sizes, StageCount::Tensor) == floats);
      // the estimate's trace-only copies: every (b, num_heads, T, keys) stage and the mask the plan has, the input's copy and the output's two
      double copies = static_cast<double>(numel_of(shape)) + 2.0 * stage_floats(p, StageId::Output, sizes);
      for (const Stage& st : trace)
        if (st.id.rfind("attn_", 0) == 0 || st.id == "mask") copies += static_cast<double>(numel_of(st.shape()));
      CHECK(sum_stage_floats(p, sizes, StageCount::TraceCopies) == copies);
    }
  }

  TEST_CASE("a cached forward emits its cache stages too: stage_count(plan, true)") {
    for (const char* cls : {"MultiHeadAttention", "MultiHeadLatentAttention"}) {
      const ClassSpec* spec = nullptr;
      for (const ClassSpec& s : class_specs())
        if (s.name == cls) spec = &s;
      REQUIRE(spec != nullptr);
      const ModuleConfig c = validated_config(cls, small_slots(*spec, 6, 16));
      TorchGenerator g(7);
      const AttentionModule m(c, g);
      KvCache cache;
      std::vector<Stage> trace;
      ForwardOptions o;
      o.generator = &g;
      o.cache = &cache;
      o.trace = &trace;
      (void)m.forward(Tensor({1, 3, 6}, std::vector<float>(18, 0.5f)), o);
      trace.clear();
      (void)m.forward(Tensor({1, 2, 6}, std::vector<float>(12, 0.25f)), o);
      std::vector<std::string> got;
      for (const Stage& st : trace) got.push_back(st.id);
      CHECK_MESSAGE(got == present_ids(m.plan(), true), cls);
      CHECK(static_cast<int>(trace.size()) == stage_count(m.plan(), true));
      CHECK(stage_count(m.plan(), true) == stage_count(m.plan(), false) + (std::string(cls) == "MultiHeadLatentAttention" ? 1 : 2));
    }
  }
}

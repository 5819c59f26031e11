// The core's boundary (session.hpp): the rules a call across a language boundary applies to plain
// values, the objects kept under handles, and their lifetimes. The WASM bindings only declare these.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "attention_lab/ops.hpp"
#include "attention_lab/session.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {
SlotMap book_mha() {
  return {{"d_in", SlotValue::integer(3)},
          {"d_out", SlotValue::integer(2)},
          {"context_length", SlotValue::integer(6)},
          {"dropout", SlotValue::floating(0.0)},
          {"num_heads", SlotValue::integer(2)}};
}
TensorInput book_input() {
  const Tensor x = book_tokens();
  return {{1, 6, 3}, x.data};
}
}  // namespace

TEST_CASE("tensor_from_input: sizes are whole numbers below 2**31, at most kMaxTensorAxes, and the data fits the shape") {
  const Tensor t = tensor_from_input({{2, 3}, std::vector<float>(6, 1.5f)}, "x");
  CHECK(t.shape == Shape{2, 3});
  CHECK(t.data[5] == 1.5f);
  CHECK(refusal([] { tensor_from_input({{2, NAN}, {}}, "x"); }) == std::pair<std::string, std::string>{"tensor_shape", "x"});
  CHECK(refusal([] { tensor_from_input({{2.5}, {1, 2}}, "x"); }).first == "tensor_shape");
  CHECK(refusal([] { tensor_from_input({{-1}, {}}, "x"); }).first == "tensor_shape");
  CHECK(refusal([] { tensor_from_input({{2147483648.0}, {}}, "x"); }).first == "tensor_shape");
  CHECK(refusal([] { tensor_from_input({std::vector<double>(kMaxTensorAxes + 1, 1.0), {1}}, "x"); }).first == "tensor_shape");
  CHECK(refusal([] { tensor_from_input({std::vector<double>(kMaxTensorAxes, 1.0), {1}}, "x"); }).first == "");
  CHECK(refusal([] { tensor_from_input({{2, 3}, std::vector<float>(5)}, "W_query.weight"); }) == std::pair<std::string, std::string>{"tensor_size", "W_query.weight"});
  // a product past 64 bits is a size mismatch, not a wrapped count
  CHECK(refusal([] { tensor_from_input({{2147483647.0, 2147483647.0, 2147483647.0}, {}}, "x"); }).first == "tensor_size");
}

TEST_CASE("slot values given as values: whole finite numbers are ints, others floats; text reads as a Python literal") {
  CHECK(slot_value_of_number(768).kind == SlotValue::Kind::Int);
  CHECK(slot_value_of_number(0.1).kind == SlotValue::Kind::Float);
  CHECK(slot_value_of_number(NAN).kind == SlotValue::Kind::Float);
  CHECK(slot_value_of_number(INFINITY).kind == SlotValue::Kind::Float);
  CHECK(slot_value_of_text("768").kind == SlotValue::Kind::Int);
  CHECK(slot_value_of_text("768.0").kind == SlotValue::Kind::Float);
  CHECK(slot_value_of_text("True").kind == SlotValue::Kind::Bool);
  CHECK(slot_value_of_text("None").kind == SlotValue::Kind::None);
}

TEST_CASE("a session keeps modules, generators and files under handles until released; a released handle is disposed") {
  Session s;
  CHECK(s.handles_in_use() == 0);
  const uint32_t g = s.manual_seed(123);
  const ModuleInfo m = s.create("MultiHeadAttention", book_mha(), g);
  CHECK(m.handle != g);
  CHECK(m.parameter_count == 24);
  CHECK(m.config.output_width() == 2);
  CHECK(s.handles_in_use() == 2);
  const ForwardResult r = s.forward(m.handle, book_input(), false, 0, true, 0);
  CHECK(r.output.shape == Shape{1, 6, 2});
  REQUIRE(r.trace.has_value());
  CHECK(r.trace->front().id == "input");
  CHECK_FALSE(s.forward(m.handle, book_input(), false, 0, false, 0).trace.has_value());
  // the same bits as a module built and run directly
  TorchGenerator direct(123);
  const AttentionModule same(validated_config("MultiHeadAttention", book_mha()), direct);
  ForwardOptions eval;
  eval.training = false;
  CHECK(same.forward(tensor_from_input(book_input(), "x"), eval).data == r.output.data);
  s.release(m.handle);
  s.release(m.handle);  // twice is fine
  CHECK(s.handles_in_use() == 1);
  CHECK(refusal([&] { s.forward(m.handle, book_input(), false, 0, false, 0); }) == std::pair<std::string, std::string>{"disposed", "module"});
  s.release(g);
  CHECK(refusal([&] { s.rand(g, {2}); }) == std::pair<std::string, std::string>{"disposed", "generator"});
  CHECK(refusal([&] { s.plan_block_input(999, {1}, {}); }) == std::pair<std::string, std::string>{"disposed", "checkpoint"});
  CHECK(refusal([&] { s.gpt2_estimate(999, 4, "full"); }) == std::pair<std::string, std::string>{"disposed", "model"});
  CHECK(s.handles_in_use() == 0);
}

TEST_CASE("a forward's dropout draws are kept when it succeeds; a refused forward leaves its generator as it was") {
  Session s;
  SlotMap config = book_mha();
  config["dropout"] = SlotValue::floating(0.5);
  const ModuleInfo m = s.create("MultiHeadAttention", config, s.manual_seed(123));
  const uint32_t g = s.manual_seed(7);
  const ForwardResult r = s.forward(m.handle, book_input(), true, g, false, 0);
  // the same draws as the module run directly on manual_seed(7): the generator moved past them
  TorchGenerator direct(123);
  const AttentionModule same(validated_config("MultiHeadAttention", config), direct);
  TorchGenerator draws(7);
  ForwardOptions train;
  train.generator = &draws;
  CHECK(same.forward(tensor_from_input(book_input(), "x"), train).data == r.output.data);
  CHECK(s.generator_state(g) == draws.state());
  CHECK(s.generator_state(g) != TorchGenerator(7).state());
  // refused (x 4 wide, d_in 3): nothing drawn, so the next forward draws what this one would have
  CHECK(refusal([&] { s.forward(m.handle, {{1, 6, 4}, std::vector<float>(24, 0.5f)}, true, g, false, 0); }).first == "input_width");
  CHECK(s.generator_state(g) == draws.state());
}

TEST_CASE("seeds, rand sizes and token counts are refused by name before anything is made") {
  Session s;
  CHECK(refusal([&] { s.manual_seed(1.5); }).first == "seed");
  CHECK(refusal([&] { s.manual_seed(18446744073709551616.0); }).first == "seed");
  CHECK(s.seed_range() == std::vector<double>{-9007199254740991.0, 9007199254740991.0});  // -(2**53 - 1), 2**53 - 1
  CHECK(refusal([&] { s.manual_seed(9007199254740992.0); }).first == "seed");             // 2**53 + 1 would read as 2**53
  CHECK(refusal([&] { s.manual_seed(-9007199254740992.0); }).first == "seed");
  CHECK(s.generator_state(s.manual_seed(9007199254740991.0)) == TorchGenerator(9007199254740991).state());
  const uint32_t wrapped = s.manual_seed(-1);  // -1 wraps to 2**64 - 1, as torch.manual_seed(-1)
  CHECK(s.generator_state(wrapped) == TorchGenerator(~uint64_t{0}).state());
  CHECK(refusal([&] { s.rand(wrapped, {65536, 65536}); }).first == "too_large");
  CHECK(s.rand(wrapped, {2, 3}).shape == Shape{2, 3});
  CHECK(refusal([&] { s.seeded_tokens(0, 3, 1); }) == std::pair<std::string, std::string>{"tensor_shape", "num_tokens"});
  CHECK(refusal([&] { s.seeded_tokens(6, 0, 1); }) == std::pair<std::string, std::string>{"tensor_shape", "d_in"});
  CHECK(refusal([&] { s.seeded_tokens(65536, 65536, 1); }) == std::pair<std::string, std::string>{"too_large", "d_in"});
  CHECK(refusal([&] { s.sentence_tokens({}, 3, 1); }) == std::pair<std::string, std::string>{"tensor_shape", "words"});
  CHECK(refusal([&] { s.sentence_tokens({"Your"}, 1.5, 1); }) == std::pair<std::string, std::string>{"tensor_shape", "d_in"});  // once truncated to 1
  CHECK(s.sentence_tokens({"Your", "journey"}, 4, 123).shape == Shape{2, 4});
}

TEST_CASE("copy_weights through the session is all or nothing: a bad plan entry leaves the target as it was") {
  Session s;
  const SlotMap v = {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}};
  const ModuleInfo v2 = s.create("SelfAttention_v2", v, s.manual_seed(123));
  const ModuleInfo v1 = s.create("SelfAttention_v1", v, s.manual_seed(7));
  const std::vector<NamedTensor> before = s.parameters(v1.handle);
  CHECK(refusal([&] {
          s.copy_weights(v2.handle, v1.handle, {{"W_query", true, true, true}, {"W_key", false, false, false}}, std::nullopt);
        }) == std::pair<std::string, std::string>{"copy_plan", "W_key"});
  const std::vector<NamedTensor> after = s.parameters(v1.handle);
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) CHECK(after[i].tensor.data == before[i].tensor.data);
  const CopyReport r = s.copy_weights(v2.handle, v1.handle, {{"W_query", true, true, true}, {"W_key", true, true, true}, {"W_value", true, true, true}}, std::nullopt);
  CHECK(r.agree);
}

TEST_CASE("whole-number options: absent is none; a string, 2.5 or a number below the lowest is the option's code naming it") {
  Session s;
  const std::string header = R"({"wte.weight":{"dtype":"F32","shape":[4,2],"data_offsets":[0,32]}})";
  const OpenedFile f = s.checkpoint_open(std::vector<uint8_t>(header.begin(), header.end()), 8.0 + header.size() + 32);
  CHECK(f.keys == 1);
  CHECK(f.data_start == 8.0 + header.size());
  CHECK(refusal([&] { s.plan_block_input(f.handle, {1}, NumberOption::text()); }) == std::pair<std::string, std::string>{"checkpoint_layer", "layer"});
  CHECK(refusal([&] { s.plan_block_input(f.handle, {1}, NumberOption::of(2.5)); }).first == "checkpoint_layer");
  CHECK(refusal([&] { s.plan_block_input(f.handle, {1}, NumberOption::of(-1)); }).first == "checkpoint_layer");
  CHECK(refusal([&] { s.gpt2_open(f.handle, NumberOption::of(0)); }) == std::pair<std::string, std::string>{"checkpoint_num_heads", "num_heads"});
}

TEST_CASE("token ids that are no ids each say what they are, by position (not 'token id -1 is outside the vocabulary')") {
  Session s;
  const std::string header = R"({"wte.weight":{"dtype":"F32","shape":[4,2],"data_offsets":[0,32]}})";
  const OpenedFile f = s.checkpoint_open(std::vector<uint8_t>(header.begin(), header.end()), 8.0 + header.size() + 32);
  const auto ids = [&](std::vector<double> v) { return [&s, &f, v] { s.plan_block_input(f.handle, v, {}); }; };
  CHECK(refusal(ids({1, 1.5})) == std::pair<std::string, std::string>{"checkpoint_token", "tokens"});
  CHECK(refused(ids({1, 1.5})).message == "token 1 is 1.5, not a whole number");
  CHECK(refused(ids({NAN})).message == "token 0 is NaN, not a number");
  CHECK(refused(ids({2, 3, INFINITY})).message == "token 2 is Infinity, far outside any vocabulary");
  CHECK(refusal(ids(std::vector<double>(100001, 1.0))) == std::pair<std::string, std::string>{"too_large", "tokens"});
  CHECK(refused(ids(std::vector<double>(100001, 1.0))).message == "more than 100,000 token ids");
}

TEST_CASE("a size that is only too large says so, not 'is not a size'; a shape alone is not called shape.shape") {
  CHECK(refused([] { tensor_from_input({{2, 3000000000.0}, {}}, "x"); }).message == "x.shape[1] is 3000000000, over the largest size here, 2,147,483,647 (2**31 - 1)");
  CHECK(refused([] { tensor_from_input({{-1}, {}}, "x"); }).message == "x.shape[0] is -1, below 0");
  CHECK(refused([] { tensor_from_input({{2.5}, {}}, "x"); }).message == "x.shape[0] is 2.5, not a whole number");
  Session s;
  const uint32_t g = s.manual_seed(1);
  CHECK(refused([&] { s.rand(g, {2, 1e10}); }).message == "shape[1] is 10000000000, over the largest size here, 2,147,483,647 (2**31 - 1)");
}

TEST_CASE("the session says which products this build runs: the native build multiplies then adds (no relaxed-SIMD multiply-add)") {
  const Session session;
  CHECK_FALSE(session.kernel_fuses_multiply_add());
  CHECK(session.kernel_fuses_multiply_add() == ops::kernel_fuses_multiply_add());
}

TEST_CASE("a resident trace gives each stage's facts at once and its values on request, equal to the eager trace's") {
  Session s;
  const auto two_items = [] {  // the book's tokens twice: (2, 6, 3)
    std::vector<float> v = book_tokens().data;
    v.insert(v.end(), v.begin(), v.end());
    return TensorInput{{2, 6, 3}, v};
  };
  const ResidentRun lazy = s.run_resident("MultiHeadAttention", book_mha(), two_items(), 123, false);
  RunResult eager = s.run_module("MultiHeadAttention", book_mha(), two_items(), 123, false, true);
  CHECK(lazy.output.data == eager.output.data);  // the same bits
  REQUIRE(lazy.trace.stages.size() == eager.trace.size());
  double bytes = 0;
  for (size_t i = 0; i < eager.trace.size(); ++i) {
    const Stage& e = eager.trace[i];
    const TraceStage& l = lazy.trace.stages[i];
    CHECK(l.id == e.id);
    CHECK(l.shape == e.tensor.shape);
    CHECK(l.summary.count == e.summary.count);
    CHECK(s.trace_data(lazy.trace.handle, e.id).data == e.tensor.data);
    CHECK(l.first == doctest::Approx(e.tensor.data[0]));
    // the masked scores and the eval dropout stage are views of the scores and the weights: no copy
    if (e.id != "attn_scores_masked" && e.id != "attn_weights_dropout") bytes += 4.0 * static_cast<double>(e.tensor.data.size());
  }
  CHECK(lazy.trace.bytes == bytes);
  CHECK(lazy.trace.bytes == doctest::Approx(s.trace_bytes_in_use()));
  const Stage& w = eager.trace[7];
  REQUIRE(w.id == "attn_weights");  // (2, 2, 6, 6)
  // a window of batch 1, head 0, rows 2..4, columns 0..2, and the sum of each whole row (1 after softmax)
  const TraceWindow win = s.trace_window(lazy.trace.handle, "attn_weights", {1, 0, 2, 0}, {1, 1, 3, 3});
  CHECK(win.window.shape == Shape{1, 1, 3, 3});
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 3; ++c) CHECK(win.window.data[static_cast<size_t>(r * 3 + c)] == w.tensor.data[static_cast<size_t>(72 + (2 + r) * 6 + c)]);
  REQUIRE(win.row_sums.size() == 3);
  for (const double sum : win.row_sums) CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  // a heatmap of (batch 0, head 1) at 3 x 2 cells: each the max of a 2 x 3 block; masked (0) cells upper right
  const TraceHeatmap hm = s.trace_heatmap(lazy.trace.handle, "attn_weights", {0, 1}, 3, 2);
  CHECK(hm.rows == 6);
  CHECK(hm.height == 3);
  CHECK(hm.width == 2);
  for (int64_t y = 0; y < 3; ++y)
    for (int64_t x = 0; x < 2; ++x) {
      float best = -INFINITY;
      for (int64_t r = 2 * y; r < 2 * y + 2; ++r)
        for (int64_t c = 3 * x; c < 3 * x + 3; ++c) best = std::max(best, w.tensor.data[static_cast<size_t>(36 + r * 6 + c)]);
      CHECK(hm.values[static_cast<size_t>(y * 2 + x)] == best);
    }
  CHECK(hm.values[1] == 0.0f);  // queries 0 and 1 see none of keys 3..5
  // larger than the slice: the slice itself; -inf stays -inf
  const TraceHeatmap masked = s.trace_heatmap(lazy.trace.handle, "attn_scores_masked", {0, 0}, 512, 512);
  CHECK(masked.height == 6);
  CHECK(masked.values[1] == -INFINITY);
  // every refusal names what it refused
  CHECK(refusal([&] { s.trace_heatmap(lazy.trace.handle, "attn_wieghts", {0, 0}, 8, 8); }) == std::pair<std::string, std::string>{"trace_stage", "stage"});
  CHECK(refusal([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {2, 0}, 8, 8); }) == std::pair<std::string, std::string>{"trace_range", "batch"});
  CHECK(refusal([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {0, 2}, 8, 8); }) == std::pair<std::string, std::string>{"trace_range", "head"});
  CHECK(refusal([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {0}, 8, 8); }) == std::pair<std::string, std::string>{"trace_range", "leading"});
  CHECK(refusal([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {0, 0}, 0, 8); }) == std::pair<std::string, std::string>{"trace_range", "height"});
  CHECK(refusal([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {0, 0}, 8, NAN); }) == std::pair<std::string, std::string>{"trace_range", "width"});
  CHECK(refused([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {NAN, 0}, 8, 8); }).message == "batch must be a whole number from 0 to 1, got NaN");
  CHECK(refused([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {0, 1.5}, 8, 8); }).message == "head must be a whole number from 0 to 1, got 1.5");
  CHECK(refused([&] { s.trace_heatmap(lazy.trace.handle, "attn_weights", {0, 0}, 8, 1e-40); }).message == "width must be a whole number from 1 to 4096, got 1e-40");
  CHECK(refusal([&] { s.trace_window(lazy.trace.handle, "attn_weights", {0, 0, 0, 0}, {1, 1, 3, NAN}); }) == std::pair<std::string, std::string>{"trace_range", "sizes"});
  CHECK(refused([&] { s.trace_window(lazy.trace.handle, "attn_weights", {0, 0, 0, 0.5}, {1, 1, 3, 3}); }).message == "offsets[3] must be a whole number, got 0.5");
  CHECK(refusal([&] { s.trace_window(lazy.trace.handle, "attn_weights", {0, 0, 4, 0}, {1, 1, 3, 6}); }) == std::pair<std::string, std::string>{"trace_range", "offsets"});
  CHECK(s.handles_in_use() == 1);
  s.release(lazy.trace.handle);
  CHECK(s.handles_in_use() == 0);
  CHECK(refusal([&] { s.trace_data(lazy.trace.handle, "output"); }) == std::pair<std::string, std::string>{"disposed", "trace"});
}

TEST_CASE(
    "a resident trace's views (the masked scores, the dropout stage where no dropout acted) read the eager trace's values: whole, windowed, heatmapped, and in their summaries") {
  // Every class with a mask or a dropout stage as the page runs it (lazy trace), eval and training;
  // a cached chunk too (mask rows past the cache's entries). The eager trace holds its own copies.
  const auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };  // NaN rows (the inverted mask) read as NaN
  const auto same_all = [&](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](float u, float v) { return same(u, v); });
  };
  const auto compare = [&](Session& s, const ResidentTrace& lazy, const std::vector<Stage>& eager, bool dropout_acts) {
    REQUIRE(lazy.stages.size() == eager.size());
    double own = 0;
    for (size_t i = 0; i < eager.size(); ++i) {
      const Stage& e = eager[i];
      CAPTURE(e.id);
      const Tensor got = s.trace_data(lazy.handle, e.id);
      CHECK(got.shape == e.tensor.shape);
      CHECK(same_all(got.data, e.tensor.data));
      const TraceStage& l = lazy.stages[i];
      CHECK(l.shape == e.tensor.shape);  // a view's shape is its own (Stage::shape()), its tensor empty
      CHECK(l.summary.min == e.summary.min);
      CHECK(l.summary.max == e.summary.max);
      CHECK(l.summary.neg_inf == e.summary.neg_inf);
      CHECK(l.summary.nan_rows == e.summary.nan_rows);
      CHECK(l.slice_summaries.size() == e.slice_summaries.size());
      const bool view = e.id == "attn_scores_masked" || (e.id == "attn_weights_dropout" && !dropout_acts);
      if (!view) own += 4.0 * static_cast<double>(e.tensor.data.size());
      const size_t nd = e.tensor.shape.size();
      if (nd < 2 || (e.id != "attn_scores_masked" && e.id != "attn_weights_dropout")) continue;
      // the whole last slice as a window (its row sums: -inf where a key is masked) and as a heatmap
      std::vector<double> at(nd, 0), size(e.tensor.shape.begin(), e.tensor.shape.end());
      for (size_t a = 0; a + 2 < nd; ++a) {
        at[a] = size[a] - 1;
        size[a] = 1;
      }
      const TraceWindow w = s.trace_window(lazy.handle, e.id, at, size);
      const int64_t rows = e.tensor.shape[nd - 2], cols = e.tensor.shape[nd - 1];
      const size_t last = e.tensor.data.size() - static_cast<size_t>(rows * cols);
      REQUIRE(w.row_sums.size() == static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const float v = e.tensor.data[last + static_cast<size_t>(r * cols + c)];
          sum += v;
          CHECK(same(w.window.data[static_cast<size_t>(r * cols + c)], v));
        }
        CHECK(same(w.row_sums[static_cast<size_t>(r)], sum));
      }
      std::vector<double> lead(at.begin(), at.end() - 2);
      const TraceHeatmap h = s.trace_heatmap(lazy.handle, e.id, lead, static_cast<double>(rows), static_cast<double>(cols));
      CHECK(h.values == max_pool(e.tensor.data.data() + last, rows, cols, rows, cols));
    }
    CHECK(lazy.bytes == own);
  };
  struct Case {
    const char* call;
    bool training;
  };
  for (const Case& c : {Case{"MultiHeadAttention(3, 4, 6, 0.5, 2)", false}, Case{"MultiHeadAttention(3, 4, 6, 0.5, 2)", true}, Case{"MultiHeadAttention(3, 4, 6, 0.0, 2)", true},
                        Case{"CausalAttention(3, 2, 6, 0.0)", false}, Case{"MultiHeadAttentionWrapper(3, 2, 6, 0.5, 2)", true},
                        Case{"MultiHeadAttentionWithSWA(3, 4, 0.0, 2, sliding_window_size=3)", false}, Case{"GroupedQueryAttention(3, 4, 0.0, 4, 2)", false},
                        Case{"MHAPyTorchSDPAWithoutFlash(3, 4, 2, 6)", false}}) {
    const std::string text = c.call;
    CAPTURE(text);
    CAPTURE(c.training);
    Session s;
    const ParsedCall call = s.parse_call(c.call);
    for (const Diagnostic& d : call.diagnostics) REQUIRE_MESSAGE(d.severity != Severity::Error, d.message);  // the inverted mask's is a warning
    TensorInput x{{2, 6, 3}, book_tokens().data};
    x.data.insert(x.data.end(), x.data.begin(), x.data.end());
    const ResidentRun lazy = s.run_resident(call.class_name, call.config, x, 123, c.training);
    const RunResult eager = s.run_module(call.class_name, call.config, x, 123, c.training, true);
    CHECK(same_all(lazy.output.data, eager.output.data));
    const bool acts = c.training && std::string(c.call).find("0.5") != std::string::npos;
    compare(s, lazy.trace, eager.trace, acts);
  }
  // a cached second chunk: its mask rows are the chunk's positions past the cache's entries
  Session s;
  const ParsedCall call = s.parse_call("MultiHeadAttention(3, 4, 12, 0.0, 2)");
  const ModuleInfo m = s.create(call.class_name, call.config, s.manual_seed(123));
  const TensorInput first{{1, 6, 3}, book_tokens().data}, next{{1, 6, 3}, book_tokens().data};
  const CacheState lazy_cache = s.new_cache(m.handle, NumberOption{}), eager_cache = s.new_cache(m.handle, NumberOption{});
  (void)s.forward(m.handle, first, false, 0, false, lazy_cache.handle);
  (void)s.forward(m.handle, first, false, 0, false, eager_cache.handle);
  const ResidentForward lazy = s.forward_resident(m.handle, next, false, 0, lazy_cache.handle);
  const ForwardResult eager = s.forward(m.handle, next, false, 0, true, eager_cache.handle);
  CHECK(same_all(lazy.output.data, eager.output.data));
  REQUIRE(eager.trace);
  compare(s, lazy.trace, *eager.trace, false);
}

TEST_CASE("a stage's summaries count its non-finite values and the rows that begin with NaN") {
  const Tensor t({2, 2, 3}, {NAN, NAN, NAN, 1, 2, -INFINITY, 0, 1, 2, NAN, 0, 0});
  TensorSummary whole;
  const std::vector<TensorSummary> slices = summarize_slices(t, whole);
  CHECK(slices[0].nan_rows == 1);
  CHECK(slices[0].non_finite == 4);
  CHECK(slices[1].nan_rows == 1);
  CHECK(whole.nan_rows == 2);
  CHECK(whole.non_finite == 5);
}

TEST_CASE("reserve_memory takes the run's own estimate (resident or traced) and refuses a run over the budget before allocating, on one thread or a pool") {
  for (const double threads : {1.0, 2.0}) {  // on a pool its threads touch the pages: the same bytes, the same refusals
    CAPTURE(threads);
    Session s;
    s.set_threads(threads);
    REQUIRE(s.threads() == threads);
    const SlotMap config = {{"d_in", SlotValue::integer(64)},
                            {"d_out", SlotValue::integer(64)},
                            {"context_length", SlotValue::integer(200000)},
                            {"dropout", SlotValue::floating(0.0)},
                            {"num_heads", SlotValue::integer(4)}};
    const std::vector<double> shape = {1, 256, 64};
    CHECK(s.reserve_memory("MultiHeadAttention", config, shape, true, true).bytes == s.estimate_resident_bytes("MultiHeadAttention", config, shape).bytes);
    CHECK(s.reserve_memory("MultiHeadAttention", config, shape, false, false).bytes == s.estimate_bytes("MultiHeadAttention", config, shape, false).bytes);
    CHECK(s.reserve_memory("MultiHeadAttention", config, shape, false, true).bytes == s.estimate_bytes("MultiHeadAttention", config, shape, true).bytes);
    const std::vector<double> huge = {1, 150000, 64};  // 4 heads x 150000^2 floats per stage: far over the budget
    CHECK(refusal([&] { s.reserve_memory("MultiHeadAttention", config, huge, true, true); }) == std::pair<std::string, std::string>{"too_large", "inputShape"});
    SlotMap bad = config;
    bad["num_heads"] = SlotValue::integer(5);
    CHECK(refusal([&] { s.reserve_memory("MultiHeadAttention", bad, shape, true, true); }).first == "heads_divisibility");
  }
}

TEST_CASE("a module keeps drawing its dropout masks on its generator after the generator's handle is released") {
  // Two sessions, the same seed: in one the generator's handle is released after create (gen.dispose()).
  SlotMap dropout = book_mha();
  dropout["dropout"] = SlotValue::floating(0.5);
  Session kept, released;
  const uint32_t g1 = kept.manual_seed(123), g2 = released.manual_seed(123);
  const ModuleInfo m1 = kept.create("MultiHeadAttention", dropout, g1), m2 = released.create("MultiHeadAttention", dropout, g2);
  released.release(g2);
  CHECK(released.handles_in_use() == 1);
  for (int run = 0; run < 2; ++run) {  // the stream goes on: the second masks are not the first again
    const ForwardResult a = kept.forward(m1.handle, book_input(), true, 0, false, 0);
    const ForwardResult b = released.forward(m2.handle, book_input(), true, 0, false, 0);
    CHECK(a.output.data == b.output.data);
  }
  kept.rand(g1, {1});  // the generator and its module share one stream, as torch's default generator
  const ForwardResult after_rand = kept.forward(m1.handle, book_input(), true, 0, false, 0);
  CHECK(after_rand.output.data != released.forward(m2.handle, book_input(), true, 0, false, 0).output.data);
  // use_generator: another module's generator, refused once either handle is gone
  std::vector<ParameterInput> given;
  for (const NamedTensor& p : kept.parameters(m1.handle)) given.push_back({p.name, {std::vector<double>(p.tensor.shape.begin(), p.tensor.shape.end()), p.tensor.data}});
  const ModuleInfo v = kept.from_parameters("MultiHeadAttention", dropout, given);
  CHECK(refusal([&] { kept.forward(v.handle, book_input(), true, 0, false, 0); }).first == "generator_missing");
  CHECK(kept.use_generator(v.handle, g1));
  CHECK(kept.forward(v.handle, book_input(), true, 0, false, 0).output.shape == Shape{1, 6, 2});
  CHECK(refusal([&] { released.use_generator(m2.handle, g2); }) == std::pair<std::string, std::string>{"disposed", "generator"});
  released.release(m2.handle);
  CHECK(released.handles_in_use() == 0);
}

TEST_CASE("counts a caller gives are whole numbers, refused by name with the value as typed (not 1.500000 or nan)") {
  Session s;
  CHECK(refused([&] { s.seeded_tokens(1.5, 3, 123); }).message == "num_tokens must be a whole number from 1, got 1.5");
  CHECK(refused([&] { s.seeded_tokens(6, NAN, 123); }).message == "d_in must be a whole number from 1, got NaN");
  CHECK(refused([&] { s.sentence_tokens({"Your", "journey"}, 1.5, 123); }).message == "d_in must be a whole number from 1, got 1.5");
  CHECK(refused([&] { s.set_threads(1.5); }).message == "threads must be a whole number from 1 to 16, got 1.5");
  const uint32_t g = s.manual_seed(1);
  CHECK(refused([&] { s.dropout(g, book_input(), 1.5); }).message == "dropout probability must be in [0, 1], got 1.5");
  const ModuleInfo m = s.create("MultiHeadAttention", book_mha(), g);
  CHECK(refused([&] { s.head_shares(m.handle, 2.5, false); }).message == "parts must be a whole number from 1 to 64, got 2.5");
}

// Tensors: the whole-tensor summary the trace carries for every stage; a tensor from a caller's buffer,
// one value by index, and the tensor as PyTorch prints it.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/ops.hpp"
#include "attention_lab/tensor.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"
#include "refusal.hpp"

using namespace attention_lab;

TEST_SUITE("tensor") {
  TEST_CASE("numbers as text: %g digits as streams print them, and thousands separators") {
    CHECK(format_g(0.1, 4) == "0.1");
    CHECK(format_g(1.0 / 0.9, 6) == "1.11111");  // dropout 0.1 keeps survivors x 1/(1-p)
    CHECK(format_g(8.0, 6) == "8");
    CHECK(format_g(1e-7, 4) == "1e-07");
    CHECK(shape_string({2, 6, 3}) == "(2, 6, 3)");
    CHECK(shape_string({4}) == "(4,)");
    CHECK(with_commas(160000400000.0) == "160,000,400,000");
    CHECK(with_commas(-1234.4) == "-1,234");
    CHECK(with_commas(999.0) == "999");
  }

  TEST_CASE("a number a reader gave prints as typed (Python's repr, JavaScript's String), never as %f's 1.500000 or 0.000000") {
    CHECK(format_number(1e-40) == "1e-40");
    CHECK(format_number(1.5) == "1.5");
    CHECK(format_number(0.1) == "0.1");
    CHECK(format_number(0.1 + 0.2) == "0.30000000000000004");  // every digit that tells it from 0.3
    CHECK(format_number(3.0) == "3");
    CHECK(format_number(-1.0) == "-1");
    CHECK(format_number(-0.0) == "0");
    CHECK(format_number(2147483648.0) == "2147483648");
    CHECK(format_number(1e-5) == "1e-05");  // Python's repr(1e-05)
    CHECK(format_number(1e20) == "1e+20");
    CHECK(format_number(std::nan("")) == "NaN");
    CHECK(format_number(std::numeric_limits<double>::infinity()) == "Infinity");
    CHECK(format_number(-std::numeric_limits<double>::infinity()) == "-Infinity");
  }

  TEST_CASE("a summary counts -inf and exact zeros and takes min, max and mean over the finite values") {
    const float inf = std::numeric_limits<float>::infinity();
    // finite: 2, -1, 0, 0, 5 -> min -1, max 5, mean 6 / 5 = 1.2; -inf twice; NaN and +inf are skipped
    const Tensor t({2, 4}, {2.0f, -inf, -1.0f, 0.0f, std::nanf(""), 0.0f, -inf, 5.0f});
    const TensorSummary s = summarize(t);
    CHECK(s.min == -1.0);
    CHECK(s.max == 5.0);
    CHECK(s.mean == doctest::Approx(1.2));
    CHECK(s.neg_inf == 2);
    CHECK(s.zeros == 2);
    CHECK(s.count == 8);
    const TensorSummary none = summarize(Tensor({2}, {-inf, -inf}));
    CHECK(std::isnan(none.min));
    CHECK(std::isnan(none.mean));
    CHECK(none.neg_inf == 2);
  }

  TEST_CASE("the summary of 10,007 values (several 4096-value blocks and a tail) matches a plain scalar pass") {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> v(10007);
    for (size_t i = 0; i < v.size(); ++i) v[i] = i % 11 == 3 ? -inf : i % 13 == 5 ? 0.0f : i % 101 == 7 ? inf : std::sin(static_cast<float>(i)) * 3.0f;
    double lo = inf, hi = -inf, sum = 0.0;
    int64_t finite = 0, masked = 0, zeros = 0;
    for (const float x : v) {
      masked += x == -inf;
      if (!std::isfinite(x)) continue;
      lo = std::min(lo, static_cast<double>(x));
      hi = std::max(hi, static_cast<double>(x));
      sum += x;
      ++finite;
      zeros += x == 0.0f;
    }
    const TensorSummary s = summarize(Tensor({10007}, v));
    CHECK(s.min == lo);
    CHECK(s.max == hi);
    CHECK(s.neg_inf == masked);
    CHECK(s.zeros == zeros);
    // float32 partial sums of 4096 values: the mean agrees to about 1e-6 of the values' size
    CHECK(std::fabs(s.mean - sum / static_cast<double>(finite)) < 1e-5);
  }

  TEST_CASE("a summary streamed in pieces (any cut, mid-vector too) has the bits of one pass over the values") {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> v(3 * 4096 + 1030);
    for (size_t i = 0; i < v.size(); ++i) v[i] = i % 17 == 2 ? -inf : i % 19 == 4 ? 0.0f : i % 211 == 9 ? NAN : std::cos(static_cast<float>(i) * 0.37f) * 5.0f;
    const ops::ValueSummary one = ops::summarize_values(v.data(), static_cast<int64_t>(v.size()));
    for (const std::vector<int64_t>& cuts : std::vector<std::vector<int64_t>>{{1}, {3, 5, 7}, {4096}, {1023, 1}, {6, 4090, 3}, {13313}}) {
      ops::SummaryStream stream;
      size_t at = 0;
      for (size_t k = 0; at < v.size(); ++k) {  // pieces of the cuts' lengths, over and over
        const size_t n = std::min(v.size() - at, static_cast<size_t>(cuts[k % cuts.size()]));
        stream.add(v.data() + at, static_cast<int64_t>(n));
        at += n;
      }
      const ops::ValueSummary got = stream.finish();
      CHECK(got.min == one.min);
      CHECK(got.max == one.max);
      CHECK(got.sum == one.sum);  // the same float partial sums, added in the same order
      CHECK(got.finite == one.finite);
      CHECK(got.neg_inf == one.neg_inf);
      CHECK(got.zeros == one.zeros);
      CHECK(got.masked == one.masked);
      CHECK(got.counted == one.counted);
    }
    CHECK(one.neg_inf == static_cast<int64_t>((v.size() + 14) / 17));
  }

  TEST_CASE("a stream whose mask fill is torch.finfo(float32).min counts it as masked and leaves it out of min, max and mean") {
    const float lowest = std::numeric_limits<float>::lowest();  // torch.finfo(torch.float32).min = -3.4028234663852886e38
    const float inf = std::numeric_limits<float>::infinity();
    // 4 + 4 + 3 values (two vectors and a tail): kept 1, -2, 3, 0.5, 0, -0.25 -> min -2, max 3, mean 2.25 / 6 = 0.375
    const std::vector<float> v = {1.0f, lowest, -2.0f, lowest, 3.0f, 0.5f, lowest, 0.0f, -inf, lowest, -0.25f};
    ops::SummaryStream stream(lowest);
    stream.add(v.data(), 5);
    stream.add(v.data() + 5, 6);
    const ops::ValueSummary got = stream.finish();
    CHECK(got.masked == 4);
    CHECK(got.neg_inf == 1);
    CHECK(got.finite == 10);  // the fill is finite: counted as finite, not in min, max and sum
    CHECK(got.counted == 6);
    CHECK(got.min == -2.0f);
    CHECK(got.max == 3.0f);
    CHECK(got.sum == doctest::Approx(2.25));
    TensorSummary whole;
    const std::vector<TensorSummary> slices = summaries_of_slices(Tensor({11}, v), {got}, whole);
    CHECK(whole.masked == 4);
    CHECK(whole.mean == doctest::Approx(0.375));
    CHECK(whole.non_finite == 1);  // the -inf alone
    CHECK(slices.at(0).masked == 4);
    // the default fill (-inf): the -inf is the masked value, the lowest float an ordinary one
    const ops::ValueSummary plain = ops::summarize_values(v.data(), static_cast<int64_t>(v.size()));
    CHECK(plain.masked == 1);
    CHECK(plain.counted == 10);
    CHECK(plain.min == lowest);
  }

  TEST_CASE("every traced stage carries the summary of its own tensor") {
    TorchGenerator g(123);
    const SlotMap slots = {{"d_in", SlotValue::integer(3)},
                           {"d_out", SlotValue::integer(2)},
                           {"context_length", SlotValue::integer(6)},
                           {"dropout", SlotValue::floating(0.0)},
                           {"num_heads", SlotValue::integer(2)}};
    const AttentionModule m(validated_config("MultiHeadAttention", slots), g);
    std::vector<Stage> trace;
    ForwardOptions o;
    o.trace = &trace;
    m.forward(Tensor({1, 6, 3}, std::vector<float>(18, 0.5f)), o);
    for (const auto& stage : trace) {
      const TensorSummary want = summarize(stage.tensor);
      CHECK_MESSAGE(stage.summary.count == stage.tensor.numel(), stage.id);
      CHECK_MESSAGE(stage.summary.neg_inf == want.neg_inf, stage.id);
      CHECK_MESSAGE(stage.summary.zeros == want.zeros, stage.id);
      CHECK_MESSAGE(stage.summary.max == want.max, stage.id);
    }
    // the causal (6, 6) mask hides 15 keys per head: 2 heads -> 30 -inf in the masked scores, 30 zeros in the weights
    for (const auto& stage : trace) {
      if (stage.id == "attn_scores_masked") CHECK(stage.summary.neg_inf == 30);
      if (stage.id == "attn_weights") CHECK(stage.summary.zeros == 30);
    }
  }
  TEST_CASE("max_pool: each cell is the first largest value of its block in row-major order (NaN never wins; -0 and +0 as met)") {
    // Blocks of uneven size (rows and cols not multiples of the sides), values with ties of -0 and +0
    // in both orders, NaN, -inf: every cell equals a plain row-major scan of its block, bit for bit.
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const float palette[] = {-0.0f, 0.0f, -1.5f, nan, -inf, 2.25f, -0.0f, 0.0f, -3.0f, 0.0f, -0.0f};
    for (const auto& [rows, cols, height, width, seed] :
         std::vector<std::array<int64_t, 5>>{{7, 9, 3, 4, 1}, {40, 37, 9, 40, 2}, {16, 16, 16, 16, 3}, {13, 50, 5, 7, 4}, {1, 30, 1, 6, 5}, {30, 1, 4, 1, 6}, {64, 64, 7, 5, 7}}) {
      std::vector<float> x(static_cast<size_t>(rows * cols));
      uint32_t state = static_cast<uint32_t>(seed) * 2654435761u;
      const bool zeros_only = seed % 2 == 1;  // then the ties decide most cells
      for (float& v : x) {
        state = state * 1664525u + 1013904223u;
        const size_t i = (state >> 24) % (zeros_only ? 2 : sizeof palette / sizeof palette[0]);
        v = zeros_only && (state & 0x100) ? -2.0f : palette[i];
      }
      const std::vector<float> got = max_pool(x.data(), rows, cols, height, width);
      REQUIRE(got.size() == static_cast<size_t>(height * width));
      for (int64_t y = 0; y < height; ++y)
        for (int64_t c = 0; c < width; ++c) {
          const int64_t r0 = y * rows / height, r1 = std::max(r0 + 1, (y + 1) * rows / height);
          const int64_t k0 = c * cols / width, k1 = std::max(k0 + 1, (c + 1) * cols / width);
          float best = -inf;
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t k = k0; k < k1; ++k)
              if (x[static_cast<size_t>(r * cols + k)] > best) best = x[static_cast<size_t>(r * cols + k)];
          const float cell = got[static_cast<size_t>(y * width + c)];
          CHECK(cell == best);
          CHECK(std::signbit(cell) == std::signbit(best));
        }
    }
    // a block of -0 then +0 keeps -0; of +0 then -0 keeps +0
    const float pair[] = {-0.0f, 0.0f, 0.0f, -0.0f};
    const std::vector<float> pooled = max_pool(pair, 2, 2, 2, 1);
    CHECK(std::signbit(pooled[0]));
    CHECK_FALSE(std::signbit(pooled[1]));
  }

  TEST_CASE("tensor_from copies a row-major buffer into (b, num_tokens, d_in), and at() reads one value back") {
    const float buffer[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    const Tensor x = tensor_from(buffer, {2, 3, 2});  // (b, num_tokens, d_in)
    CHECK(x.shape == Shape{2, 3, 2});
    CHECK(x.data == std::vector<float>(buffer, buffer + 12));
    CHECK(x.at({1, 2, 1}) == 11.0f);  // 1 * 6 + 2 * 2 + 1
    CHECK(x.at({0, 1, 0}) == 2.0f);
    CHECK(x.at({-1, -1, 0}) == 10.0f);  // negative counts from the end, as in PyTorch
    CHECK(tensor_from(nullptr, {0, 3}).numel() == 0);
    using Refusal = std::pair<std::string, std::string>;
    CHECK(refusal([] { tensor_from(nullptr, {1, 2}); }) == Refusal{"tensor_size", ""});
    CHECK(refusal([&] { tensor_from(buffer, {2, -1}); }) == Refusal{"tensor_shape", ""});
    CHECK(refusal([&] { (void)x.at({2, 0, 0}); }) == Refusal{"tensor_axis", "index"});
    CHECK(refusal([&] { (void)x.at({0, 0}); }) == Refusal{"tensor_axis", "index"});
    CHECK(refusal([&] { (void)x.at({0, -4, 0}); }) == Refusal{"tensor_axis", "index"});
  }

  TEST_CASE("tensor_string prints as PyTorch does: aligned columns, a blank line between rank-3 blocks") {
    CHECK(tensor_string(Tensor({2}, {0.5f, -1.25f})) == "tensor([ 0.5000, -1.2500])");
    CHECK(tensor_string(Tensor({2, 2}, {0.31901830f, 0.48576289f, 0.29434600f, 0.38967627f})) == "tensor([[0.3190, 0.4858],\n        [0.2943, 0.3897]])");
    CHECK(tensor_string(Tensor({2, 1, 2}, {1, 2, 3, 4}), 1) == "tensor([[[1.0, 2.0]],\n\n        [[3.0, 4.0]]])");
    CHECK(tensor_string(Tensor({1, 2}, {-std::numeric_limits<float>::infinity(), 0.0f}), 2) == "tensor([[-inf, 0.00]])");
  }
}

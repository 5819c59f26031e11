// The thread pool (thread_pool.hpp) and what runs on it: every task once, errors carried back, nesting
// inline; and the products, a forward and a session's runs giving the same bits on 1, 2 and 3 threads
// (the split depends on the problem's sizes only, so no value sees the pool).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/ops.hpp"
#include "attention_lab/session.hpp"
#include "attention_lab/thread_pool.hpp"
#include "random_values.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {

/// Whether two float arrays hold the same bits, value for value (NaN payloads and -0 included).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) { return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0; }

/// c = a @ b (+ bias) on a pool of `threads` (1: no pool): (m, n).
std::vector<float> product(int threads, const std::vector<float>& a, const ops::PackedMatrix& b, const float* bias, int64_t m, ops::Triangle tri = ops::Triangle::None) {
  std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
  std::vector<float> c(static_cast<size_t>(m * b.n), -1.0f);
  ops::gemm(pool.get(), a.data(), m, b.k, b, bias, c.data(), tri);
  return c;
}

}  // namespace

TEST_SUITE("thread_pool") {
  TEST_CASE("run calls every task exactly once, on as many threads as asked") {
    for (const int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      CHECK(pool.size() == threads);
      std::vector<std::atomic<int>> calls(1000);
      pool.run(1000, [&](int64_t i) { calls[static_cast<size_t>(i)] += 1; });
      for (const auto& c : calls) CHECK(c.load() == 1);
    }
    CHECK(ThreadPool(0).size() == 1);  // clamped to 1 .. kMaxThreads
    CHECK(ThreadPool(ThreadPool::kMaxThreads + 5).size() == ThreadPool::kMaxThreads);
  }

  TEST_CASE("a task's exception reaches run's caller after every task has finished, and the pool runs again") {
    ThreadPool pool(3);
    std::atomic<int> done{0};
    CHECK_THROWS_AS(pool.run(50,
                             [&](int64_t i) {
                               done += 1;
                               if (i == 7) throw std::runtime_error("task 7");
                             }),
                    std::runtime_error);
    CHECK(done.load() == 50);
    std::atomic<int> again{0};
    pool.run(10, [&](int64_t) { again += 1; });
    CHECK(again.load() == 10);
  }

  TEST_CASE("runs back to back (workers still polling) and after a pause (workers asleep) both run every task on the workers too") {
    ThreadPool pool(3);
    for (const int pause_us : {0, 0, 3 * ThreadPool::kSpinMicroseconds, 0, 5 * ThreadPool::kSpinMicroseconds}) {
      std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
      std::vector<std::atomic<int>> calls(64);
      std::atomic<int> off_caller{0};
      const std::thread::id caller = std::this_thread::get_id();
      pool.run(64, [&](int64_t i) {
        calls[static_cast<size_t>(i)] += 1;
        if (std::this_thread::get_id() != caller) off_caller += 1;
        // long enough that the caller cannot drain all 64 before a worker joins (woken or polling)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      });
      for (const auto& c : calls) CHECK(c.load() == 1);
      CHECK(off_caller.load() > 0);
    }
  }  // and the destructor stops workers whether they poll or sleep (the test would hang otherwise)

  TEST_CASE("a run inside a task runs inline: nested products do not wait for busy workers") {
    ThreadPool pool(2);
    std::atomic<int> inner{0};
    pool.run(4, [&](int64_t) { pool.run(5, [&](int64_t) { inner += 1; }); });
    CHECK(inner.load() == 20);
  }

  TEST_CASE("parallel_for runs small work inline, in order (the book's sizes never wake a thread)") {
    ThreadPool pool(3);
    std::vector<int64_t> order;
    parallel_for(&pool, 5, kMinParallelWork - 1, [&](int64_t i) { order.push_back(i); });  // no lock: inline
    CHECK(order == std::vector<int64_t>{0, 1, 2, 3, 4});
  }

  TEST_CASE("GPT-2-sized products have the same bits on 1, 2 and 3 threads: a prefill, one decoded row, causal triangles, a bias") {
    const int64_t k = 768, n = 2304;  // c_attn: (T, 768) @ (768, 2304)
    const std::vector<float> w = random_values(k * n, 1), bias = random_values(n, 2);
    const ops::PackedMatrix packed = ops::pack_b(w.data(), k, n, false);
    for (const int64_t m : {1, 6, 200}) {
      const std::vector<float> a = random_values(m * k, 3 + static_cast<uint32_t>(m));
      const std::vector<float> one = product(1, a, packed, bias.data(), m);
      CHECK(same_bits(one, product(2, a, packed, bias.data(), m)));
      CHECK(same_bits(one, product(3, a, packed, bias.data(), m)));
    }
    // causal scores q @ k^T (T, T) and weights @ values, with the triangles the forward asks for
    const int64_t T = 300, hd = 64;
    const std::vector<float> q = random_values(T * hd, 4), keys = random_values(T * hd, 5);
    const ops::PackedMatrix keys_t = ops::pack_b(keys.data(), hd, T, true);
    const std::vector<float> lower = product(1, q, keys_t, nullptr, T, ops::Triangle::OutputLower);
    const std::vector<float> lower3 = product(3, q, keys_t, nullptr, T, ops::Triangle::OutputLower);
    for (int64_t i = 0; i < T; ++i)  // the values the triangle promises (the rest is unspecified)
      for (int64_t j = 0; j <= i; ++j) REQUIRE(std::memcmp(&lower[static_cast<size_t>(i * T + j)], &lower3[static_cast<size_t>(i * T + j)], sizeof(float)) == 0);
    std::vector<float> weights = random_values(T * T, 6);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < T; ++j) weights[static_cast<size_t>(i * T + j)] = 0.0f;
    const std::vector<float> values = random_values(T * hd, 7);
    const ops::PackedMatrix v = ops::pack_b(values.data(), T, hd, false);
    const std::vector<float> ctx = product(1, weights, v, nullptr, T, ops::Triangle::ALower);
    CHECK(same_bits(ctx, product(2, weights, v, nullptr, T, ops::Triangle::ALower)));
    CHECK(same_bits(ctx, product(3, weights, v, nullptr, T, ops::Triangle::ALower)));
  }

  TEST_CASE("the scaled softmax of a slab has the same bits on 1, 2 and 3 threads: causal (from a block's first row) and not, masked keys, a row with every key masked") {
    const int64_t rows = 300, cols = 700;  // past kMinParallelWork: the pool takes blocks of rows
    std::vector<float> scores = random_values(rows * cols, 8);
    for (int64_t j = 0; j < cols; ++j) scores[static_cast<size_t>(5 * cols + j)] = -INFINITY;  // every key masked: NaN, as in PyTorch
    for (int64_t i = 10; i < rows; i += 7)
      for (int64_t j = i; j < cols; j += 3) scores[static_cast<size_t>(i * cols + j)] = -INFINITY;
    for (const bool causal : {false, true})
      for (const int64_t first_row : {int64_t{0}, int64_t{250}}) {
        CAPTURE(causal);
        CAPTURE(first_row);
        std::vector<float> inline_ = scores;
        ops::scaled_softmax_rows(inline_.data(), rows, cols, 8.0f, causal, first_row);
        REQUIRE(std::isnan(inline_[static_cast<size_t>(5 * cols)]));  // the row with every key masked (causal: its first keys, all -inf too)
        for (const int threads : {1, 2, 3}) {
          std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
          std::vector<float> x = scores;
          ops::scaled_softmax_rows(pool.get(), x.data(), rows, cols, 8.0f, causal, first_row);
          CHECK(same_bits(inline_, x));
        }
      }
  }

  TEST_CASE("a GPT-2-small attention forward (T = 128), traced, untraced and with dropout, has the same bits on 1, 2 and 3 threads") {
    const SlotMap slots = {{"d_in", SlotValue::integer(768)},
                           {"d_out", SlotValue::integer(768)},
                           {"context_length", SlotValue::integer(1024)},
                           {"dropout", SlotValue::floating(0.1)},
                           {"num_heads", SlotValue::integer(12)}};
    TorchGenerator g(123);
    const AttentionModule mha(validated_config("MultiHeadAttention", slots), g);
    Tensor x({1, 128, 768});
    x.data = random_values(128 * 768, 8);
    const auto run = [&](int threads, bool training, bool trace) {
      std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
      TorchGenerator dropout(5);
      std::vector<Stage> stages;
      ForwardOptions o;
      o.training = training;
      o.generator = &dropout;
      o.trace = trace ? &stages : nullptr;
      o.pool = pool.get();
      std::vector<float> out = mha.forward(x, o).data;
      for (const Stage& s : stages) out.insert(out.end(), s.tensor.data.begin(), s.tensor.data.end());
      return out;
    };
    for (const bool training : {false, true})
      for (const bool trace : {false, true}) {
        CAPTURE(training);
        CAPTURE(trace);
        const std::vector<float> one = run(1, training, trace);
        CHECK(same_bits(one, run(2, training, trace)));
        CHECK(same_bits(one, run(3, training, trace)));
      }
  }

  TEST_CASE("a session's threads: set_threads gives the pool's size, forwards keep their bits, and bad counts are refused") {
    Session s;
    CHECK(s.threads() == 1);
    const SlotMap slots = {{"d_in", SlotValue::integer(256)},
                           {"d_out", SlotValue::integer(256)},
                           {"context_length", SlotValue::integer(64)},
                           {"dropout", SlotValue::floating(0.0)},
                           {"num_heads", SlotValue::integer(4)}};
    const uint32_t m = s.create("MultiHeadAttention", slots, s.manual_seed(1)).handle;
    const TensorInput x{{1, 64, 256}, random_values(64 * 256, 9)};
    const std::vector<float> one = s.forward(m, x, false, 0, false, 0).output.data;
    CHECK(s.set_threads(3) == 3);
    CHECK(s.threads() == 3);
    CHECK(same_bits(one, s.forward(m, x, false, 0, false, 0).output.data));
    CHECK(s.set_threads(1) == 1);
    for (const double bad : {0.0, 1.5, -2.0, 17.0, std::nan("")}) CHECK(refusal([&] { s.set_threads(bad); }) == std::pair<std::string, std::string>{"bad_threads", "threads"});
  }
}

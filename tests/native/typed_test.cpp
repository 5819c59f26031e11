// The typed construction path (typed.hpp, typed_classes.hpp): a struct per class gives the same
// module as the SlotMap path (same parameters from the same seed, the same forward bits) and the same
// codes for bad values; slot names and types are checked when it compiles; the header is what the
// recipe list writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "attention_lab/modules.hpp"
#include "attention_lab/torch_generator.hpp"
#include "attention_lab/typed.hpp"
#include "refusal.hpp"
#include "render_typed_classes.hpp"
#include "test_paths.hpp"

using namespace attention_lab;

namespace {

SlotValue i(double v) { return SlotValue::integer(v); }
SlotValue f(double v) { return SlotValue::floating(v); }
SlotValue b(bool v) { return SlotValue::boolean_value(v); }

bool same_bits(const Tensor& a, const Tensor& b) { return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0; }

/// torch.manual_seed(seed) and the module from each path; then the same parameters and, on seeded
/// tokens in training mode (dropout draws from each module's generator), the same output bits.
template <typename Typed>
void check_same_module(const Typed& typed, const SlotMap& slots, uint64_t seed = 123) {
  CAPTURE(Typed::class_name);
  const ModuleConfig from_typed = validated_config(typed);
  const ModuleConfig from_slots = validated_config(Typed::class_name, slots);
  CHECK(from_typed.python_call() == from_slots.python_call());
  CHECK(from_typed.slots().size() == from_slots.slots().size());
  TorchGenerator g1(seed), g2(seed);
  const AttentionModule m1(from_typed, g1), m2(from_slots, g2);
  const auto p1 = m1.parameters(), p2 = m2.parameters();
  REQUIRE(p1.size() == p2.size());
  for (size_t k = 0; k < p1.size(); ++k) {
    CHECK(p1[k].name == p2[k].name);
    CHECK(same_bits(p1[k].tensor, p2[k].tensor));
  }
  Tensor x = seeded_tokens(5, from_slots.d_in, 7);              // (num_tokens, d_in)
  if (from_slots.batched()) x.shape = {1, 5, from_slots.d_in};  // (b, num_tokens, d_in)
  ForwardOptions o1, o2;
  o1.generator = &g1;
  o2.generator = &g2;
  CHECK(same_bits(m1.forward(x, o1), m2.forward(x, o2)));
}

/// The first error's code and slot from each path, and every diagnostic's code: the same.
template <typename Typed>
void check_same_refusal(const Typed& typed, const SlotMap& slots, const std::string& code) {
  CAPTURE(Typed::class_name);
  CAPTURE(code);
  std::vector<std::string> codes_typed, codes_slots;
  for (const auto& d : check_config(typed)) codes_typed.push_back(d.code);
  for (const auto& d : check_config(Typed::class_name, slots)) codes_slots.push_back(d.code);
  CHECK(codes_typed == codes_slots);
  const Refused by_type = refused([&] { validated_config(typed); });
  const Refused by_slots = refused([&] { validated_config(Typed::class_name, slots); });
  CHECK(by_type.code == code);
  CHECK(by_slots.code == by_type.code);
  CHECK(by_slots.slot == by_type.slot);
  CHECK(by_slots.message == by_type.message);
}

// What must not compile, checked as traits (a test cannot hold code that does not compile).
template <typename T, typename = void>
struct takes_two_ints : std::false_type {};
template <typename T>
struct takes_two_ints<T, std::void_t<decltype(T{std::declval<int>(), std::declval<int>()})>> : std::true_type {};

}  // namespace

TEST_SUITE("typed construction") {
  TEST_CASE("typed_classes.hpp is what the recipe list writes (regenerate it with attention_lab_typed_classes)") {
    const std::filesystem::path header = std::filesystem::path(attention_lab::test_paths::core) / "include" / "attention_lab" / "typed_classes.hpp";
    std::ifstream in(header, std::ios::binary);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    CHECK_MESSAGE(text.str() == tools::render_typed_classes(), "run: ./build/native/attention_lab_typed_classes core/include/attention_lab/typed_classes.hpp");
  }

  TEST_CASE("the book's MultiHeadAttention(3, 2, 6, 0.0, 2) is the same module either way, with the book's numbers") {
    check_same_module(typed::MultiHeadAttention{3, 2, 6, 0.0, 2}, {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"num_heads", i(2)}});
    TorchGenerator gen(123);
    const AttentionModule mha(validated_config(typed::MultiHeadAttention{3, 2, 6, 0.0, 2}), gen);
    const Tensor y = mha.forward(tensor_from(book_tokens().data.data(), {1, 6, 3}));          // (b, num_tokens, d_out)
    CHECK(std::round(y.at({0, 0, 0}) * 1e4) / 1e4 == doctest::Approx(0.3190).epsilon(1e-9));  // the book's printout, to 4 decimals
    CHECK(std::round(y.at({0, 0, 1}) * 1e4) / 1e4 == doctest::Approx(0.4858).epsilon(1e-9));
    CHECK(std::round(y.at({0, -1, 0}) * 1e4) / 1e4 == doctest::Approx(0.2575).epsilon(1e-9));
    CHECK(std::round(y.at({0, -1, 1}) * 1e4) / 1e4 == doctest::Approx(0.4028).epsilon(1e-9));
  }

  TEST_CASE("every class's struct gives the SlotMap path's module: same parameters from the same seed, same forward bits") {
    check_same_module(typed::SelfAttention_v1{3, 2}, {{"d_in", i(3)}, {"d_out", i(2)}});
    check_same_module(typed::SelfAttention_v2{3, 2, true}, {{"d_in", i(3)}, {"d_out", i(2)}, {"qkv_bias", b(true)}}, 789);
    check_same_module(typed::CausalAttention{3, 2, 6, 0.5}, {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", f(0.5)}});
    check_same_module(typed::MultiHeadAttentionWrapper{3, 2, 6, 0.0, 2}, {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"num_heads", i(2)}});
    check_same_module(typed::MultiHeadAttention{3, 4, 6, 0.1, 2, true},
                      {{"d_in", i(3)}, {"d_out", i(4)}, {"context_length", i(6)}, {"dropout", f(0.1)}, {"num_heads", i(2)}, {"qkv_bias", b(true)}});
    // the bonus classes' own order: (d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False)
    check_same_module(typed::MultiHeadAttentionCombinedQKV{4, 4, 2, 6}, {{"d_in", i(4)}, {"d_out", i(4)}, {"num_heads", i(2)}, {"context_length", i(6)}});
    check_same_module(typed::MHAEinsum{4, 4, 6, 0.0, 2, true},
                      {{"d_in", i(4)}, {"d_out", i(4)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"num_heads", i(2)}, {"qkv_bias", b(true)}});
    check_same_module(typed::MHAEinsum{3, 4, 6, 0.0, 2}, {{"d_in", i(3)}, {"d_out", i(4)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"num_heads", i(2)}});
    check_same_module(typed::MHAPyTorchScaledDotProduct{4, 4, 2, 6, 0.25}, {{"d_in", i(4)}, {"d_out", i(4)}, {"num_heads", i(2)}, {"context_length", i(6)}, {"dropout", f(0.25)}});
    check_same_module(typed::MHAPyTorchSDPAWithoutFlash{4, 4, 2, 6}, {{"d_in", i(4)}, {"d_out", i(4)}, {"num_heads", i(2)}, {"context_length", i(6)}});
    check_same_module(typed::MHAPyTorchFlexAttention{4, 4, 2, 6}, {{"d_in", i(4)}, {"d_out", i(4)}, {"num_heads", i(2)}, {"context_length", i(6)}});
    check_same_module(typed::MHAPyTorchClass{4, 4, 2, 6, 0.0, false, false},
                      {{"d_in", i(4)}, {"d_out", i(4)}, {"num_heads", i(2)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"qkv_bias", b(false)}, {"need_weights", b(false)}});
    check_same_module(typed::PyTorchMultiHeadAttention{4, 4, 2}, {{"d_in", i(4)}, {"d_out", i(4)}, {"num_heads", i(2)}});
    check_same_module(typed::GroupedQueryAttention{3, 4, 0.0, 4, 2, typed::Dtype::float32()},
                      {{"d_in", i(3)}, {"d_out", i(4)}, {"dropout", f(0.0)}, {"num_heads", i(4)}, {"num_kv_groups", i(2)}, {"dtype", SlotValue::expression("torch.float32")}});
    check_same_module(typed::GroupedQueryAttention{3, 4, 0.0, 4, 1, std::nullopt, true},
                      {{"d_in", i(3)}, {"d_out", i(4)}, {"dropout", f(0.0)}, {"num_heads", i(4)}, {"num_kv_groups", i(1)}, {"dtype", SlotValue::none()}, {"qkv_bias", b(true)}});
    check_same_module(typed::MultiHeadLatentAttention{3, 4, 0.0, 2, false, 2},
                      {{"d_in", i(3)}, {"d_out", i(4)}, {"dropout", f(0.0)}, {"num_heads", i(2)}, {"qkv_bias", b(false)}, {"latent_dim", i(2)}});
    check_same_module(typed::MultiHeadLatentAttention{3, 4, 0.0, 2, {}, std::nullopt},
                      {{"d_in", i(3)}, {"d_out", i(4)}, {"dropout", f(0.0)}, {"num_heads", i(2)}, {"latent_dim", SlotValue::none()}});
    check_same_module(typed::MultiHeadAttentionWithSWA{3, 2, 0.0, 2, {}, 3},
                      {{"d_in", i(3)}, {"d_out", i(2)}, {"dropout", f(0.0)}, {"num_heads", i(2)}, {"sliding_window_size", i(3)}});
    // dropout = 0 (an int) is read as Python reads it
    check_same_module(typed::CausalAttention{3, 2, 6, 0}, {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", i(0)}});
  }

  TEST_CASE("a default left out is the recipe's: the config holds it and python_call omits it") {
    const ModuleConfig c = validated_config(typed::MultiHeadAttentionCombinedQKV{4, 4, 2, 6});
    CHECK(c.dropout == 0.0);
    CHECK_FALSE(c.qkv_bias);
    CHECK(c.python_call() == "MultiHeadAttentionCombinedQKV(4, 4, 2, 6)");
    CHECK(typed::MultiHeadAttentionCombinedQKV{4, 4, 2, 6}.slots().count("dropout") == 0);
    CHECK(validated_config(typed::MultiHeadLatentAttention{3, 32, 0.0, 2}).latent_width() == 16);  // None: max(16, d_out // 8)
  }

  TEST_CASE("bad values give the SlotMap path's codes, slots and messages") {
    check_same_refusal(typed::MultiHeadAttention{3, 2, 6, 1.5, 2}, {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", f(1.5)}, {"num_heads", i(2)}},
                       "dropout_range");
    check_same_refusal(typed::MultiHeadAttention{3, 3, 6, 0.0, 2}, {{"d_in", i(3)}, {"d_out", i(3)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"num_heads", i(2)}},
                       "heads_divisibility");
    check_same_refusal(typed::MultiHeadAttention{0, 2, 6, 0.0, 2}, {{"d_in", i(0)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"num_heads", i(2)}},
                       "non_positive");
    check_same_refusal(typed::MultiHeadAttention{3, 2, 6, 0.0, -1}, {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", f(0.0)}, {"num_heads", i(-1)}},
                       "non_positive");
    check_same_refusal(typed::MultiHeadAttention{3, 2, 4000000000LL, 0.0, 2},
                       {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(4000000000.0)}, {"dropout", f(0.0)}, {"num_heads", i(2)}}, "too_large");
    check_same_refusal(typed::MultiHeadAttentionCombinedQKV{3, 4, 2, 6}, {{"d_in", i(3)}, {"d_out", i(4)}, {"num_heads", i(2)}, {"context_length", i(6)}}, "d_in_d_out_differ");
    check_same_refusal(typed::GroupedQueryAttention{4, 4, 0.0, 4, 3}, {{"d_in", i(4)}, {"d_out", i(4)}, {"dropout", f(0.0)}, {"num_heads", i(4)}, {"num_kv_groups", i(3)}},
                       "kv_groups_divisibility");
    check_same_refusal(typed::MultiHeadAttentionWithSWA{3, 2, 0.0, 2, {}, 0},
                       {{"d_in", i(3)}, {"d_out", i(2)}, {"dropout", f(0.0)}, {"num_heads", i(2)}, {"sliding_window_size", i(0)}}, "non_positive");
  }

  TEST_CASE("a slot's type is checked when it compiles: no float size, no int bool, no missing required slot") {
    static_assert(std::is_constructible_v<typed::Int, int> && std::is_constructible_v<typed::Int, int64_t>);
    static_assert(!std::is_constructible_v<typed::Int, double> && !std::is_constructible_v<typed::Int, bool>);
    static_assert(std::is_constructible_v<typed::Float, double> && std::is_constructible_v<typed::Float, int> && !std::is_constructible_v<typed::Float, bool>);
    static_assert(std::is_constructible_v<typed::Bool, bool> && !std::is_constructible_v<typed::Bool, int>);
    static_assert(!std::is_constructible_v<typed::Defaulted<typed::Bool>, int> && std::is_constructible_v<typed::Defaulted<typed::Bool>, bool>);
    static_assert(std::is_constructible_v<typed::OptionalInt, std::nullopt_t> && !std::is_constructible_v<typed::OptionalInt, double>);
    static_assert(!std::is_constructible_v<typed::Dtype, int>);
    static_assert(takes_two_ints<typed::SelfAttention_v1>::value);
    static_assert(!takes_two_ints<typed::MultiHeadAttention>::value, "context_length, dropout and num_heads have no default: leaving them out does not compile");
    CHECK(std::string(typed::MultiHeadAttention::class_name) == "MultiHeadAttention");
  }
}

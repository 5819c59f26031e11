// The KV cache's part of the forward: a chunk's place against the cache (chunk_of), the pass that writes
// the chunk's keys and values into the cache's room (extend_cache), where the attend pass reads them
// (attended_rows), and the cache after the chunk (next_cache, kept by keep_cache once the forward has
// succeeded). A latent class's cache (c_kv) is re-read whole at every step: project_latent and
// project_qkv read it; next_cache keeps its last rows.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "attention_passes.hpp"

namespace attention_lab {

namespace {

/// A cache holds what this module's forwards wrote: keys and values (b, kv_heads, capacity, head_dim)
/// with `held` rows from row `first`, or a latent class's c_kv (b, entries, latent_dim). Another
/// module's (another width, heads or kind) would be read past its end with this module's sizes:
/// cache_module. Then the chunk against it: cache_batch, cache_window, cache_full.
void check_cache(const ForwardPlan& p, const KvCache& cache, int64_t b, int64_t T) {
  const ModuleConfig& c = p.config;
  const bool latent = p.latent_dim > 0;
  const Shape& held = latent ? cache.latent.shape : cache.keys.shape;
  const Shape want = latent ? Shape{cache.batch, held.size() == 3 ? held[1] : 0, p.latent_dim} : Shape{cache.batch, p.kv_heads, held.size() == 4 ? held[2] : 0, p.head_dim};
  const auto fits = [](const Tensor& t, const Shape& shape) { return t.shape == shape && t.data.size() == static_cast<size_t>(numel_of(shape)); };
  const bool rows = cache.first >= 0 && cache.held >= 0 && cache.first + cache.held <= (held.size() == 4 ? held[2] : 0);
  const bool empty = cache.keys.data.empty() && cache.values.data.empty() && cache.latent.data.empty() && cache.keys.shape.empty() && cache.latent.shape.empty() &&
                     cache.first == 0 && cache.held == 0;
  const bool fitting = latent ? fits(cache.latent, want) && cache.keys.data.empty() && cache.values.data.empty() && cache.held == 0
                              : fits(cache.keys, want) && fits(cache.values, want) && rows && cache.latent.data.empty();
  if (!empty && !fitting) {
    const Shape keys = cache.keys.shape.size() == 4 ? Shape{cache.keys.shape[0], cache.keys.shape[1], cache.held, cache.keys.shape[3]} : cache.keys.shape;
    const std::string what = !cache.latent.shape.empty() ? "c_kv of shape " + shape_string(cache.latent.shape) : "keys of shape " + shape_string(keys);
    throw AttentionError("cache_module", "cache",
                         "this cache holds " + what + ", and " + c.python_call() + " reads " +
                             (latent ? "c_kv (b, entries, latent_dim = " + std::to_string(p.latent_dim) + ")"
                                     : "keys (b, kv_heads = " + std::to_string(p.kv_heads) + ", entries, head_dim = " + std::to_string(p.head_dim) + ")") +
                             ": it was filled by another module",
                         "Give each module a cache of its own (a new KvCache for this one).");
  }
  if (cache.batch != 0 && cache.batch != b)
    throw AttentionError("cache_batch", "x", "this cache holds keys of a batch of " + std::to_string(cache.batch) + ", and the chunk has b = " + std::to_string(b),
                         "Every chunk of one cache has the same batch size; start a new cache for another.");
  if (cache.window > 0 && T > cache.window)
    throw AttentionError("cache_window", "x", "a chunk of " + std::to_string(T) + " tokens is longer than the cache's window of " + std::to_string(cache.window),
                         "Feed chunks of at most " + std::to_string(cache.window) + " tokens, or make the window larger.");
  if (p.rope() && cache.position + T > c.context_length)  // (a window's positions grow too; the mask buffer's check below says the same without one)
    throw AttentionError("cache_full", "context_length",
                         "the cache has seen " + std::to_string(cache.position) + " tokens and this chunk adds " + std::to_string(T) + ": positions up to " +
                             std::to_string(cache.position + T - 1) + ", past the " + std::to_string(c.context_length) +
                             " rows of RoPE's cos and sin tables (context_length = " + std::to_string(c.context_length) + ")",
                         "Start a new cache, or build the module with a larger context_length.");
  if (cache.window == 0 && p.mask_buffer && cache.position + T > c.context_length)
    throw AttentionError("cache_full", "context_length",
                         "the cache has seen " + std::to_string(cache.position) + " tokens and this chunk adds " + std::to_string(T) + ": " + std::to_string(cache.position + T) +
                             " positions, past context_length = " + std::to_string(c.context_length) + " (the rows of the mask buffer)",
                         "Start a new cache, or make one with a window (newCache({window: " + std::to_string(c.context_length) + "})) whose oldest keys shift out.");
}

/// Where a chunk's keys attended lie in the cache's keys and values: from row first + drop (the held
/// ones a window keeps), then the chunk's own after the held ones, when they fit the capacity; else
/// in a new storage from row 0 (`grow`) of twice the rows needed, at most what the cache can ever need
/// at once (KvCache's rule).
void place_in_cache(const ForwardPlan& p, const KvCache& cache, Chunk& c) {
  const int64_t need = c.past + c.T, capacity = cache.keys.shape.size() == 4 ? cache.keys.shape[2] : 0;
  if (capacity > 0 && cache.first + c.drop + need <= capacity) {
    c.capacity = capacity;
    c.row = cache.first + c.drop;
    return;
  }
  int64_t limit = std::numeric_limits<int64_t>::max() / 4;
  if (cache.window > 0)
    limit = 2 * cache.window;  // the window and as many rows of room
  else if (p.mask_buffer || p.rope())
    limit = p.config.context_length;  // every position the module has
  c.grow = true;
  c.row = 0;
  c.capacity = std::max(need, std::min(2 * need, limit));
}

}  // namespace

void KvCache::reserve(int64_t b, int64_t kv_heads, int64_t head_dim, int64_t rows) {
  if (b < 1 || kv_heads < 1 || head_dim < 1 || rows < 1)
    throw std::invalid_argument("KvCache::reserve needs sizes of at least 1, got b = " + std::to_string(b) + ", kv_heads = " + std::to_string(kv_heads) +
                                ", head_dim = " + std::to_string(head_dim) + ", rows = " + std::to_string(rows));
  if (position > 0 || entries() > 0 || !keys.data.empty() || !latent.data.empty()) return;
  keys = Tensor({b, kv_heads, rows, head_dim});
  values = Tensor({b, kv_heads, rows, head_dim});
  batch = b;
}

Chunk chunk_of(const ForwardPlan& p, const Tensor& x, const ForwardOptions& options) {
  Chunk c;
  c.b = p.batched ? x.shape[0] : 1;
  c.T = x.shape[x.shape.size() - 2];
  // With a KV cache: `past` keys held before the chunk (after a window's shift) come first, and query
  // i (absolute position position + i) sees key j (absolute position position - past + j) when j <= past + i.
  if (const KvCache* cache = options.cache) {
    if (!p.caches_keys())
      throw AttentionError("cache_unsupported", "cache", p.config.class_name() + " has no causal mask over its own keys, so there is nothing to cache",
                           "A KV cache works for the classes with a causal mask (their facts say mask: causal).");
    check_cache(p, *cache, c.b, c.T);
    c.position = cache->position;
    const int64_t held = cache->entries();
    c.drop = cache->window > 0 ? std::max<int64_t>(0, held + c.T - cache->window) : 0;
    c.past = held - c.drop;
    Shape all = x.shape;
    all[all.size() - 2] = c.past + c.T;
    double bytes = plan_bytes(p, all, options.trace != nullptr);
    if (p.latent_dim > 0) {
      bytes += 4.0 * cache->bytes();  // the cache, every latent row attended and the next cache's rows
    } else {
      place_in_cache(p, *cache, c);
      // the cache's storage, a new one when it grows, and a trace's copies of every key and value attended
      const double row_bytes = 4.0 * 2.0 * static_cast<double>(c.b * p.kv_heads * p.head_dim);
      bytes += cache->allocated_bytes() + (c.grow ? row_bytes * static_cast<double>(c.capacity) : 0.0) +
               (options.trace != nullptr ? row_bytes * static_cast<double>(c.past + c.T) : 0.0);
    }
    if (bytes > options.memory_budget_bytes)
      throw AttentionError("too_large", "x", "a cached forward of " + shape_string(x.shape) + " over " + std::to_string(c.past) + " cached tokens is over the memory budget",
                           "Use a window, or fewer tokens.");
  }
  // Keys and values may have appended tokens (nn.MultiheadAttention's bias_k/bias_v): Tk >= T.
  c.Tk = p.num_keys(c.T) + c.past;
  c.kv_rows = options.cache != nullptr && p.latent_dim == 0 ? c.T : c.Tk;
  return c;
}

void extend_cache(const PassContext& ctx, Activations& a) {
  const ForwardPlan& p = ctx.plan();
  if (ctx.cache == nullptr || p.latent_dim > 0) return;
  const Chunk& c = ctx.chunk;
  CacheRoom& room = *ctx.room;
  KvCache& cache = *ctx.options.cache;
  const int64_t slabs = c.b * p.kv_heads, hd = p.head_dim, cap = c.capacity;
  if (c.grow) {  // a new storage, the kept rows first; it becomes the cache's when the forward succeeds
    room.keys = Tensor({c.b, p.kv_heads, cap, hd});
    room.values = Tensor({c.b, p.kv_heads, cap, hd});
    const int64_t from = cache.first + c.drop;
    for (int64_t s = 0; s < slabs && c.past > 0; ++s) {
      std::copy_n(cache.keys.data.data() + (s * cache.capacity() + from) * hd, c.past * hd, room.keys.data.data() + s * cap * hd);
      std::copy_n(cache.values.data.data() + (s * cache.capacity() + from) * hd, c.past * hd, room.values.data.data() + s * cap * hd);
    }
  }
  // the chunk's keys (rotated, with RoPE) and values after the held ones: rows the cache does not hold
  // yet, so a forward that fails later leaves what it holds as it was
  float* keys = (c.grow ? room.keys : cache.keys).data.data();
  float* values = (c.grow ? room.values : cache.values).data.data();
  const float* own_keys = scored_keys(p, a).data.data();
  for (int64_t s = 0; s < slabs; ++s) {
    std::copy_n(own_keys + s * c.T * hd, c.T * hd, keys + (s * cap + c.row + c.past) * hd);
    std::copy_n(a.values.data.data() + s * c.T * hd, c.T * hd, values + (s * cap + c.row + c.past) * hd);
  }
}

KeyValueRows attended_rows(const PassContext& ctx, Activations& a) {
  const ForwardPlan& p = ctx.plan();
  const Chunk& c = ctx.chunk;
  if (ctx.cache == nullptr || p.latent_dim > 0)
    return {scored_keys(p, a).data.data(), a.values.data.data(), static_cast<size_t>(c.Tk * p.head_dim)};  // the record's (b, KV, Tk, hd)
  const Tensor& keys = c.grow ? ctx.room->keys : ctx.cache->keys;
  const Tensor& values = c.grow ? ctx.room->values : ctx.cache->values;
  const size_t row = static_cast<size_t>(c.row * p.head_dim);
  return {keys.data.data() + row, values.data.data() + row, static_cast<size_t>(c.capacity * p.head_dim)};
}

void next_cache(const PassContext& ctx, Activations& a, bool observing) {
  const ForwardPlan& p = ctx.plan();
  const Chunk& c = ctx.chunk;
  const int64_t Tk = c.Tk;
  CacheRoom& room = *ctx.room;
  // The cache keeps every key and value attended (the class's sliding window or the cache's own
  // window keep the last ones); a latent class keeps the latent rows instead.
  int64_t keep = Tk;
  if (p.window > 0) keep = std::min(keep, p.window);
  if (ctx.cache->window > 0) keep = std::min(keep, ctx.cache->window);
  room.position = ctx.cache->position + c.T;
  room.held = keep;
  if (p.latent_dim > 0) {
    const int64_t L = p.latent_dim;
    room.latent = Tensor({c.b, keep, L});  // (b, keep, latent_dim): the last rows of cache_latent
    for (int64_t bi = 0; bi < c.b; ++bi) std::copy_n(a.cache_latent.data.data() + (bi * Tk + Tk - keep) * L, keep * L, room.latent.data.data() + bi * keep * L);
    return;
  }
  room.first = c.row + Tk - keep;  // the rows before it shift out
  if (!observing) return;
  // the trace shows every key attended (cache_k, cache_v) beside the chunk's own (keys, values)
  const KeyValueRows rows = attended_rows(ctx, a);
  Shape shape = a.values.shape;
  shape[shape.size() - 2] = Tk;
  a.cache_k = Tensor(shape);
  a.cache_v = Tensor(shape);
  for (int64_t s = 0; s < c.b * p.kv_heads; ++s) {
    std::copy_n(rows.keys + static_cast<size_t>(s) * rows.stride, Tk * p.head_dim, a.cache_k.data.data() + s * Tk * p.head_dim);
    std::copy_n(rows.values + static_cast<size_t>(s) * rows.stride, Tk * p.head_dim, a.cache_v.data.data() + s * Tk * p.head_dim);
  }
}

void keep_cache(const PassContext& ctx, KvCache& cache) {
  PendingCache pending{ctx.chunk, std::move(*ctx.room), ctx.plan().latent_dim > 0};
  keep_pending(pending, cache);
}

void keep_pending(PendingCache& pending, KvCache& cache) {
  const Chunk& c = pending.chunk;
  CacheRoom& room = pending.room;
  cache.position = room.position;
  cache.start = room.position - room.held;
  cache.batch = c.b;
  if (pending.latent) {
    cache.latent = std::move(room.latent);
    return;
  }
  if (c.grow) {
    cache.keys = std::move(room.keys);
    cache.values = std::move(room.values);
  }
  cache.first = room.first;
  cache.held = room.held;
  if (cache.first < cache.held) return;
  // As many unused rows before the held ones as they are: they move back to row 0 (each row moved
  // once per row shifted out, at most), which leaves the room after them for the next chunks.
  const int64_t slabs = cache.keys.shape[0] * cache.keys.shape[1], cap = cache.capacity(), hd = cache.keys.shape[3];
  for (Tensor* t : {&cache.keys, &cache.values})
    for (int64_t s = 0; s < slabs; ++s) std::copy_n(t->data.data() + (s * cap + cache.first) * hd, cache.held * hd, t->data.data() + s * cap * hd);
  cache.first = 0;
}

}  // namespace attention_lab

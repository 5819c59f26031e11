// The facts of each trace stage beyond its name and texts (plan.hpp: stage_id_name, stage_present,
// stage_text), read from the one stage table (core/src/stage_table.cpp): the size of its tensor, the
// buffers a forward makes of it, how the page shows it. The memory estimates (plan.cpp) sum over it,
// so a new stage is counted by its row; scripts/stage-ids.mjs writes the .d.ts StageId union from it.
#pragma once

#include <string>

#include "attention_lab/plan.hpp"
#include "attention_lab/tensor.hpp"

namespace attention_lab {

/// The sizes a stage's float count reads, from one forward's input shape: the batch (1 when
/// unbatched), the tokens and the keys they attend (the tokens plus any appended key/value tokens).
struct StageSizes {
  double b = 1, t = 1, tk = 1;
};
StageSizes stage_sizes(const ForwardPlan& plan, const Shape& input_shape);

/// Floats in stage `id`'s tensor in a forward of `plan` on `sizes` (whether or not the plan has it).
double stage_floats(const ForwardPlan& plan, StageId id, const StageSizes& sizes);

/// What a sum over the stages counts of each stage a forward emits.
enum class StageCount {
  Tensor,          // its tensor once: what a trace hands back
  ForwardBuffers,  // the tensors an untraced forward allocates for it (none for the (T, keys) slabs: one slab at a time)
  TraceCopies,     // the tensors only a traced forward allocates for it (the slabs made whole, the copies of input and output)
  ResidentViews,   // its tensor when a resident trace keeps it as a view of another stage (ForwardOptions::stage_views)
};
/// The floats `what` counts, summed over the stages a forward of `plan` emits (stage_present,
/// uncached: a cached forward's cache stages are the cache's bytes, which its caller adds).
double sum_stage_floats(const ForwardPlan& plan, const StageSizes& sizes, StageCount what);

/// The floats of the largest stage a forward of `plan` emits, cached or not (what one export of a
/// resident trace copies at most).
double largest_stage_floats(const ForwardPlan& plan, const StageSizes& sizes);

/// How many stages a forward of `plan` emits (stage_present): a cached one's include its cache stages.
int stage_count(const ForwardPlan& plan, bool cached);

/// How the page shows a stage, by stage id ("attn_weights"): "vectors" (a table of rows),
/// "scores" (a heatmap on the stage's own scale), "weights" (a heatmap from 0, rows summing to 1
/// and exact zeros meaning masked or dropped), "mask" (a heatmap of 0 and 1). "" for no such stage.
const char* stage_display(const std::string& id);

}  // namespace attention_lab

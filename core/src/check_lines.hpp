// The lines a cause of the check's catalogue shows, as the reader's class writes them: the line with
// the mistake and the book's line that fixes it, written from the plan and the recipe's spelling of its
// source (SourceSpelling), one function a step (check_catalogue.cpp's table points at them).
#pragma once

#include "attention_lab/check_module.hpp"

namespace attention_lab::check_lines {

CauseLines scale_d_out(const ForwardPlan& p);
CauseLines no_scale(const ForwardPlan& p);
CauseLines scale_after_softmax(const ForwardPlan& p);
CauseLines softmax_dim(const ForwardPlan& p);
CauseLines mask_diagonal(const ForwardPlan& p);
CauseLines mask_discarded(const ForwardPlan& p);
CauseLines mask_not_passed(const ForwardPlan& p);
CauseLines heads_view(const ForwardPlan& p);
CauseLines merge_view(const ForwardPlan& p);
CauseLines query_from_key(const ForwardPlan& p);
CauseLines linear_no_transpose(const ForwardPlan& p);
CauseLines missing_out_proj(const ForwardPlan& p);
CauseLines dropout_missing(const ForwardPlan& p);
CauseLines dropout_on_scores(const ForwardPlan& p);

}  // namespace attention_lab::check_lines

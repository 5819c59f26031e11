// Each catalogue cause's line and fix as the reader's class writes them (see check_lines.hpp): the
// book's line of the step, spelled from the recipe (SourceSpelling: the variables and lines of the
// class's source in the book's repository) and the plan (which heads the split makes, the output
// projection's name, the mask buffer's dtype), and the same line with the one mistake in it.
#include <string>

#include "check_lines.hpp"

namespace attention_lab::check_lines {

namespace {

const SourceSpelling& spelling(const ForwardPlan& p) { return p.config.recipe().spelling; }

/// `text` with its first `{}` replaced by `value`.
std::string with(std::string text, const std::string& value) {
  const size_t at = text.find("{}");
  if (at != std::string::npos) text.replace(at, 2, value);
  return text;
}

/// `text` with the first `from` replaced by `to` (unchanged when it has none).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// The book's scaled scores, where the scale divides them on their own line (MHAEinsum).
std::string scores_line(const SourceSpelling& s, const std::string& by) { return s.scores + " = " + s.scaled_scores + " / " + with(s.root, by); }
/// The softmax over `dim`, of the scores divided by root(`by`) (none when `by` is empty).
std::string softmax_line(const SourceSpelling& s, const std::string& by, const char* dim = "-1") {
  return s.weights + " = torch.softmax(" + s.scores + (by.empty() ? "" : " / " + with(s.root, by)) + ", dim=" + dim + ")";
}
/// The book's line that scales the scores: its own line, or the softmax's.
std::string book_scale(const SourceSpelling& s) { return s.scaled_scores.empty() ? softmax_line(s, s.head_dim) : scores_line(s, s.head_dim); }

/// The PyTorch name of the module the Out weight belongs to ("out_proj", "proj").
std::string out_module(const ForwardPlan& p) {
  const ParamRecipe* out = p.config.recipe().param(Role::Out, Layout::OutIn);
  return out != nullptr ? out->name.substr(0, out->name.rfind(".weight")) : "out_proj";
}

}  // namespace

CauseLines scale_d_out(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  return {s.scaled_scores.empty() ? softmax_line(s, s.width) : scores_line(s, s.width), book_scale(s)};
}

CauseLines no_scale(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  return {s.scaled_scores.empty() ? softmax_line(s, "") : s.scores + " = " + s.scaled_scores, book_scale(s)};
}

CauseLines scale_after_softmax(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  return {s.weights + " = torch.softmax(" + s.scores + ", dim=-1) / " + with(s.root, s.head_dim), book_scale(s)};
}

CauseLines softmax_dim(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  const std::string by = s.scaled_scores.empty() ? s.head_dim : "";
  return {softmax_line(s, by, "-2"), softmax_line(s, by)};
}

/// The positions' comparison with `<=` (a token hidden from itself), or the buffer's triu from the diagonal.
CauseLines mask_diagonal(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  if (!s.causal_rule.empty()) return {replaced(s.causal_rule, " < ", " <= "), s.causal_rule};
  const std::string dtype = p.config.recipe().mask_buffer_bytes == 1 ? ".bool()" : "";  // a bool buffer
  const std::string buffer = "self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), diagonal=";
  return {buffer + "0)" + dtype + ")", buffer + "1)" + dtype + ")"};
}

/// masked_fill_ written as masked_fill, or `scores = scores.masked_fill(...)` without its assignment.
CauseLines mask_discarded(const ForwardPlan& p) {
  const std::string& book = spelling(p).masked_fill;
  const size_t assigned = book.find(" = ");
  if (book.find("masked_fill_(") == std::string::npos && assigned != std::string::npos) return {book.substr(assigned + 3), book};
  return {replaced(book, "masked_fill_(", "masked_fill("), book};
}

CauseLines mask_not_passed(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  return {replaced(s.attention_call, s.mask_argument, ""), s.attention_call};
}

/// The keys' split (GroupedQueryAttention's into its num_kv_groups heads) without the transpose.
CauseLines heads_view(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  const std::string heads = p.kv_projection_width_differs() ? "self.num_kv_groups" : "self.num_heads";
  const std::string left = s.split_keys + " = " + s.keys + ".view(" + s.batch + ", ";
  return {left + heads + ", " + s.tokens + ", self.head_dim)", left + s.tokens + ", " + heads + ", self.head_dim).transpose(1, 2)"};
}

CauseLines merge_view(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  const std::string view = s.merge + "(" + s.batch + ", " + s.tokens + ", " + s.width + ")";
  return {s.context + " = " + s.merge_from + view, s.context + " = " + s.merge_from + ".transpose(1, 2)" + view};
}

CauseLines query_from_key(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  return {s.queries + " = " + with(s.project, "W_key"), s.queries + " = " + with(s.project, "W_query")};
}

CauseLines linear_no_transpose(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  return {s.queries + " = x @ self.W_query.weight", s.queries + " = " + with(s.project, "W_query")};
}

CauseLines missing_out_proj(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  const std::string out = out_module(p);
  return {"return " + s.context + "  # without self." + out, s.context + " = self." + out + "(" + s.context + ")"};
}

CauseLines dropout_missing(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  return {s.context + " = " + s.attend + "  # without self.dropout", s.weights + " = self.dropout(" + s.weights + ")"};
}

CauseLines dropout_on_scores(const ForwardPlan& p) {
  const SourceSpelling& s = spelling(p);
  const std::string fill = s.masked_fill.find("masked_fill_(") != std::string::npos ? "masked_fill_" : "masked_fill";
  return {s.scores + " = self.dropout(" + s.scores + ")  # after " + fill + ", before the softmax", s.weights + " = self.dropout(" + s.weights + ")  # after the softmax"};
}

}  // namespace attention_lab::check_lines

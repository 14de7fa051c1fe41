#include "ops/einsum.h"

#include <algorithm>

namespace onnxgpu::ops {

namespace {

constexpr int kEllipsisBase = 52;  // label ids: a-z 0..25, A-Z 26..51, ellipsis dims 52..

int label_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

struct Term {
  std::vector<int> letters_before, letters_after;  // letters around the ellipsis (all in before when none)
  bool ellipsis = false;
};

Term parse_term(const std::string& s, const Fail& fail) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (s.compare(i, 3, "...") != 0 || t.ellipsis) raise(fail, "malformed ellipsis in einsum term '" + s + "'");
      t.ellipsis = true;
      i += 2;
      continue;
    }
    int id = label_id(c);
    if (id < 0) raise(fail, std::string("invalid character '") + c + "' in einsum term '" + s + "'");
    (t.ellipsis ? t.letters_after : t.letters_before).push_back(id);
  }
  return t;
}

}  // namespace

EinsumPlan einsum_plan(const std::string& equation, const std::vector<Shape>& inputs, const Fail& fail) {
  std::string eq;
  for (char c : equation) if (c != ' ') eq += c;
  if (eq.empty()) raise(fail, "attribute 'equation' is required");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const size_t n_in = inputs.size();
  if (terms.size() != n_in)
    raise(fail, "equation '" + eq + "' has " + std::to_string(terms.size()) + " input terms but the node has " +
                    std::to_string(n_in) + " inputs");
  std::vector<std::vector<int>> dim_labels(n_in);  // per input: the label of each dim
  std::vector<Term> parsed;
  int64_t ell_rank = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const int64_t rank = int64_t(inputs[i].size());
    Term t = parse_term(terms[i], fail);
    int64_t nl = int64_t(t.letters_before.size() + t.letters_after.size());
    if (t.ellipsis ? rank < nl : rank != nl)
      raise(fail, "einsum term '" + terms[i] + "' does not match input " + std::to_string(i) + " of shape " + shape_str(inputs[i]));
    if (t.ellipsis) ell_rank = std::max(ell_rank, rank - nl);
    parsed.push_back(t);
  }
  std::vector<int64_t> size(size_t(kEllipsisBase + ell_rank), -1);
  std::vector<int> count(size.size(), 0);
  for (size_t i = 0; i < n_in; ++i) {
    const Shape& x = inputs[i];
    const Term& t = parsed[i];
    std::vector<int>& dl = dim_labels[i];
    dl = t.letters_before;
    int64_t er = int64_t(x.size()) - int64_t(t.letters_before.size() + t.letters_after.size());
    for (int64_t k = 0; k < er; ++k) dl.push_back(int(kEllipsisBase + ell_rank - er + k));
    dl.insert(dl.end(), t.letters_after.begin(), t.letters_after.end());
    for (size_t d = 0; d < dl.size(); ++d) {
      int64_t& s = size[size_t(dl[d])];
      int64_t xd = x[d];
      ++count[size_t(dl[d])];
      if (s == -1 || s == 1) s = xd;  // size-1 dims broadcast
      else if (xd != s && xd != 1)
        raise(fail, "label of dim " + std::to_string(d) + " of input " + std::to_string(i) + " " + shape_str(x) +
                        " has size " + std::to_string(xd) + " but " + std::to_string(s) + " elsewhere");
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    Term t = parse_term(eq.substr(arrow + 2), fail);
    out_labels = t.letters_before;
    if (t.ellipsis)
      for (int64_t k = 0; k < ell_rank; ++k) out_labels.push_back(int(kEllipsisBase + k));
    out_labels.insert(out_labels.end(), t.letters_after.begin(), t.letters_after.end());
    std::vector<bool> seen(size.size(), false);
    for (int l : out_labels) {
      if (size_t(l) >= size.size() || size[size_t(l)] < 0) raise(fail, "output label of '" + eq + "' does not appear in any input");
      if (seen[size_t(l)]) raise(fail, "output label repeated in '" + eq + "'");
      seen[size_t(l)] = true;
    }
  } else {
    for (int64_t k = 0; k < ell_rank; ++k) out_labels.push_back(int(kEllipsisBase + k));
    for (int l = 26; l < 52; ++l) if (count[size_t(l)] == 1) out_labels.push_back(l);  // ASCII order: uppercase first
    for (int l = 0; l < 26; ++l) if (count[size_t(l)] == 1) out_labels.push_back(l);
  }
  std::vector<int> sum_labels;
  for (int l = 0; l < int(size.size()); ++l)
    if (size[size_t(l)] >= 0 && std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) sum_labels.push_back(l);
  // Per input, the element stride of each label (repeated labels add up; size-1 broadcast dims: 0).
  std::vector<std::vector<int64_t>> lstride(n_in, std::vector<int64_t>(size.size(), 0));
  for (size_t i = 0; i < n_in; ++i) {
    std::vector<int64_t> st = shape_strides(inputs[i]);
    for (size_t d = 0; d < dim_labels[i].size(); ++d)
      if (inputs[i][d] != 1 || size[size_t(dim_labels[i][d])] == 1) lstride[i][size_t(dim_labels[i][d])] += st[d];
  }
  EinsumPlan p;
  for (int l : out_labels) p.out_shape.push_back(size[size_t(l)]);
  for (int l : sum_labels) p.sum_shape.push_back(size[size_t(l)]);
  p.out_strides.resize(n_in);
  p.sum_strides.resize(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    for (int l : out_labels) p.out_strides[i].push_back(lstride[i][size_t(l)]);
    for (int l : sum_labels) p.sum_strides[i].push_back(lstride[i][size_t(l)]);
  }
  return p;
}

}  // namespace onnxgpu::ops

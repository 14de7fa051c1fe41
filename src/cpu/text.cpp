// Text features: TfIdfVectorizer over integer token ids (a string input or pool is refused: strings are out
// of scope). CPU only: an n-gram lookup per position has no GPU kernel; in a WebGPU session the node falls
// back alone (fail-loud refuses it).
#include <algorithm>
#include <map>

#include "cpu/kernel.h"

namespace onnxgpu::cpu {
namespace {

// TfIdfVectorizer (opset 9). The pool holds, for each n-gram length n = 1, 2, ..., the n-grams listed
// from pool_int64s[ngram_counts[n - 1]] to the next length's start; pool n-gram number j (counted over
// every length) is counted in output column ngram_indexes[j] (a repeated n-gram: its last number). For
// each row of X ([C] or [B, C]) and each skip distance s = 1 .. max_skip_count + 1, every n-gram
// X[i], X[i + s], ..., X[i + (n - 1) s] inside the row with min_gram_length <= n <= max_gram_length that
// is in the pool counts once; unigrams are counted at s = 1 only (ONNX's reference). Y is float32
// [out] or [B, out], out = max(ngram_indexes) + 1: TF the counts, IDF weights[o] (or 1) where a count is
// positive, TFIDF weights[o] (or 1) times the count.
std::vector<Tensor> tfidf_vectorizer(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Int32 && x.dtype() != DType::Int64)
    ctx.unsupported("input 'X' is " + x.describe() + ": only int32 and int64 token ids are supported (strings are out of scope)");
  if (n.has_attr("pool_strings")) ctx.unsupported("attribute 'pool_strings': string pools are out of scope");
  if (x.rank() > 2) ctx.fail("input 'X' must be [C] or [B, C], got " + x.describe());
  const int64_t min_n = n.attr_int("min_gram_length", 0), max_n = n.attr_int("max_gram_length", 0);
  const int64_t max_skip = n.attr_int("max_skip_count", 0);
  const std::string mode = n.attr_string("mode", "");
  const std::vector<int64_t> counts = n.attr_ints("ngram_counts"), indexes = n.attr_ints("ngram_indexes"),
                             pool = n.attr_ints("pool_int64s");
  const std::vector<float> weights = n.attr_floats("weights");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") ctx.fail("attribute 'mode' must be TF, IDF or TFIDF, got '" + mode + "'");
  if (min_n < 1 || max_n < min_n) ctx.fail("min_gram_length and max_gram_length must satisfy 1 <= min <= max, got " +
                                          std::to_string(min_n) + " and " + std::to_string(max_n));
  if (max_skip < 0) ctx.fail("attribute 'max_skip_count' must be non-negative, got " + std::to_string(max_skip));
  if (indexes.empty()) ctx.fail("attribute 'ngram_indexes' must not be empty");
  const int64_t out = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (*std::min_element(indexes.begin(), indexes.end()) < 0) ctx.fail("attribute 'ngram_indexes' has a negative value");
  if (!weights.empty() && int64_t(weights.size()) != out)
    ctx.fail("attribute 'weights' has " + std::to_string(weights.size()) + " values, expected one per output column (" +
             std::to_string(out) + ")");

  // The pool's n-grams of the lengths counted, each with its output column.
  std::map<std::vector<int64_t>, int64_t> column;
  int64_t number = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t len = int64_t(i) + 1, begin = counts[i];
    const int64_t end = i + 1 < counts.size() ? counts[i + 1] : int64_t(pool.size());
    if (begin < 0 || end < begin || end > int64_t(pool.size()) || (end - begin) % len != 0)
      ctx.fail("attribute 'ngram_counts' " + shape_str(counts) + ": ids " + std::to_string(begin) + " to " +
               std::to_string(end) + " of the pool (" + std::to_string(pool.size()) + " ids) are not whole " +
               std::to_string(len) + "-grams");
    for (int64_t at = begin; at < end; at += len, ++number) {
      if (len < min_n || len > max_n) continue;
      if (number >= int64_t(indexes.size()))
        ctx.fail("attribute 'ngram_indexes' has " + std::to_string(indexes.size()) + " values, fewer than the pool's n-grams");
      column[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + len)] = indexes[size_t(number)];
    }
  }

  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, width = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  std::vector<int64_t> ids = x.to_int64_vector();
  std::vector<int64_t> freq(size_t(rows * out), 0);
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = ids.data() + r * width;
    // A skip distance of the row's width or more leaves no n-gram longer than one in it.
    for (int64_t s = 1; s <= std::min(max_skip + 1, std::max<int64_t>(width, 1)); ++s)
      for (int64_t i = 0; i < width; ++i)
        for (int64_t len = std::max<int64_t>(min_n, s > 1 ? 2 : 1); len <= max_n; ++len) {
          if (i + (len - 1) * s >= width) break;
          gram.assign(size_t(len), 0);
          for (int64_t k = 0; k < len; ++k) gram[size_t(k)] = row[i + k * s];
          auto it = column.find(gram);
          if (it != column.end()) ++freq[size_t(r * out + it->second)];
        }
  }

  Shape shape = x.rank() == 2 ? Shape{rows, out} : Shape{out};
  Tensor y(DType::Float32, shape);
  float* yv = y.data<float>();
  for (int64_t i = 0; i < rows * out; ++i) {
    const int64_t f = freq[size_t(i)];
    const float w = weights.empty() ? 1.0f : weights[size_t(i % out)];
    yv[i] = mode == "TF" ? float(f) : mode == "IDF" ? (f > 0 ? w : 0.0f) : w * float(f);
  }
  return {y};
}

}  // namespace

void register_text(KernelRegistry& r) { r.add("TfIdfVectorizer", tfidf_vectorizer); }

}  // namespace onnxgpu::cpu

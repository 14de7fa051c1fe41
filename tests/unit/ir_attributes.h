// IR attributes for tests that build ir::Nodes by hand (the CPU kernel tests).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxgpu::testing {

inline ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
inline ir::Attribute int1(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}
inline ir::Attribute flt(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Float;
  a.f = v;
  return a;
}
inline ir::Attribute str(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::String;
  a.s = std::move(v);
  return a;
}

}  // namespace onnxgpu::testing

#include "ops/quantize.h"

#include <string>

#include "ops/axis.h"

namespace onnxgpu::ops {

namespace {

using Mode = LinearQuantParams::Mode;

// "input 1 'y_scale' ('name')": the formal name and the model's.
std::string label(const ir::Node& node, size_t i, const char* formal) {
  return "input " + std::to_string(i) + " '" + formal + "' ('" + (i < node.inputs.size() ? node.inputs[i] : "") + "')";
}

std::string type_of(const Operand& o) { return std::string(dtype_name(o.dtype)); }

// The range of a quantized integer type (false: not one).
bool int_range(DType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case DType::UInt8: lo = 0; hi = 255; return true;
    case DType::Int8: lo = -128; hi = 127; return true;
    case DType::UInt16: lo = 0; hi = 65535; return true;
    case DType::Int16: lo = -32768; hi = 32767; return true;
    case DType::UInt4: lo = 0; hi = 15; return true;
    case DType::Int4: lo = -8; hi = 7; return true;
    case DType::UInt2: lo = 0; hi = 3; return true;
    case DType::Int2: lo = -2; hi = 1; return true;
    default: return false;
  }
}

const DTypeSet kScaleTypes{DType::Float32, DType::Float16, DType::BFloat16};

}  // namespace

bool quantized_type(DType t, int64_t opset, int64_t* lo, int64_t* hi) {
  int64_t l = 0, h = 0;
  bool ok;
  switch (t) {
    case DType::UInt8: case DType::Int8: ok = true; break;
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
      ok = opset >= 19;
      break;
    case DType::Float4E2M1: ok = opset >= 23; break;
    case DType::UInt16: case DType::Int16: case DType::UInt4: case DType::Int4: case DType::UInt2: case DType::Int2:
      ok = opset >= 21;
      break;
    default: ok = false;
  }
  if (ok && !dtype_is_narrow_float(t)) int_range(t, l, h);
  if (lo) *lo = l;
  if (hi) *hi = h;
  return ok;
}

namespace {

// The quantized types quantized_type admits at this opset, for the errors: ", float8, uint16, ...".
std::string quantized_types_from(int64_t opset) {
  return std::string(opset >= 19 ? ", float8" : "") + (opset >= 21 ? ", uint16, int16, uint4, int4, uint2, int2" : "") +
         (opset >= 23 ? ", float4e2m1" : "");
}

// Checks the inputs' count, the scale (input 1) and zero point (input 2, optional) against x (input 0);
// returns the parameters with which scale each element takes.
LinearQuantParams check_params(const ir::Node& node, int64_t opset, const std::vector<Operand>& in, const char* sname,
                               const char* zname, const Fail& fail) {
  if (in.size() < 2 || in.size() > 3 || !in[0].given() || !in[1].given())
    raise(fail, std::string("takes 2 or 3 inputs (x, ") + sname + ", " + zname + "), x and " + sname + " required");
  if (node.outputs.size() != 1) raise(fail, "has one output, the node has " + std::to_string(node.outputs.size()));
  const Operand &x = in[0], &scale = in[1];
  if (!kScaleTypes.has(scale.dtype) || (opset < 19 && scale.dtype != DType::Float32))
    raise(fail, label(node, 1, sname) + " has type " + type_of(scale) + ", expected float32" +
                    (opset < 19 ? std::string(" (float16 and bfloat16 scales need opset 19)") : ", float16 or bfloat16"));
  LinearQuantParams p;
  const int64_t rank = int64_t(x.shape.size());
  const int64_t block = opset >= 21 ? node.attr_int("block_size", 0) : 0;
  if (block < 0) raise(fail, "block_size " + std::to_string(block) + " must be >= 0");
  const bool one = shape_numel(scale.shape) == 1 && scale.shape.size() <= 1;
  if (block > 0) {
    const int64_t axis = normalize_axis(node.attr_int("axis", 1), rank, fail);
    p.mode = Mode::Blocked;
    p.dim = x.shape[size_t(axis)];
    p.block = block;
    p.blocks = (p.dim + block - 1) / block;
    for (int64_t d = axis + 1; d < rank; ++d) p.inner *= x.shape[size_t(d)];
    Shape want = x.shape;
    want[size_t(axis)] = p.blocks;
    if (scale.shape != want)
      raise(fail, label(node, 1, sname) + " has shape " + shape_str(scale.shape) + ", expected " + shape_str(want) +
                      " (input 0's shape with ceil(" + std::to_string(p.dim) + " / block_size " + std::to_string(block) +
                      ") blocks along axis " + std::to_string(axis) + ")");
  } else if (!one) {
    if (opset < 13 || scale.shape.size() != 1)
      raise(fail, label(node, 1, sname) + " has shape " + shape_str(scale.shape) + ", expected a scalar" +
                      (opset < 13 ? std::string(" (per-axis quantization needs opset 13)")
                                  : std::string(" or a 1-D tensor") + (opset >= 21 ? " (or blocks: block_size > 0)" : "")));
    const int64_t axis = normalize_axis(node.attr_int("axis", 1), rank, fail);
    if (scale.shape[0] != x.shape[size_t(axis)])
      raise(fail, label(node, 1, sname) + " has " + std::to_string(scale.shape[0]) + " elements, expected " +
                      std::to_string(x.shape[size_t(axis)]) + " (the size of axis " + std::to_string(axis) + " of input 0)");
    p.mode = Mode::Axis;
    p.dim = x.shape[size_t(axis)];
    for (int64_t d = axis + 1; d < rank; ++d) p.inner *= x.shape[size_t(d)];
  }
  if (in.size() > 2 && in[2].given()) {
    const Operand& zp = in[2];
    if (shape_numel(zp.shape) != shape_numel(scale.shape) ||
        (p.mode == Mode::Blocked ? zp.shape != scale.shape : zp.shape.size() > 1))
      raise(fail, label(node, 2, zname) + " has shape " + shape_str(zp.shape) + ", expected the shape of '" + sname +
                      "' " + shape_str(scale.shape));
    p.zero_point = true;
  }
  return p;
}

// com.microsoft's QuantizeLinear and DequantizeLinear (ONNX Runtime's QDQ models with 16-bit or 4-bit types)
// are ONNX's at opset 21 (their types; no block_size in their schema): both are checked, and computed, as that.
int64_t onnx_opset_of(const ir::Node& node, int64_t opset) { return node.domain == ir::kMsDomain ? 21 : opset; }

}  // namespace

LinearQuantParams quantize_linear_params(const ir::Node& node, int64_t node_opset, const std::vector<Operand>& in,
                                         const Fail& fail) {
  const int64_t opset = onnx_opset_of(node, node_opset);
  const DTypeSet x_types = opset >= 19 ? DTypeSet{DType::Float32, DType::Float16, DType::BFloat16, DType::Int32}
                                       : DTypeSet{DType::Float32, DType::Int32};
  if (!in.empty() && in[0].given() && !x_types.has(in[0].dtype))
    raise(fail, label(node, 0, "x") + " has type " + type_of(in[0]) + ", expected float32" +
                    (opset >= 19 ? ", float16, bfloat16" : "") + " or int32");
  LinearQuantParams p = check_params(node, opset, in, "y_scale", "y_zero_point", fail);
  // The output type: the zero point's, else output_dtype (opset 21), else uint8.
  const int64_t output_dtype = opset >= 21 ? node.attr_int("output_dtype", 0) : 0;
  p.out = p.zero_point ? in[2].dtype : output_dtype ? DType(output_dtype) : DType::UInt8;
  if (p.zero_point && output_dtype && DType(output_dtype) != p.out)
    raise(fail, "output_dtype " + std::to_string(output_dtype) + " differs from the type of " +
                    label(node, 2, "y_zero_point") + ", " + type_of(in[2]));
  if (!quantized_type(p.out, opset, &p.lo, &p.hi)) {
    const std::string expected = ", expected uint8, int8" + quantized_types_from(opset);
    if (p.zero_point) raise(fail, label(node, 2, "y_zero_point") + " has type " + type_of(in[2]) + expected);
    raise(fail, "output_dtype " + std::to_string(output_dtype) + " (" + std::string(dtype_name(p.out)) + ") is not supported" +
                    expected);
  }
  p.saturate = node.attr_int("saturate", 1) != 0;
  return p;
}

LinearQuantParams dequantize_linear_params(const ir::Node& node, int64_t node_opset, const std::vector<Operand>& in,
                                           const Fail& fail) {
  const int64_t opset = onnx_opset_of(node, node_opset);
  if (!in.empty() && in[0].given()) {
    const DType t = in[0].dtype;
    if (t != DType::Int32 && !quantized_type(t, opset))
      raise(fail, label(node, 0, "x") + " has type " + type_of(in[0]) + ", expected uint8, int8" +
                      quantized_types_from(opset) + " or int32");
    if (in.size() > 2 && in[2].given() && in[2].dtype != t)
      raise(fail, label(node, 2, "x_zero_point") + " has type " + type_of(in[2]) + ", expected " + type_of(in[0]) +
                      " like input 'x'");
  }
  LinearQuantParams p = check_params(node, opset, in, "x_scale", "x_zero_point", fail);
  p.out = in[1].dtype;
  const int64_t output_dtype = opset >= 23 ? node.attr_int("output_dtype", 0) : 0;
  if (output_dtype && DType(output_dtype) != p.out)
    raise(fail, "output_dtype " + std::to_string(output_dtype) + " differs from the type of " + label(node, 1, "x_scale") +
                    ", " + type_of(in[1]));
  return p;
}

}  // namespace onnxgpu::ops

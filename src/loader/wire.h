// The protobuf wire format of an ONNX file, read just enough to keep the weights out of protobuf:
// a ModelProto is rewritten without the raw_data of its main graph's large initializers (the
// skeleton, a few KB to parse), and where each of those bytes lies in the file is noted. The loader
// then gives the tensors the file's own bytes (mapped into memory) instead of a parsed copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace onnxgpu::loader::wire {

// Where an initializer's raw data lies in the file.
struct Span {
  size_t offset = 0;
  size_t size = 0;
};

struct Skeleton {
  std::string bytes;                          // a ModelProto without the raw data listed in `raw`
  std::unordered_map<size_t, Span> raw;       // by initializer index in the main graph
};

// The skeleton of the serialized ModelProto at `data`, taking out raw data of at least `min_bytes`.
// Empty when the bytes are not well-formed protobuf as far as this reads (the caller then parses the
// file as it is, which reports what is wrong).
std::optional<Skeleton> split(const uint8_t* data, size_t size, size_t min_bytes);

}  // namespace onnxgpu::loader::wire

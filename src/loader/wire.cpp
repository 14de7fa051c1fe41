#include "loader/wire.h"

namespace onnxgpu::loader::wire {

namespace {

// onnx.proto's field numbers on the path to the weights.
constexpr uint32_t kModelGraph = 7;         // ModelProto.graph
constexpr uint32_t kGraphInitializer = 5;   // GraphProto.initializer (repeated TensorProto)
constexpr uint32_t kTensorRawData = 9;      // TensorProto.raw_data

constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// A bounded reader over one message's bytes.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      const uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

// One field: its number, wire type, where it starts (tag included) and its payload.
struct Field {
  uint32_t number = 0;
  uint32_t type = 0;
  const uint8_t* start = nullptr;
  const uint8_t* payload = nullptr;
  size_t payload_size = 0;  // for length-delimited fields
  const uint8_t* end = nullptr;
};

bool next(Reader& r, Field& f) {
  f.start = r.p;
  uint64_t tag = 0;
  if (!r.varint(tag)) return false;
  f.number = uint32_t(tag >> 3);
  f.type = uint32_t(tag & 7);
  if (f.number == 0 || (tag >> 3) > 0x1fffffff) return false;
  switch (f.type) {
    case kVarint: {
      uint64_t v;
      if (!r.varint(v)) return false;
      break;
    }
    case kFixed64:
      if (r.end - r.p < 8) return false;
      r.p += 8;
      break;
    case kFixed32:
      if (r.end - r.p < 4) return false;
      r.p += 4;
      break;
    case kLengthDelimited: {
      uint64_t n;
      if (!r.varint(n) || n > uint64_t(r.end - r.p)) return false;
      f.payload = r.p;
      f.payload_size = size_t(n);
      r.p += n;
      break;
    }
    default:
      return false;  // groups (deprecated) and invalid types: left to protobuf
  }
  f.end = r.p;
  return true;
}

void put_message(std::string& out, uint32_t number, const std::string& body) {
  put_varint(out, (uint64_t(number) << 3) | kLengthDelimited);
  put_varint(out, body.size());
  out += body;
}

struct Splitter {
  const uint8_t* base;
  size_t min_bytes;
  Skeleton s;
  size_t initializer = 0;

  bool tensor(const uint8_t* p, size_t n, std::string& out) {
    Reader r{p, p + n};
    int raw_fields = 0;
    while (r.p < r.end) {
      Field f;
      if (!next(r, f)) return false;
      // raw_data twice: protobuf keeps the last; left to it.
      if (f.number == kTensorRawData && ++raw_fields > 1) return false;
      if (f.number == kTensorRawData && f.type == kLengthDelimited && f.payload_size >= min_bytes) {
        s.raw[initializer] = Span{size_t(f.payload - base), f.payload_size};
        continue;
      }
      out.append(reinterpret_cast<const char*>(f.start), size_t(f.end - f.start));
    }
    return true;
  }

  bool graph(const uint8_t* p, size_t n, std::string& out) {
    Reader r{p, p + n};
    while (r.p < r.end) {
      Field f;
      if (!next(r, f)) return false;
      if (f.number == kGraphInitializer && f.type == kLengthDelimited) {
        std::string t;
        if (!tensor(f.payload, f.payload_size, t)) return false;
        put_message(out, f.number, t);
        ++initializer;
        continue;
      }
      out.append(reinterpret_cast<const char*>(f.start), size_t(f.end - f.start));
    }
    return true;
  }

  bool model(const uint8_t* p, size_t n) {
    Reader r{p, p + n};
    bool seen_graph = false;
    while (r.p < r.end) {
      Field f;
      if (!next(r, f)) return false;
      if (f.number == kModelGraph && f.type == kLengthDelimited) {
        // Two graph fields would be merged by protobuf: left to it.
        if (seen_graph) return false;
        seen_graph = true;
        std::string g;
        if (!graph(f.payload, f.payload_size, g)) return false;
        put_message(s.bytes, f.number, g);
        continue;
      }
      s.bytes.append(reinterpret_cast<const char*>(f.start), size_t(f.end - f.start));
    }
    return true;
  }
};

}  // namespace

std::optional<Skeleton> split(const uint8_t* data, size_t size, size_t min_bytes) {
  Splitter sp{data, min_bytes, {}, 0};
  if (!sp.model(data, size)) return std::nullopt;
  return std::move(sp.s);
}

}  // namespace onnxgpu::loader::wire

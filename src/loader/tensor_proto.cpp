#include "loader/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <memory>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loader/mapped_file.h"

namespace onnxgpu::loader {

namespace {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InvalidArgument("cannot open " + what + " '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Raw data of at least this many bytes is taken from a proto rather than copied (smaller tensors are
// cheaper to copy than to give an owner of their own).
constexpr size_t kTakeMinBytes = 4096;

DType dtype_from_onnx(int32_t t, const std::string& what) {
  switch (t) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: case 13: case 16:
    case 17: case 18: case 19: case 20: case 21: case 22: case 23: case 24: case 25: case 26:
      return DType(t);
    default:
      throw NotImplemented(what + ": unsupported ONNX element type " + std::to_string(t));
  }
}

// Copies `n` values from a repeated field into the tensor, converting to the element type.
template <class Field>
void copy_typed(const Field& field, Tensor& t, const std::string& what) {
  if (field.size() != t.numel())
    throw InvalidArgument(what + ": has " + std::to_string(field.size()) + " values, its shape " +
                          shape_str(t.shape()) + " needs " + std::to_string(t.numel()));
  visit_dtype(t.dtype(), [&]<class T>() {
    T* d = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        d[i].bits = uint16_t(field.Get(int(i)));  // int32_data holds the raw bits
      } else {
        d[i] = static_cast<T>(field.Get(int(i)));
      }
    }
  });
}


// A non-negative integer of an external_data entry ("offset", "length").
int64_t external_int(const std::string& key, const std::string& value, const std::string& what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < 0)
    throw InvalidArgument(what + ": external data " + key + " '" + value + "' is not a non-negative integer");
  return v;
}

// The file of an external location: inside the allowed folder after symlinks, a regular file.
std::filesystem::path external_file(const std::string& location, const ExternalDataDir& ext, const std::string& what) {
  namespace fs = std::filesystem;
  const std::string where = what + ": external data location '" + location + "'";
  if (location.empty()) throw InvalidArgument(what + ": external data without a location");
  if (fs::path(location).is_absolute()) throw InvalidArgument(where + " is absolute; it must be relative to the model's folder");
  std::error_code ec;
  const fs::path dir = ext.dir.empty() ? fs::current_path(ec) : fs::path(ext.dir);
  const fs::path root = fs::canonical(ext.root.empty() ? dir : fs::path(ext.root), ec);
  if (ec) throw InvalidArgument(where + ": the folder '" + (ext.root.empty() ? dir.string() : ext.root) + "' cannot be resolved");
  const fs::path file = fs::canonical(dir / location, ec);
  if (ec) throw InvalidArgument(where + ": cannot open external data file '" + (dir / location).string() + "'");
  const fs::path rel = file.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..")
    throw InvalidArgument(where + " resolves to '" + file.string() + "', outside the folder '" + root.string() +
                          "' that external data must stay in");
  if (!fs::is_regular_file(file, ec)) throw InvalidArgument(where + ": '" + file.string() + "' is not a regular file");
  return file;
}

// Reads a tensor's external data; the file and its length are checked before anything is allocated.
Tensor read_external(const onnx::TensorProto& p, const ExternalDataDir& ext, DType dt, const Shape& shape,
                     const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = external_int("offset", kv.value(), what);
    else if (kv.key() == "length") length = external_int("length", kv.value(), what);
  }
  const std::filesystem::path file = external_file(location, ext, what);
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(uint64_t(shape_numel(shape)), uint64_t(dtype_size(dt)), &nbytes))
    throw InvalidArgument(what + ": type and shape " + std::string(dtype_name(dt)) + shape_str(shape) + " are too large");
  if (length >= 0 && uint64_t(length) != nbytes)
    throw InvalidArgument(what + ": external data length " + std::to_string(length) + " does not match its type and shape " +
                          std::string(dtype_name(dt)) + shape_str(shape) + " (" + std::to_string(nbytes) + " bytes)");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(file, ec);
  if (ec || uint64_t(offset) > size || size - uint64_t(offset) < nbytes)
    throw InvalidArgument(what + ": external data file '" + file.string() + "' has " + std::to_string(ec ? 0 : size) +
                          " bytes, its offset " + std::to_string(offset) + " and type and shape " + std::string(dtype_name(dt)) +
                          shape_str(shape) + " need " + std::to_string(uint64_t(offset) + nbytes));
  std::shared_ptr<MappedFile> mapped;
  if (ext.files && nbytes > 0) {  // the file's pages themselves, where the element size aligns them
    try {
      mapped = ext.files->get(file.string());
    } catch (const InvalidArgument&) {  // (not mapped: read below, whose errors name the tensor)
    }
  }
  if (mapped) {
    std::byte* at = static_cast<std::byte*>(const_cast<void*>(mapped->data())) + offset;
    if (mapped->size() - std::min<uint64_t>(mapped->size(), uint64_t(offset)) >= nbytes &&
        reinterpret_cast<uintptr_t>(at) % dtype_size(dt) == 0)
      return Tensor::adopt(dt, shape, std::shared_ptr<std::byte>(std::move(mapped), at));
  }
  std::ifstream f(file, std::ios::binary);
  if (!f) throw InvalidArgument(what + ": cannot open external data file '" + file.string() + "'");
  Tensor t = Tensor::uninitialized(dt, shape);  // every byte is read below
  f.seekg(offset);
  f.read(reinterpret_cast<char*>(t.raw()), std::streamsize(nbytes));
  if (uint64_t(f.gcount()) != nbytes) throw InvalidArgument(what + ": external data file '" + file.string() + "' is too short");
  return t;
}

}  // namespace

namespace {

// The raw data of a tensor: the proto's, or bytes it was parted from (a mapped file's, see
// loader/wire.h). `take`: the proto's own string, to move into the tensor; `keep`: what holds the
// parted bytes, shared with the tensor when they can serve as its storage.
struct Raw {
  bool present = false;
  const char* data = nullptr;
  size_t size = 0;
  std::string* take = nullptr;
  std::shared_ptr<const void> keep;
};

Tensor from_proto(const onnx::TensorProto& p, Raw raw, const ExternalDataDir& ext, const std::string& what_in);

// A narrow type's stored bytes (raw, int32_data or external; 4-bit and 2-bit values packed, the first in the
// low bits) as one byte per element: the sign-extended value of int4 / int2.
Tensor narrow_from_proto(const onnx::TensorProto& p, Raw raw, const ExternalDataDir& ext, const std::string& what,
                         DType dt, const Shape& shape) {
  const int bits = dtype_bits(dt);
  const int64_t numel = shape_numel(shape);
  const int64_t stored = (numel * bits + 7) / 8;  // (numel is at most 2^40: from_proto)
  Tensor bytes;
  if (p.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    onnx::TensorProto as_bytes(p);
    as_bytes.set_data_type(int32_t(DType::UInt8));
    as_bytes.clear_dims();
    as_bytes.add_dims(stored);
    bytes = from_proto(as_bytes, Raw{}, ext, what);
  } else if (raw.present) {
    if (int64_t(raw.size) != stored)
      throw InvalidArgument(what + ": raw_data has " + std::to_string(raw.size) + " bytes, its type and shape " +
                            std::string(dtype_name(dt)) + shape_str(shape) + " need " + std::to_string(stored));
    bytes = Tensor(DType::UInt8, {stored});
    if (stored) std::memcpy(bytes.raw(), raw.data, size_t(stored));
  } else {
    if (p.int32_data_size() != stored)
      throw InvalidArgument(what + ": has " + std::to_string(p.int32_data_size()) + " values, its type and shape " +
                            std::string(dtype_name(dt)) + shape_str(shape) + " need " + std::to_string(stored) +
                            (bits < 8 ? " (" + std::to_string(8 / bits) + " values a byte)" : ""));
    bytes = Tensor(DType::UInt8, {stored});
    for (int64_t i = 0; i < stored; ++i) bytes.data<uint8_t>()[i] = uint8_t(p.int32_data(int(i)));
  }
  Tensor t(dt, shape);
  const uint8_t* in = bytes.data<uint8_t>();
  uint8_t* out = static_cast<uint8_t*>(t.raw());
  const unsigned mask = (1u << bits) - 1u;
  const bool pattern = dtype_is_narrow_float(dt);  // else an integer, kept sign-extended
  for (int64_t i = 0; i < numel; ++i) {
    const uint8_t v = uint8_t((in[i * bits / 8] >> (i * bits % 8)) & mask);
    out[i] = pattern ? v : narrow_from_double(dt, narrow_to_double(dt, v));
  }
  return t;
}

Tensor from_proto(const onnx::TensorProto& p, Raw raw, const ExternalDataDir& ext, const std::string& what_in) {
  std::string what = what_in.empty() ? "tensor '" + p.name() + "'" : what_in;
  DType dt = dtype_from_onnx(p.data_type(), what);
  Shape shape;
  for (int64_t d : p.dims()) {
    if (d < 0) throw InvalidArgument(what + ": negative dimension " + std::to_string(d));
    shape.push_back(d);
  }
  if (p.has_segment()) throw NotImplemented(what + ": segmented tensors are not supported");
  if (dtype_is_narrow(dt)) {
    if (shape_numel(shape) > (int64_t(1) << 40))
      throw InvalidArgument(what + ": type and shape " + std::string(dtype_name(dt)) + shape_str(shape) + " are too large");
    return narrow_from_proto(p, std::move(raw), ext, what, dt, shape);
  }
  if (dt == DType::String) {
    std::vector<std::string> v(p.string_data().begin(), p.string_data().end());
    if (int64_t(v.size()) != shape_numel(shape)) throw InvalidArgument(what + ": string count does not match its shape");
    return Tensor::strings(shape, std::move(v));
  }
  // Check the stored data against the shape before allocating, so a few bytes can't ask for gigabytes.
  const int64_t numel = shape_numel(shape);
  if (p.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) {
    size_t have = 0, unit = 1;
    if (raw.present) have = raw.size, unit = dtype_size(dt);
    else if (dt == DType::Float32) have = size_t(p.float_data_size());
    else if (dt == DType::Float64) have = size_t(p.double_data_size());
    else if (dt == DType::Int64) have = size_t(p.int64_data_size());
    else if (dt == DType::UInt32 || dt == DType::UInt64) have = size_t(p.uint64_data_size());
    else have = size_t(p.int32_data_size());
    if (have % unit != 0 || uint64_t(numel) != have / unit)
      throw InvalidArgument(what + (raw.present ? ": raw_data has " : ": has ") + std::to_string(have) +
                            (raw.present ? " bytes" : " values") + ", its type and shape " +
                            std::string(dtype_name(dt)) + shape_str(shape) + " need " + std::to_string(numel) +
                            (raw.present ? " x " + std::to_string(unit) + " bytes" : " values"));
  }
  if (p.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return read_external(p, ext, dt, shape, what);
  const size_t nbytes = size_t(numel) * dtype_size(dt);
  if (raw.present) {
    if (nbytes >= kTakeMinBytes) {
      if (raw.take) {
        auto owner = std::make_shared<std::string>(std::move(*raw.take));
        return Tensor::adopt(dt, shape, std::shared_ptr<std::byte>(owner, reinterpret_cast<std::byte*>(owner->data())));
      }
      // Parted bytes serve as they are when their address suits the element type.
      if (raw.keep && reinterpret_cast<uintptr_t>(raw.data) % dtype_size(dt) == 0)
        return Tensor::adopt(dt, shape, std::shared_ptr<std::byte>(std::const_pointer_cast<void>(raw.keep),
                                                                   reinterpret_cast<std::byte*>(const_cast<char*>(raw.data))));
    }
    Tensor t = Tensor::uninitialized(dt, shape);
    if (nbytes) std::memcpy(t.raw(), raw.data, nbytes);
    return t;
  }
  Tensor t(dt, shape);
  switch (dt) {
    case DType::Float32: copy_typed(p.float_data(), t, what); break;
    case DType::Float64: copy_typed(p.double_data(), t, what); break;
    case DType::Int64: copy_typed(p.int64_data(), t, what); break;
    case DType::UInt32: case DType::UInt64: copy_typed(p.uint64_data(), t, what); break;
    default: copy_typed(p.int32_data(), t, what); break;  // int8/16/32, uint8/16, bool, float16, bfloat16
  }
  return t;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const ExternalDataDir& ext, const std::string& what) {
  Raw raw;
  if (p.has_raw_data()) raw = Raw{true, p.raw_data().data(), p.raw_data().size(), nullptr, nullptr};
  return from_proto(p, std::move(raw), ext, what);
}

Tensor take_tensor_from_proto(onnx::TensorProto& p, const ExternalDataDir& ext, const std::string& what) {
  Raw raw;
  if (p.has_raw_data()) raw = Raw{true, p.raw_data().data(), p.raw_data().size(), p.mutable_raw_data(), nullptr};
  return from_proto(p, std::move(raw), ext, what);
}

Tensor tensor_from_proto_and_bytes(const onnx::TensorProto& p, const void* raw_data, size_t size,
                                   std::shared_ptr<const void> keep, const ExternalDataDir& ext, const std::string& what) {
  return from_proto(p, Raw{true, static_cast<const char*>(raw_data), size, nullptr, std::move(keep)}, ext, what);
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p) {
  p.Clear();
  p.set_name(name);
  p.set_data_type(int32_t(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  if (t.dtype() == DType::String) {
    for (const auto& s : t.string_data()) p.add_string_data(s);
  } else if (dtype_bits(t.dtype()) < 8) {  // packed, the first value in the low bits
    const int bits = dtype_bits(t.dtype());
    std::string packed(size_t((t.numel() * bits + 7) / 8), '\0');
    const uint8_t* in = static_cast<const uint8_t*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i)
      packed[size_t(i * bits / 8)] = char(uint8_t(packed[size_t(i * bits / 8)]) | ((in[i] & ((1u << bits) - 1u)) << (i * bits % 8)));
    p.set_raw_data(std::move(packed));
  } else {
    p.set_raw_data(t.raw(), t.nbytes());
  }
}

std::pair<std::string, Tensor> read_tensor_pb(const std::string& path) {
  std::string bytes = read_file(path, "tensor file");
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) throw InvalidArgument("'" + path + "' is not a valid ONNX TensorProto file");
  std::string dir = std::filesystem::path(path).parent_path().string();
  return {p.name(), tensor_from_proto(p, {dir, "", nullptr}, "tensor file '" + path + "'")};
}

void write_tensor_pb(const std::string& path, const std::string& name, const Tensor& t) {
  onnx::TensorProto p;
  tensor_to_proto(t, name, p);
  std::ofstream f(path, std::ios::binary);
  if (!f || !p.SerializeToOstream(&f)) throw Error("cannot write '" + path + "'");
}

namespace {
const char* npy_descr(DType t) {
  switch (t) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Float16: return "<f2";
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Int16: return "<i2";
    case DType::UInt16: return "<u2";
    case DType::Int32: return "<i4";
    case DType::UInt32: return "<u4";
    case DType::Int64: return "<i8";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
    default: return nullptr;
  }
}
}  // namespace

Tensor read_npy(const std::string& path) {
  std::string b = read_file(path, ".npy file");
  auto bad = [&](const std::string& why) { return InvalidArgument("'" + path + "' is not a valid .npy file: " + why); };
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw bad("missing magic");
  int major = uint8_t(b[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = uint8_t(b[8]) | (size_t(uint8_t(b[9])) << 8);
    hstart = 10;
  } else {
    if (b.size() < 12) throw bad("truncated header");
    hlen = uint8_t(b[8]) | (size_t(uint8_t(b[9])) << 8) | (size_t(uint8_t(b[10])) << 16) | (size_t(uint8_t(b[11])) << 24);
    hstart = 12;
  }
  if (hstart + hlen > b.size()) throw bad("truncated header");
  std::string h = b.substr(hstart, hlen);
  auto field = [&](const std::string& key) {
    size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) throw bad("header lacks '" + key + "'");
    size_t c = h.find(':', k);
    if (c == std::string::npos) throw bad("malformed header");
    return c + 1;
  };
  size_t d = h.find('\'', field("descr"));
  size_t d2 = h.find('\'', d + 1);
  if (d == std::string::npos || d2 == std::string::npos) throw bad("malformed descr");
  std::string descr = h.substr(d + 1, d2 - d - 1);
  if (h.find("True", field("fortran_order")) < h.find(',', field("fortran_order"))) throw bad("Fortran order is not supported");
  size_t s1 = h.find('(', field("shape")), s2 = h.find(')', s1);
  if (s1 == std::string::npos || s2 == std::string::npos) throw bad("malformed shape");
  Shape shape;
  std::stringstream ss(h.substr(s1 + 1, s2 - s1 - 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    shape.push_back(std::stoll(item));
  }
  DType dt = DType::Undefined;
  for (DType c : {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::UInt8, DType::Int16, DType::UInt16,
                  DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Bool}) {
    std::string want = npy_descr(c);
    if (descr == want || (descr.size() == 3 && want.size() == 3 && descr.substr(1) == want.substr(1) &&
                          (descr[0] == '|' || descr[0] == '<' || descr[0] == '='))) {
      dt = c;
      break;
    }
  }
  if (dt == DType::Undefined) throw bad("unsupported dtype '" + descr + "'");
  Tensor t(dt, shape);
  if (b.size() - hstart - hlen < t.nbytes()) throw bad("data is shorter than its shape");
  if (t.nbytes()) std::memcpy(t.raw(), b.data() + hstart + hlen, t.nbytes());
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = npy_descr(t.dtype());
  if (!descr) throw NotImplemented("cannot write " + t.describe() + " as .npy");
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.rank() > 1) shape.pop_back();
  shape += ")";
  std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write '" + path + "'");
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = uint16_t(h.size());
  f.put(char(hl & 0xff));
  f.put(char(hl >> 8));
  f.write(h.data(), std::streamsize(h.size()));
  f.write(static_cast<const char*>(t.raw()), std::streamsize(t.nbytes()));
}

Tensor read_tensor_file(const std::string& path) {
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".npy") return read_npy(path);
  return read_tensor_pb(path).second;
}

}  // namespace onnxgpu::loader

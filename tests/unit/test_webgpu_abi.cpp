// Loading Dawn and resolving the declared functions. (The struct layouts are checked at compile
// time by the static_asserts in webgpu/abi.h, which this file includes.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "onnxgpu/error.h"
#include "webgpu/abi.h"
#include "webgpu/dawn.h"

namespace onnxgpu::webgpu {
namespace {

TEST(WebGpuAbi, LoadsDawnAndResolvesEveryFunction) {
  const Dawn& d = dawn();
  EXPECT_FALSE(d.path.empty());
  int resolved = 0, total = 0;
#define ONNXGPU_COUNT(name, ret, params) \
  ++total;                               \
  if (d.name) ++resolved;                \
  else ADD_FAILURE() << "wgpu" #name " is not resolved";
  WGPU_FUNCTIONS(ONNXGPU_COUNT)
#undef ONNXGPU_COUNT
  EXPECT_EQ(resolved, total);
  EXPECT_GT(total, 60);
}

TEST(WebGpuAbi, LoadedOneOfTheCandidatePaths) {
  auto paths = dawn_candidate_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_NE(std::find(paths.begin(), paths.end(), dawn().path), paths.end()) << dawn().path;
  for (const std::string& p : paths) EXPECT_NE(p.find("libwebgpu_wrapper.so"), std::string::npos) << p;
}

TEST(WebGpuAbi, MissingLibraryIsAnErrorNamingThePath) {
  try {
    open_dawn({"/nonexistent/dir/libwebgpu_wrapper.so"});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("/nonexistent/dir/libwebgpu_wrapper.so"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ONNXGPU_DAWN_LIB"), std::string::npos) << msg;
  }
}

TEST(WebGpuAbi, LibraryWithoutTheFunctionsIsAnError) {
  try {
    open_dawn({"libm.so.6"});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("libm.so.6"), std::string::npos) << msg;
    EXPECT_NE(msg.find("wgpuCreateInstance"), std::string::npos) << msg;
  }
}

TEST(WebGpuAbi, StringViews) {
  std::string s = "abc";
  EXPECT_EQ(to_string(to_view(s)), "abc");
  EXPECT_EQ(to_string(to_view("xyz")), "xyz");
  EXPECT_EQ(to_string(WGPUStringView{nullptr, 0}), "");
  EXPECT_EQ(to_string(WGPUStringView{"abcdef", 2}), "ab");
}

}  // namespace
}  // namespace onnxgpu::webgpu

#include <gtest/gtest.h>

#include <cmath>

#include "ops/broadcast.h"
#include "onnxgpu/tensor.h"

using namespace onnxgpu;

TEST(Tensor, ZeroFilledWithShape) {
  Tensor t(DType::Int64, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 48u);
  for (int64_t v : t.span<int64_t>()) EXPECT_EQ(v, 0);
  EXPECT_THROW(t.data<float>(), Error);
}

TEST(Tensor, ReshapeSharesStorageCloneDoesNot) {
  Tensor t = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  Tensor r = t.reshaped({2, 2});
  Tensor c = t.clone();
  t.data<float>()[0] = 9;
  EXPECT_EQ(r.data<float>()[0], 9);
  EXPECT_EQ(c.data<float>()[0], 1);
  EXPECT_THROW(t.reshaped({3}), InvalidArgument);
}

TEST(Float16, RoundTripsAndRounds) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(float(Float16(f)), f) << f;
  EXPECT_TRUE(std::isinf(float(Float16(1e6f))));
  EXPECT_TRUE(std::isnan(float(Float16(NAN))));
  EXPECT_EQ(float(Float16(1.0f + 1.0f / 4096)), 1.0f);  // halfway rounds to even
}

TEST(Broadcast, ShapesAndIndexMap) {
  EXPECT_EQ(ops::broadcast_shapes(Shape{2, 1, 3}, Shape{4, 1}), (Shape{2, 4, 3}));
  EXPECT_THROW(ops::broadcast_shapes(Shape{2, 3}, Shape{4}), InvalidArgument);
  auto m = ops::broadcast_index_map({3}, {2, 3});
  EXPECT_EQ(m, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  auto m2 = ops::broadcast_index_map({2, 1}, {2, 3});
  EXPECT_EQ(m2, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
}

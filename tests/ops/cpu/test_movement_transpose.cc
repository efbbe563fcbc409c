// Transpose against "output index i reads input index perm^-1(i)" with plain loops,
// for random permutations, odd sizes, every dtype, empty tensors and the BERT shapes.
#include "test_movement_util.h"

#include <algorithm>
#include <numeric>

namespace ember::test {
namespace {

Tensor transpose_reference(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape()[p]);
  return expected_by_index(x, out, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> in(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) in[perm[d]] = o[d];
    return ravel(in, x.shape());
  });
}

Node transpose_node(const std::vector<int64_t>& perm) {
  Node n = make_node("Transpose", 1);
  n.attributes.set_ints("perm", perm);
  return n;
}

TEST(MovementTranspose, EveryPermutationOfRank4ForEveryDtype) {
  std::mt19937 rng(11);
  for (DType dt : movement_dtypes()) {
    const Tensor x = random_tensor(dt, {2, 3, 5, 7}, rng);
    std::vector<int64_t> perm{0, 1, 2, 3};
    do {
      expect_same(run(transpose_node(perm), 13, {&x})[0], transpose_reference(x, perm));
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(MovementTranspose, DefaultPermReversesDims) {
  std::mt19937 rng(12);
  const Tensor x = random_tensor(DType::Int64, {3, 1, 4, 2, 5}, rng);
  expect_same(run(make_node("Transpose", 1), 1, {&x})[0], transpose_reference(x, {4, 3, 2, 1, 0}));
}

TEST(MovementTranspose, BertAttentionShapes) {
  std::mt19937 rng(13);
  const Tensor x = random_tensor(DType::Float32, {2, 9, 12, 16}, rng);
  expect_same(run(transpose_node({0, 2, 1, 3}), 13, {&x})[0], transpose_reference(x, {0, 2, 1, 3}));
  const Tensor y = random_tensor(DType::Float32, {2, 12, 9, 16}, rng);
  expect_same(run(transpose_node({0, 1, 3, 2}), 13, {&y})[0], transpose_reference(y, {0, 1, 3, 2}));
}

TEST(MovementTranspose, RandomRanksUpTo6WithSizeOneDims) {
  std::mt19937 rng(14);
  for (int iter = 0; iter < 40; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 6);
    Shape shape;
    for (int d = 0; d < rank; ++d) shape.push_back(1 + rng() % 4);
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const Tensor x = random_tensor(DType::Float16, shape, rng);
    expect_same(run(transpose_node(perm), 21, {&x})[0], transpose_reference(x, perm));
  }
}

TEST(MovementTranspose, LargeEnoughToRunInParallel) {
  std::mt19937 rng(15);
  const Tensor x = random_tensor(DType::Float32, {64, 33, 40}, rng);
  expect_same(run(transpose_node({2, 0, 1}), 13, {&x})[0], transpose_reference(x, {2, 0, 1}));
}

// NCHW <-> NHWC (the layout planning's transposes) and a plain matrix run as tiled
// batched transposes: sizes that are not multiples of the tile, 1- to 8-byte elements.
TEST(MovementTranspose, ChannelsLastAndMatrixTransposesInTiles) {
  std::mt19937 rng(17);
  for (DType dt : {DType::Float32, DType::UInt8, DType::Float16, DType::Int64}) {
    const Tensor image = random_tensor(dt, {2, 3, 37, 41}, rng);
    expect_same(run(transpose_node({0, 2, 3, 1}), 13, {&image})[0], transpose_reference(image, {0, 2, 3, 1}));
    const Tensor nhwc = random_tensor(dt, {2, 9, 7, 70}, rng);
    expect_same(run(transpose_node({0, 3, 1, 2}), 13, {&nhwc})[0], transpose_reference(nhwc, {0, 3, 1, 2}));
    const Tensor rgb = random_tensor(dt, {2, 3, 70, 61}, rng);  // 3 and 4 channels: interleaved, in two chunks
    expect_same(run(transpose_node({0, 2, 3, 1}), 13, {&rgb})[0], transpose_reference(rgb, {0, 2, 3, 1}));
    const Tensor rgba = random_tensor(dt, {1, 4, 67, 65}, rng);
    expect_same(run(transpose_node({0, 2, 3, 1}), 13, {&rgba})[0], transpose_reference(rgba, {0, 2, 3, 1}));
    const Tensor matrix = random_tensor(dt, {1, 65, 1, 33}, rng);
    expect_same(run(transpose_node({3, 1, 2, 0}), 13, {&matrix})[0], transpose_reference(matrix, {3, 1, 2, 0}));
  }
}

// com.ember ToBlocked / FromBlocked (the CPU's blocked layout): N x C x D.. <->
// N x C/b x D.. x b, and from blocked on to channels-last N x D.. x C, for blocks of 8
// and 16, one to three spatial dims and 1- to 8-byte elements.
Node blocked_node(const std::string& op) {
  Node n = make_node(op, 1);
  n.domain = "com.ember";
  return n;
}

TEST(MovementBlocked, ToAndFromBlockedAndOnToChannelsLast) {
  std::mt19937 rng(19);
  for (DType dt : {DType::Float32, DType::UInt8, DType::Float16, DType::Int64})
    for (const Shape& plain : {Shape{2, 16, 7, 5}, Shape{1, 32, 9}, Shape{2, 16, 3, 2, 5}, Shape{3, 48, 1, 1}})
      for (int64_t b : {8, 16}) {
        SCOPED_TRACE(shape_to_string(plain) + " block " + std::to_string(b));
        const size_t spatial = plain.size() - 2;
        Shape shape{plain[0], plain[1] / b}, last{plain[0]};
        shape.insert(shape.end(), plain.begin() + 2, plain.end());
        shape.push_back(b);
        last.insert(last.end(), plain.begin() + 2, plain.end());
        last.push_back(plain[1]);
        const Tensor x = random_tensor(dt, plain, rng);
        Node to = blocked_node("ToBlocked");
        to.attributes.set_int("block", b);
        const Tensor y = run(to, 1, {&x})[0];
        expect_same(y, expected_by_index(x, shape, [&](const std::vector<int64_t>& o) {
          std::vector<int64_t> in{o[0], o[1] * b + o.back()};
          in.insert(in.end(), o.begin() + 2, o.begin() + 2 + spatial);
          return ravel(in, plain);
        }));
        expect_same(run(blocked_node("FromBlocked"), 1, {&y})[0], x);
        Node to_last = blocked_node("FromBlocked");
        to_last.attributes.set_int("channels_last", 1);
        expect_same(run(to_last, 1, {&y})[0], expected_by_index(y, last, [&](const std::vector<int64_t>& o) {
          std::vector<int64_t> in{o[0], o.back() / b};
          in.insert(in.end(), o.begin() + 1, o.begin() + 1 + spatial);
          in.push_back(o.back() % b);
          return ravel(in, shape);
        }));
      }
}

TEST(MovementBlocked, ChannelsThatDoNotFillBlocksRaise) {
  std::mt19937 rng(20);
  const Tensor x = random_tensor(DType::Float32, {1, 12, 3, 3}, rng);
  Node to = blocked_node("ToBlocked");
  to.attributes.set_int("block", 8);
  expect_error(to, "multiple of 8", [&] { run(to, 1, {&x}); });
  to.attributes.set_int("block", 4);
  expect_error(to, "block must be 8 or 16", [&] { run(to, 1, {&x}); });
}

// com.ember ChannelShuffle: the axis's C entries as g rows of C/g, transposed:
// Y[.., k g + j, ..] = X[.., j C/g + k, ..]. NCHW (axis 1, whole planes move), channels-
// last (axis 3 or -1: each position's channels interleave; g = 2 has its own kernel),
// groups of one channel, and every element size.
Node channel_shuffle_node(int64_t group, int64_t axis) {
  Node n = make_node("ChannelShuffle", 1);
  n.domain = "com.ember";
  n.attributes.set_int("group", group);
  n.attributes.set_int("axis", axis);
  return n;
}

Tensor channel_shuffle_reference(const Tensor& x, int64_t group, int64_t axis) {
  const int64_t per_group = x.shape()[axis] / group;
  return expected_by_index(x, x.shape(), [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> in = o;
    in[axis] = o[axis] % group * per_group + o[axis] / group;
    return ravel(in, x.shape());
  });
}

TEST(MovementChannelShuffle, MatchesTheSplitTransposeAndJoinOfTheAxis) {
  std::mt19937 rng(23);
  struct Case {
    Shape shape;
    int64_t group, axis;
  };
  for (const Case& c : {Case{{2, 12, 5, 7}, 2, 1}, Case{{1, 116, 6, 6}, 2, 1}, Case{{2, 5, 7, 12}, 3, 3},
                        Case{{1, 7, 7, 58}, 2, -1}, Case{{3, 4, 3, 32}, 4, 3}, Case{{2, 6, 4, 4}, 6, 1},
                        Case{{2, 9, 1, 1}, 3, 1}})
    for (DType dt : movement_dtypes()) {
      SCOPED_TRACE(shape_to_string(c.shape) + " group " + std::to_string(c.group) + " axis " +
                   std::to_string(c.axis) + " " + dtype_name(dt));
      const Tensor x = random_tensor(dt, c.shape, rng);
      const int64_t axis = c.axis < 0 ? c.axis + 4 : c.axis;
      expect_same(run(channel_shuffle_node(c.group, c.axis), 1, {&x})[0], channel_shuffle_reference(x, c.group, axis));
    }
}

TEST(MovementChannelShuffle, GroupsThatDoNotDivideTheAxisRaise) {
  std::mt19937 rng(24);
  const Tensor x = random_tensor(DType::Float32, {1, 10, 2, 2}, rng);
  const Node shuffle = channel_shuffle_node(4, 1);
  expect_error(shuffle, "divide the 10 entries of axis 1", [&] { run(shuffle, 1, {&x}); });
  const Node outside = channel_shuffle_node(2, 4);
  expect_error(outside, "outside X's rank 4", [&] { run(outside, 1, {&x}); });
}

TEST(MovementTranspose, EmptyAndScalarAndNegativePerm) {
  std::mt19937 rng(16);
  const Tensor x = random_tensor(DType::Float32, {3, 0, 2}, rng);
  expect_same(run(transpose_node({2, 0, 1}), 13, {&x})[0], transpose_reference(x, {2, 0, 1}));
  const Tensor s = random_tensor(DType::Bool, {}, rng);
  expect_same(run(make_node("Transpose", 1), 13, {&s})[0], s);
  const Tensor y = random_tensor(DType::Int64, {2, 3}, rng);
  expect_same(run(transpose_node({-1, 0}), 13, {&y})[0], transpose_reference(y, {1, 0}));
  const Node bad = transpose_node({0, 0});
  expect_error(bad, "more than once", [&] { run(bad, 13, {&y}); });
}

}  // namespace
}  // namespace ember::test

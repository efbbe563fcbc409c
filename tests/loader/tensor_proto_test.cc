// TensorProto decoding: every dtype from raw_data and from its typed field, and the
// errors for malformed tensors.
#include "helpers.h"
#include "loader/tensor_proto.h"

#include <functional>
#include <limits>

namespace ember::test {
namespace {

using TP = onnx::TensorProto;

struct Case {
  DType dtype;
  std::vector<int64_t> dims;
  std::string expected;  // the tensor's bytes, little-endian
  std::function<void(TP&)> fill_typed;
};

template <class T, class Field>
void put(Field* field, const std::vector<T>& values) {
  for (const T& v : values) field->Add(v);
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const std::vector<float> f32 = {1.5f, -2.25f, 3e-3f, 1e30f, -0.0f};
  c.push_back({DType::Float32, {5}, bytes_of(f32), [=](TP& t) { put(t.mutable_float_data(), f32); }});
  const std::vector<double> f64 = {1.0 / 3, -1e300, 42};
  c.push_back({DType::Float64, {3}, bytes_of(f64), [=](TP& t) { put(t.mutable_double_data(), f64); }});
  // 16-bit floats travel as bit patterns in int32_data.
  const std::vector<uint16_t> f16 = {0x3C00, 0xC000, 0x7BFF};
  c.push_back({DType::Float16, {3}, bytes_of(f16), [=](TP& t) { for (auto v : f16) t.add_int32_data(v); }});
  const std::vector<uint16_t> bf16 = {0x3F80, 0xC040, 0x0001, 0xFF80};
  c.push_back({DType::BFloat16, {2, 2}, bytes_of(bf16), [=](TP& t) { for (auto v : bf16) t.add_int32_data(v); }});
  const std::vector<int8_t> i8 = {-128, 5, 127};
  c.push_back({DType::Int8, {3}, bytes_of(i8), [=](TP& t) { for (auto v : i8) t.add_int32_data(v); }});
  const std::vector<uint8_t> u8 = {0, 200, 255};
  c.push_back({DType::UInt8, {1, 3}, bytes_of(u8), [=](TP& t) { for (auto v : u8) t.add_int32_data(v); }});
  const std::vector<int16_t> i16 = {-30000, 7, 32767};
  c.push_back({DType::Int16, {3}, bytes_of(i16), [=](TP& t) { for (auto v : i16) t.add_int32_data(v); }});
  const std::vector<uint16_t> u16 = {0, 40000, 65535};
  c.push_back({DType::UInt16, {3}, bytes_of(u16), [=](TP& t) { for (auto v : u16) t.add_int32_data(v); }});
  const std::vector<int32_t> i32 = {std::numeric_limits<int32_t>::min(), -1, 7};
  c.push_back({DType::Int32, {3}, bytes_of(i32), [=](TP& t) { put(t.mutable_int32_data(), i32); }});
  const std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(), -1, int64_t{1} << 40};
  c.push_back({DType::Int64, {3}, bytes_of(i64), [=](TP& t) { put(t.mutable_int64_data(), i64); }});
  const std::vector<uint32_t> u32 = {0, 4000000000u, 7};
  c.push_back({DType::UInt32, {3}, bytes_of(u32), [=](TP& t) { for (auto v : u32) t.add_uint64_data(v); }});
  const std::vector<uint64_t> u64 = {std::numeric_limits<uint64_t>::max(), 1, uint64_t{1} << 63};
  c.push_back({DType::UInt64, {3}, bytes_of(u64), [=](TP& t) { put(t.mutable_uint64_data(), u64); }});
  const std::vector<uint8_t> b = {1, 0, 1, 1};
  c.push_back({DType::Bool, {4}, bytes_of(b), [=](TP& t) { for (auto v : b) t.add_int32_data(v); }});
  // Complex numbers take two entries of float_data / double_data each.
  const std::vector<float> c64 = {1, -2, 3.5f, 4};
  c.push_back({DType::Complex64, {2}, bytes_of(c64), [=](TP& t) { put(t.mutable_float_data(), c64); }});
  const std::vector<double> c128 = {1, -2, 3.5, 1e-300};
  c.push_back({DType::Complex128, {2}, bytes_of(c128), [=](TP& t) { put(t.mutable_double_data(), c128); }});
  // 8-bit floats: one byte per int32.
  const std::vector<uint8_t> f8 = {0x00, 0x7E, 0x81, 0xFF, 0x38};
  for (DType d : {DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
                  DType::Float8E5M2FNUZ, DType::Float8E8M0})
    c.push_back({d, {5}, bytes_of(f8), [=](TP& t) { for (auto v : f8) t.add_int32_data(v); }});
  // 4-bit types: two per byte, low nibble first; elements 1, 15, 7 -> 0xF1 0x07.
  const std::vector<uint8_t> packed = {0xF1, 0x07};
  for (DType d : {DType::Int4, DType::UInt4, DType::Float4E2M1})
    c.push_back({d, {3}, bytes_of(packed), [=](TP& t) { for (auto v : packed) t.add_int32_data(v); }});
  // 2-bit types: four per byte, lowest bits first; elements 2, 3, 0, 1, 1 -> 0x4E 0x01
  // (onnx.helper.make_tensor packs int2 [-2, -1, 0, 1, 1] into int32_data 78, 1).
  const std::vector<uint8_t> packed2 = {0x4E, 0x01};
  for (DType d : {DType::Int2, DType::UInt2})
    c.push_back({d, {5}, bytes_of(packed2), [=](TP& t) { for (auto v : packed2) t.add_int32_data(v); }});
  return c;
}

TP proto_for(const Case& c) {
  TP t;
  t.set_name("w");
  t.set_data_type(static_cast<int>(c.dtype));
  for (int64_t d : c.dims) t.add_dims(d);
  return t;
}

TEST(TensorProto, EveryDtypeFromRawDataMatchesTheBytes) {
  for (const Case& c : cases()) {
    TP t = proto_for(c);
    t.set_raw_data(c.expected);
    Tensor out = tensor_from_proto(t, "");
    EXPECT_EQ(out.dtype(), c.dtype) << dtype_name(c.dtype);
    EXPECT_EQ(out.shape(), Shape(c.dims.begin(), c.dims.end())) << dtype_name(c.dtype);
    EXPECT_EQ(bytes_of(out), c.expected) << dtype_name(c.dtype);
  }
}

TEST(TensorProto, EveryDtypeFromItsTypedFieldMatchesTheBytes) {
  for (const Case& c : cases()) {
    TP t = proto_for(c);
    c.fill_typed(t);
    Tensor out = tensor_from_proto(t, "");
    EXPECT_EQ(out.dtype(), c.dtype) << dtype_name(c.dtype);
    EXPECT_EQ(bytes_of(out), c.expected) << dtype_name(c.dtype);
  }
}

TEST(TensorProto, BoolBytesAreNormalizedToZeroOrOne) {
  TP t;
  t.set_name("b");
  t.set_data_type(TP::BOOL);
  t.add_dims(3);
  t.set_raw_data(std::string("\x07\x00\x01", 3));
  EXPECT_EQ(bytes_of(tensor_from_proto(t, "")), std::string("\x01\x00\x01", 3));
}

TEST(TensorProto, ScalarAndEmptyTensors) {
  TP scalar = float_tensor("s", {}, {2.5f});
  Tensor s = tensor_from_proto(scalar, "");
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(*s.data_as<float>(), 2.5f);
  TP empty;
  empty.set_name("e");
  empty.set_data_type(TP::INT64);
  empty.add_dims(0);
  empty.add_dims(int64_t{1} << 40);  // no elements, however large the other dims
  EXPECT_EQ(tensor_from_proto(empty, "").numel(), 0);
}

TEST(TensorProto, RawDataSizeMismatchNamesTheTensorAndTheExpectedSize) {
  TP t = float_tensor("weights", {2, 2}, {1, 2, 3});
  std::string msg = error_of([&] { tensor_from_proto(t, ""); });
  EXPECT_NE(msg.find("tensor 'weights'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("12 bytes of raw_data, expected 16"), std::string::npos) << msg;
}

TEST(TensorProto, TypedFieldCountMismatchIsAnError) {
  TP t;
  t.set_name("w");
  t.set_data_type(TP::FLOAT);
  t.add_dims(2);
  t.add_dims(2);
  for (float v : {1.f, 2.f, 3.f}) t.add_float_data(v);
  std::string msg = error_of([&] { tensor_from_proto(t, ""); });
  EXPECT_NE(msg.find("3 values in float_data, expected 4"), std::string::npos) << msg;
}

TEST(TensorProto, ValuesInTheWrongFieldAreAnError) {
  TP t;
  t.set_name("w");
  t.set_data_type(TP::FLOAT);
  t.add_dims(1);
  t.add_int64_data(3);
  std::string msg = error_of([&] { tensor_from_proto(t, ""); });
  EXPECT_NE(msg.find("stores its values in int64_data"), std::string::npos) << msg;
}

TEST(TensorProto, StringTensorsComeFromStringData) {
  TP t;
  t.set_name("labels");
  t.set_data_type(TP::STRING);
  t.add_dims(3);
  for (const char* s : {"cat", "", "的"}) t.add_string_data(s);
  const Tensor labels = tensor_from_proto(t, "");
  ASSERT_EQ(labels.dtype(), DType::String);
  EXPECT_EQ(labels.data_as<std::string>()[0], "cat");
  EXPECT_EQ(labels.data_as<std::string>()[1], "");
  EXPECT_EQ(labels.data_as<std::string>()[2], "的");

  t.add_dims(2);  // [3, 2]: 6 strings expected
  std::string msg = error_of([&] { tensor_from_proto(t, ""); });
  EXPECT_NE(msg.find("'labels' has 3 values in string_data, expected 6"), std::string::npos) << msg;
  t.clear_dims();
  t.add_dims(3);
  t.set_raw_data("abc");
  msg = error_of([&] { tensor_from_proto(t, ""); });
  EXPECT_NE(msg.find("expected string_data"), std::string::npos) << msg;
}

TEST(TensorProto, HostileDimsAreRefusedBeforeAllocating) {
  TP negative = float_tensor("n", {2, -3}, {});
  EXPECT_NE(error_of([&] { tensor_from_proto(negative, ""); }).find("negative dimension"), std::string::npos);
  TP overflow = float_tensor("o", {int64_t{1} << 40, int64_t{1} << 40}, {1});
  EXPECT_NE(error_of([&] { tensor_from_proto(overflow, ""); }).find("too many elements"), std::string::npos);
  // 4 TB declared, 4 bytes given: the size check comes before any allocation.
  TP huge = float_tensor("h", {int64_t{1} << 40}, {1});
  EXPECT_NE(error_of([&] { tensor_from_proto(huge, ""); }).find("expected 4398046511104"), std::string::npos);
  TP typed_huge;
  typed_huge.set_name("t");
  typed_huge.set_data_type(TP::DOUBLE);
  typed_huge.add_dims(int64_t{1} << 50);
  typed_huge.add_double_data(1);
  EXPECT_NE(error_of([&] { tensor_from_proto(typed_huge, ""); }).find("1 values in double_data"), std::string::npos);
}

TEST(TensorProto, UnknownAndMissingDataTypesAreErrors) {
  TP t = float_tensor("w", {1}, {1});
  t.set_data_type(27);  // newer than ember
  EXPECT_NE(error_of([&] { tensor_from_proto(t, ""); }).find("data type 27 is not supported"), std::string::npos);
  t.clear_data_type();
  EXPECT_NE(error_of([&] { tensor_from_proto(t, ""); }).find("no data type"), std::string::npos);
}

TEST(TensorProto, SparseTensorsAreDensifiedFromLinearAndCoordinateIndices) {
  onnx::SparseTensorProto sp;
  sp.add_dims(2);
  sp.add_dims(3);
  *sp.mutable_values() = float_tensor("s", {2}, {4.f, -1.f});
  auto* idx = sp.mutable_indices();
  idx->set_data_type(TP::INT64);
  idx->add_dims(2);
  for (int64_t i : {1, 5}) idx->add_int64_data(i);
  Tensor linear = tensor_from_sparse_proto(sp, "");
  EXPECT_EQ(bytes_of(linear), bytes_of(std::vector<float>{0, 4, 0, 0, 0, -1}));

  idx->clear_int64_data();
  idx->add_dims(2);  // [nnz, rank] coordinates: (0, 1) and (1, 2)
  for (int64_t i : {0, 1, 1, 2}) idx->add_int64_data(i);
  EXPECT_EQ(bytes_of(tensor_from_sparse_proto(sp, "")), bytes_of(linear));

  idx->set_int64_data(3, 3);  // column 3 of 3
  EXPECT_NE(error_of([&] { tensor_from_sparse_proto(sp, ""); }).find("outside"), std::string::npos);
}

TEST(TensorProto, LoadTensorProtoFileReadsTheBackendTestFormat) {
  TempDir dir;
  TP t = float_tensor("x", {2, 1}, {0.5f, -7.f});
  write_file(dir / "input_0.pb", t.SerializeAsString());
  Tensor out = load_tensor_proto(dir / "input_0.pb");
  EXPECT_EQ(out.shape(), (Shape{2, 1}));
  EXPECT_EQ(bytes_of(out), bytes_of(std::vector<float>{0.5f, -7.f}));

  write_file(dir / "bad.pb", "\xff\xff\xff garbage");
  std::string msg = error_of([&] { load_tensor_proto(dir / "bad.pb"); });
  EXPECT_NE(msg.find("bad.pb"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a serialized ONNX TensorProto"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { load_tensor_proto(dir / "none.pb"); }).find("no such file"), std::string::npos);
  write_file(dir / "empty.pb", "");
  EXPECT_NE(error_of([&] { load_tensor_proto(dir / "empty.pb"); }).find("empty"), std::string::npos);
}

}  // namespace
}  // namespace ember::test

// .npy files: round trips, numpy's header layout, big-endian and Fortran-order files
// written byte by byte as numpy would, and malformed files.
#include "helpers.h"

#include <ember/core/npy.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

namespace ember::test {
namespace {

// A .npy file as numpy writes it: magic, version, little-endian header length, dict.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const size_t len_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_bytes; ++i) out.push_back(static_cast<char>((dict.size() >> (8 * i)) & 0xFF));
  return out + dict + data;
}

// Random bytes in every element, not random values (tests/test_util.h's random_tensor):
// a round trip must keep any bit pattern, of complex dtypes too.
Tensor random_bytes(DType dtype, Shape shape, std::mt19937& rng) {
  Tensor t(dtype, std::move(shape));
  auto* p = t.data_as<uint8_t>();
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(rng() | 1);  // never all zero
  if (dtype == DType::Bool)
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = (i % 3) != 0;
  return t;
}

TEST(Npy, EveryNumpyDtypeRoundTrips) {
  TempDir dir;
  std::mt19937 rng(7);
  const DType dtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::Int8,
                          DType::UInt8,   DType::Int16,   DType::UInt16,  DType::Int32,
                          DType::UInt32,  DType::Int64,   DType::UInt64,  DType::Bool,
                          DType::Complex64, DType::Complex128};
  const Shape shapes[] = {{3, 5}, {7}, {}, {2, 0, 3}, {1, 3, 1, 2}};
  for (DType dtype : dtypes)
    for (const Shape& shape : shapes) {
      Tensor t = random_bytes(dtype, shape, rng);
      write_npy(dir / "t.npy", t);
      Tensor back = read_npy(dir / "t.npy");
      EXPECT_EQ(back.dtype(), dtype) << dtype_name(dtype);
      EXPECT_EQ(back.shape(), shape) << dtype_name(dtype) << shape_to_string(shape);
      EXPECT_EQ(bytes_of(back), bytes_of(t)) << dtype_name(dtype) << shape_to_string(shape);
    }
}

TEST(Npy, WrittenHeaderIsLikeNumpys) {
  TempDir dir;
  write_npy(dir / "a.npy", Tensor(DType::Float32, {3}));
  write_npy(dir / "b.npy", Tensor(DType::Bool, {2, 4}));
  write_npy(dir / "c.npy", Tensor(DType::Int64, {}));
  for (const auto& [file, dict] : {std::pair{"a.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"},
                                   std::pair{"b.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 4), }"},
                                   std::pair{"c.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }"}}) {
    const std::string bytes = read_whole(dir / file);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8)) << file;
    const size_t header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u) << file;
    const std::string header = bytes.substr(10, header_len);
    EXPECT_EQ(header.substr(0, std::strlen(dict)), dict) << file;
    EXPECT_EQ(header.back(), '\n') << file;
  }
}

TEST(Npy, BigEndianFilesAreConvertedToNative) {
  TempDir dir;
  // >i4 (2, 2) = [[1, -2], [258, 0x01020304]] and >f8 [1.0], >c8 [(1+2j)]
  const std::string i4("\x00\x00\x00\x01\xff\xff\xff\xfe\x00\x00\x01\x02\x01\x02\x03\x04", 16);
  write_file(dir / "i.npy", npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (2, 2), }\n", i4));
  Tensor i = read_npy(dir / "i.npy");
  EXPECT_EQ(i.dtype(), DType::Int32);
  EXPECT_EQ(bytes_of(i), bytes_of(std::vector<int32_t>{1, -2, 258, 0x01020304}));

  write_file(dir / "f.npy", npy_bytes("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }",
                                      std::string("\x3f\xf0\x00\x00\x00\x00\x00\x00", 8)));
  EXPECT_EQ(*read_npy(dir / "f.npy").data_as<double>(), 1.0);

  write_file(dir / "c.npy", npy_bytes("{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }",
                                      std::string("\x3f\x80\x00\x00\x40\x00\x00\x00", 8)));
  EXPECT_EQ(bytes_of(read_npy(dir / "c.npy")), bytes_of(std::vector<float>{1.f, 2.f}));

  // '=' is native, '|' means byte order does not apply.
  write_file(dir / "n.npy", npy_bytes("{'descr': '=u2', 'fortran_order': False, 'shape': (1,), }",
                                      std::string("\x34\x12", 2)));
  EXPECT_EQ(*read_npy(dir / "n.npy").data_as<uint16_t>(), 0x1234);
}

TEST(Npy, FortranOrderIsTransposedToCOrder) {
  TempDir dir;
  // Column-major (2, 3): columns (0, 3), (1, 4), (2, 5) -> rows [0 1 2], [3 4 5].
  write_file(dir / "f.npy", npy_bytes("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }",
                                      bytes_of(std::vector<int16_t>{0, 3, 1, 4, 2, 5})));
  Tensor t = read_npy(dir / "f.npy");
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(bytes_of(t), bytes_of(std::vector<int16_t>{0, 1, 2, 3, 4, 5}));

  // (2, 3, 4) with element value = 100 i + 10 j + k, laid out column-major.
  std::vector<int32_t> fortran, c;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) fortran.push_back(100 * i + 10 * j + k);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) c.push_back(100 * i + 10 * j + k);
  write_file(dir / "g.npy", npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }",
                                      bytes_of(fortran)));
  EXPECT_EQ(bytes_of(read_npy(dir / "g.npy")), bytes_of(c));
}

TEST(Npy, Version2And3HeadersAndScalarsAreRead) {
  TempDir dir;
  for (int major : {2, 3}) {
    write_file(dir / "v.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                                        bytes_of(std::vector<float>{2.5f}), major));
    Tensor t = read_npy(dir / "v.npy");
    EXPECT_EQ(t.rank(), 0) << major;
    EXPECT_EQ(*t.data_as<float>(), 2.5f) << major;
  }
  write_file(dir / "py2.npy", npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1L, 2L), }",
                                        bytes_of(std::vector<int64_t>{4, 5})));
  EXPECT_EQ(read_npy(dir / "py2.npy").shape(), (Shape{1, 2}));
}

TEST(Npy, MalformedFilesNameTheFileAndTheProblem) {
  TempDir dir;
  write_file(dir / "garbage.npy", "PK\x03\x04 this is a zip, not an npy");
  std::string msg = error_of([&] { read_npy(dir / "garbage.npy"); });
  EXPECT_TRUE(contains(msg, dir / "garbage.npy")) << msg;
  EXPECT_TRUE(contains(msg, "not a .npy file")) << msg;

  const std::string good = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                                     bytes_of(std::vector<float>{1, 2, 3, 4}));
  write_file(dir / "short.npy", good.substr(0, good.size() - 3));
  EXPECT_TRUE(contains(error_of([&] { read_npy(dir / "short.npy"); }), "truncated .npy data"));
  write_file(dir / "short_header.npy", good.substr(0, 20));
  EXPECT_TRUE(contains(error_of([&] { read_npy(dir / "short_header.npy"); }), "truncated .npy header"));

  const std::pair<const char*, const char*> bad_dtypes[] = {
      {"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "'O' (Python objects, pickled) cannot be read"},
      {"{'descr': '<U5', 'fortran_order': False, 'shape': (1,), }", "truncated .npy data: 16 bytes for 1 strings"},
      {"{'descr': '<U0', 'fortran_order': False, 'shape': (99999999999,), }", "'<U0' is not supported"},
      {"{'descr': '<U5', 'fortran_order': True, 'shape': (1,), }", "must be in C order"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "non-integer dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", "too many elements"},
      // Fits int64 as elements, not as bits (dtype_bytes): found by fuzzing (UBSan).
      {"{'descr': '<c16', 'fortran_order': False, 'shape': (1024, 1024, 1024, 1024, 1024, 256), }",
       "too many elements"},
  };
  for (const auto& [dict, expected] : bad_dtypes) {
    write_file(dir / "bad.npy", npy_bytes(dict, std::string(16, '\x01')));
    msg = error_of([&] { read_npy(dir / "bad.npy"); });
    EXPECT_TRUE(contains(msg, "bad.npy")) << msg;
    EXPECT_TRUE(contains(msg, expected)) << msg;
  }
  EXPECT_TRUE(contains(error_of([&] { read_npy(dir / "none.npy"); }), "no such file"));
}

// numpy's str arrays: UTF-32 code points, NUL-padded to the widest element.
TEST(Npy, StrArraysRoundTripAsUtf8AndReadLikeNumpyWritesThem) {
  TempDir dir;
  Tensor t(DType::String, {2, 2});
  const std::string values[] = {"", "abc", "été 的", "😀x"};
  for (int i = 0; i < 4; ++i) t.data_as<std::string>()[i] = values[i];
  write_npy(dir / "s.npy", t);
  const Tensor back = read_npy(dir / "s.npy");
  ASSERT_EQ(back.dtype(), DType::String);
  EXPECT_EQ(back.shape(), (Shape{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back.data_as<std::string>()[i], values[i]);
  std::ifstream in(dir / "s.npy", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(bytes, "'descr': '<U5'"));  // "été 的": 5 code points

  // As numpy writes np.array(['hé', 'x'], dtype='>U2'): big-endian UTF-32.
  const std::string be = std::string("\0\0\0h\0\0\0\xe9", 8) + std::string("\0\0\0x\0\0\0\0", 8);
  write_file(dir / "be.npy", npy_bytes("{'descr': '>U2', 'fortran_order': False, 'shape': (2,), }", be));
  const Tensor read = read_npy(dir / "be.npy");
  EXPECT_EQ(read.data_as<std::string>()[0], "h\xc3\xa9");
  EXPECT_EQ(read.data_as<std::string>()[1], "x");

  const std::string surrogate("\x00\xd8\x00\x00", 4);  // U+D800: no Unicode scalar value
  write_file(dir / "bad.npy", npy_bytes("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", surrogate));
  EXPECT_TRUE(contains(error_of([&] { read_npy(dir / "bad.npy"); }), "not a Unicode scalar value"));
  Tensor latin1(DType::String, {1});
  latin1.data_as<std::string>()[0] = "caf\xe9";
  EXPECT_TRUE(contains(error_of([&] { write_npy(dir / "l.npy", latin1); }), "not UTF-8"));
}

TEST(Npy, AFolderThatDoesNotExistIsAClearErrorWhenWriting) {
  TempDir dir;
  EXPECT_TRUE(contains(error_of([&] { write_npy(dir / "no/such/dir/x.npy", Tensor(DType::Float32, {1})); }),
                       "cannot open"));
}

// bfloat16, float8 and 4-bit tensors go out as numpy saves ml_dtypes' arrays (raw bytes,
// 4-bit values one per byte) and come back as the dtype the reader expects.
TEST(Npy, DtypesNumpyLacksRoundTripAsRawBytes) {
  TempDir dir;
  std::mt19937 rng(11);
  for (DType dtype : {DType::BFloat16, DType::Float8E4M3FN, DType::Float8E5M2, DType::Float8E4M3FNUZ,
                      DType::Int4, DType::UInt4, DType::Float4E2M1}) {
    const Tensor t = random_bytes(dtype, {2, 3}, rng);
    write_npy(dir / "raw.npy", t);
    const std::string header = read_whole(dir / "raw.npy").substr(10, 20);
    EXPECT_TRUE(contains(header, dtype == DType::BFloat16 ? "'<V2'" : "'|V1'")) << dtype_name(dtype) << header;
    const Tensor back = read_npy(dir / "raw.npy", dtype);
    ASSERT_EQ(back.dtype(), dtype);
    ASSERT_EQ(back.shape(), t.shape());
    EXPECT_EQ(std::memcmp(back.data(), t.data(), t.nbytes()), 0) << dtype_name(dtype);
  }
}

// Bytes np.save writes for ml_dtypes.int4([-1, 3, -8, 7]) and bfloat16([1.0, -2.0]).
TEST(Npy, MlDtypesFilesAreReadAsTheExpectedDtype) {
  TempDir dir;
  write_file(dir / "i4.npy", npy_bytes("{'descr': '<V1', 'fortran_order': False, 'shape': (4,), }\n",
                                       std::string("\x0f\x03\x08\x07", 4)));
  const Tensor i4 = read_npy(dir / "i4.npy", DType::Int4);
  EXPECT_EQ(i4.data_as<uint8_t>()[0], 0x3F);  // -1 then 3, the first in the low nibble
  EXPECT_EQ(i4.data_as<uint8_t>()[1], 0x78);  // -8 then 7
  write_file(dir / "bf.npy", npy_bytes("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }\n",
                                       std::string("\x80\x3f\x00\xc0", 4)));
  const Tensor bf = read_npy(dir / "bf.npy", DType::BFloat16);
  EXPECT_EQ(bf.data_as<uint16_t>()[0], 0x3F80);
  EXPECT_EQ(bf.data_as<uint16_t>()[1], 0xC000);
  std::string msg = error_of([&] { read_npy(dir / "bf.npy"); });
  EXPECT_TRUE(contains(msg, "bf.npy: npy dtype of raw 2-byte elements")) << msg;
  EXPECT_TRUE(contains(msg, "none was given")) << msg;
  msg = error_of([&] { read_npy(dir / "bf.npy", DType::Float8E4M3FN); });
  EXPECT_TRUE(contains(msg, "the input is float8e4m3fn")) << msg;
}

}  // namespace
}  // namespace ember::test

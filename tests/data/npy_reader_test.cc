#include "src/data/npy_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fluid {
namespace {

namespace fs = std::filesystem;

class NpyReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fluid_npy_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }
  std::string WriteRaw(const std::string& name, const std::string& bytes) {
    std::ofstream(Path(name), std::ios::binary) << bytes;
    return Path(name);
  }
  static std::string ReadRaw(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // A version 1.0 file with `dict` as its header (padded as numpy pads it).
  static std::string V1File(std::string dict, const std::string& data) {
    while ((10 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
    dict.push_back('\n');
    std::string b = "\x93NUMPY";
    b += '\x01';
    b += '\x00';
    b += static_cast<char>(dict.size() & 0xff);
    b += static_cast<char>(dict.size() >> 8);
    return b + dict + data;
  }
  template <typename Fn>
  void ExpectError(Fn fn, const std::vector<std::string>& parts) {
    try {
      fn();
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      std::string msg = e.what();
      for (const auto& p : parts)
        EXPECT_NE(msg.find(p), std::string::npos)
            << "'" << p << "' not in: " << msg;
    }
  }

  fs::path dir_;
};

template <typename T>
Tensor Iota(const Shape& shape, T start) {
  Tensor t;
  T* p = t.mutable_data<T>(shape);
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = start + static_cast<T>(i);
  return t;
}

template <typename T>
void ExpectSame(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    EXPECT_EQ(a.data<T>()[i], b.data<T>()[i]) << "element " << i;
}

TEST_F(NpyReaderTest, RoundTripsEveryDtype) {
  for (const Shape& shape :
       {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 3, 4}, Shape{0, 3}}) {
    SCOPED_TRACE(shape.ToString());
    std::string p = Path("a.npy");
    Tensor f = Iota<float>(shape, 0.5f);
    SaveNpy(p, f);
    ExpectSame<float>(LoadNpy(p), f);
    Tensor d = Iota<double>(shape, -1.25);
    SaveNpy(p, d);
    ExpectSame<double>(LoadNpy(p), d);
    Tensor i = Iota<int32_t>(shape, -7);
    SaveNpy(p, i);
    ExpectSame<int32_t>(LoadNpy(p), i);
    Tensor l = Iota<int64_t>(shape, int64_t{1} << 40);
    SaveNpy(p, l);
    ExpectSame<int64_t>(LoadNpy(p), l);
  }
}

TEST_F(NpyReaderTest, WritesNumpysLayout) {
  std::string p = Path("b.npy");
  SaveNpy(p, Iota<float>({2, 3}, 0.0f));
  std::string raw = ReadRaw(p);
  ASSERT_GE(raw.size(), 10u);
  EXPECT_EQ(raw.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t header_len = uint8_t(raw[8]) | (uint8_t(raw[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(raw.size(), 10 + header_len + 6 * 4);
  std::string header = raw.substr(10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (2, 3), }",
                         0),
            0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
  SaveNpy(p, Iota<float>({4}, 0.0f));
  EXPECT_NE(ReadRaw(p).find("'shape': (4,)"), std::string::npos);
}

TEST_F(NpyReaderTest, ReadsHandWrittenFiles) {
  // Unsigned bytes widen to int32; spacing and key order as a person might
  // write them.
  std::string p = WriteRaw(
      "u1.npy", V1File("{'shape':(2,3),'fortran_order':False,'descr':'|u1'}",
                       std::string("\x00\x01\x7f\x80\xfe\xff", 6)));
  Tensor t = LoadNpy(p);
  ASSERT_EQ(t.dtype(), DataType::kInt32);
  ASSERT_EQ(t.shape(), Shape({2, 3}));
  std::vector<int32_t> want = {0, 1, 127, 128, 254, 255};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<int32_t>()[i], want[i]);

  // Version 2.0: a 4-byte header length; Python 2 style "L" dims.
  std::string dict =
      "{\"descr\": \"<i8\", \"fortran_order\": False, "
      "\"shape\": (2L,), }";
  while ((12 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string b = std::string("\x93NUMPY\x02\x00", 8);
  for (int s = 0; s < 32; s += 8) b.push_back(char((dict.size() >> s) & 0xff));
  int64_t vals[2] = {-3, int64_t{1} << 50};
  b += dict + std::string(reinterpret_cast<const char*>(vals), 16);
  Tensor v2 = LoadNpy(WriteRaw("v2.npy", b));
  ASSERT_EQ(v2.shape(), Shape({2}));
  EXPECT_EQ(v2.data<int64_t>()[0], -3);
  EXPECT_EQ(v2.data<int64_t>()[1], int64_t{1} << 50);
}

TEST_F(NpyReaderTest, UnsupportedLayoutsAreClearErrors) {
  std::string data(24, '\0');
  std::string p =
      WriteRaw("f.npy", V1File("{'descr': '<f4', 'fortran_order': True, "
                               "'shape': (2, 3), }",
                               data));
  ExpectError([&] { LoadNpy(p); }, {p, "Fortran order"});
  p = WriteRaw("be.npy", V1File("{'descr': '>f4', 'fortran_order': False, "
                                "'shape': (2, 3), }",
                                data));
  ExpectError([&] { LoadNpy(p); }, {p, "big-endian"});
  p = WriteRaw("c8.npy", V1File("{'descr': '<c8', 'fortran_order': False, "
                                "'shape': (3,), }",
                                data));
  ExpectError([&] { LoadNpy(p); }, {p, "'<c8'"});
  p = WriteRaw("magic.npy", "\x93NUMPX" + data);
  ExpectError([&] { LoadNpy(p); }, {p, "bad magic"});
  p = WriteRaw("short.npy", V1File("{'descr': '<f4', 'fortran_order': False, "
                                   "'shape': (2, 3), }",
                                   data.substr(0, 20)));
  ExpectError([&] { LoadNpy(p); }, {p, "truncated"});
  p = WriteRaw("long.npy", V1File("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (2, 3), }",
                                  data + "x"));
  ExpectError([&] { LoadNpy(p); }, {p, "bytes after"});
  p = WriteRaw("mangled.npy", V1File("{'descr': '<f4', 'shape': (2, 3}", data));
  ExpectError([&] { LoadNpy(p); }, {p, "malformed header"});
  try {
    LoadNpy(Path("absent.npy"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST_F(NpyReaderTest, InteroperatesWithNumpy) {
  const char* python = "/usr/bin/python3";
  if (!fs::exists(python) ||
      std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "numpy is not installed for /usr/bin/python3";
  std::string from_numpy = Path("np.npy"), from_us = Path("us.npy");
  SaveNpy(from_us, Iota<double>({3, 2}, 0.25));
  std::string script =
      "import numpy as np\n"
      "np.save('" +
      from_numpy +
      "', np.arange(24, dtype='<f4').reshape(2, 3, 4))\n"
      "a = np.load('" +
      from_us +
      "')\n"
      "assert a.dtype == np.float64 and a.shape == (3, 2), (a.dtype, a.shape)\n"
      "assert (a == np.arange(6).reshape(3, 2) + 0.25).all()\n";
  std::string script_path = Path("check.py");
  std::ofstream(script_path) << script;
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script_path).c_str()), 0);
  Tensor t = LoadNpy(from_numpy);
  ASSERT_EQ(t.shape(), Shape({2, 3, 4}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(t.data<float>()[i], float(i));
}

}  // namespace
}  // namespace fluid

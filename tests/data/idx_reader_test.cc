#include "src/data/idx_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

namespace fluid {
namespace {

namespace fs = std::filesystem;

// A scratch directory removed when the test ends.
class IdxReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fluid_idx_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }

  static std::string Header(uint8_t type, const std::vector<uint32_t>& dims) {
    std::string h = {0, 0, static_cast<char>(type),
                     static_cast<char>(dims.size())};
    for (uint32_t d : dims)
      for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<char>(d >> s));
    return h;
  }

  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = Path(name);
    if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") {
      gzFile f = gzopen(path.c_str(), "wb");
      EXPECT_NE(f, nullptr);
      EXPECT_EQ(gzwrite(f, bytes.data(), bytes.size()), int(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary) << bytes;
    }
    return path;
  }

  // n images of h x w with pixel (i, y, x) = (i * 31 + y * w + x) % 256.
  static std::string Images(uint32_t n, uint32_t h, uint32_t w) {
    std::string b = Header(0x08, {n, h, w});
    for (uint32_t i = 0; i < n * h * w; ++i)
      b.push_back(static_cast<char>(((i / (h * w)) * 31 + i % (h * w)) % 256));
    return b;
  }
  static std::string Labels(uint32_t n) {
    std::string b = Header(0x08, {n});
    for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<char>(i % 10));
    return b;
  }

  // Expects `fn` to throw an Error whose message holds every one of `parts`.
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

TEST_F(IdxReaderTest, ReadsPlainAndGzipImages) {
  for (const char* name : {"img-idx3-ubyte", "img-idx3-ubyte.gz"}) {
    Tensor t = ReadIdxImages(Write(name, Images(3, 2, 4)));
    ASSERT_EQ(t.shape(), Shape({3, 1, 2, 4}));
    ASSERT_EQ(t.dtype(), DataType::kFloat32);
    const float* p = t.data<float>();
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 8; ++k)
        EXPECT_FLOAT_EQ(p[i * 8 + k], ((i * 31 + k) % 256) / 255.0f);
  }
}

TEST_F(IdxReaderTest, ReadsLabels) {
  Tensor t = ReadIdxLabels(Write("lab.gz", Labels(25)));
  ASSERT_EQ(t.shape(), Shape({25, 1}));
  ASSERT_EQ(t.dtype(), DataType::kInt64);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(t.data<int64_t>()[i], i % 10);
}

TEST_F(IdxReaderTest, ConvertsBigEndianElements) {
  std::string b = Header(0x0C, {2, 2});
  for (int32_t v : {1, -2, 0x01020304, 7})
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>(v >> s));
  IdxArray a = ReadIdx(Write("ints", b));
  EXPECT_EQ(a.type, IdxType::kInt32);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(a.data.size(), 16u);
  const int32_t* p = reinterpret_cast<const int32_t*>(a.data.data());
  EXPECT_EQ(p[0], 1);
  EXPECT_EQ(p[1], -2);
  EXPECT_EQ(p[2], 0x01020304);
  EXPECT_EQ(p[3], 7);
}

TEST_F(IdxReaderTest, TruncatedFilesAreErrors) {
  std::string full = Images(4, 3, 3);
  for (const char* name : {"short", "short.gz"}) {
    std::string path = Write(name, full.substr(0, full.size() - 5));
    ExpectError([&] { ReadIdxImages(path); }, {path, "truncated"});
  }
  std::string path = Write("header_only", full.substr(0, 9));
  ExpectError([&] { ReadIdx(path); }, {path, "truncated"});
  // A gzip stream cut in the middle.
  std::string gz = Write("cut.gz", full);
  std::string bytes;
  {
    std::ifstream in(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string cut = Write("cut2", bytes.substr(0, bytes.size() - 12));
  fs::rename(cut, cut + ".gz");
  ExpectError([&] { ReadIdx(cut + ".gz"); }, {cut + ".gz"});
}

TEST_F(IdxReaderTest, BadMagicAndTypeAreErrors) {
  std::string bad = Images(2, 2, 2);
  bad[0] = 0x1f;
  std::string path = Write("bad_magic", bad);
  ExpectError([&] { ReadIdx(path); }, {path, "bad magic"});

  std::string odd = Images(2, 2, 2);
  odd[2] = 0x07;
  path = Write("bad_type", odd);
  ExpectError([&] { ReadIdx(path); }, {path, "unsupported type", "0x07"});

  std::string floats = Header(0x0D, {1, 1, 1}) + std::string(4, '\0');
  path = Write("floats", floats);
  ExpectError([&] { ReadIdxImages(path); }, {path, "unsigned bytes"});
}

TEST_F(IdxReaderTest, TrailingBytesAndWrongRankAreErrors) {
  std::string path = Write("long", Labels(5) + "xyz");
  ExpectError([&] { ReadIdxLabels(path); }, {path, "bytes after"});
  path = Write("labels_as_images", Labels(5));
  ExpectError([&] { ReadIdxImages(path); }, {path, "[N, H, W]"});
}

TEST_F(IdxReaderTest, MissingFileIsNotFound) {
  std::string path = Path("nope");
  try {
    ReadIdx(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
}

TEST_F(IdxReaderTest, LoadsASplitFromADirectory) {
  Write("train-images-idx3-ubyte.gz", Images(12, 5, 5));
  Write("train-labels-idx1-ubyte", Labels(12));  // plain works too
  Dataset d = LoadMnistFamily(dir_.string(), true);
  EXPECT_EQ(d.names, (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(d.size(), 12);
  EXPECT_EQ(d.tensors[0].shape(), Shape({12, 1, 5, 5}));
  EXPECT_EQ(d.tensors[1].shape(), Shape({12, 1}));
  d.Check("test");

  // The test split is absent.
  ExpectError([&] { LoadMnistFamily(dir_.string(), false); },
              {"t10k-images-idx3-ubyte"});

  Write("t10k-images-idx3-ubyte", Images(4, 5, 5));
  Write("t10k-labels-idx1-ubyte.gz", Labels(3));
  ExpectError([&] { LoadMnistFamily(dir_.string(), false); },
              {"4 images", "3 labels"});
}

TEST(IdxReader, RealFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << dir << " not installed (Debian: dataset-fashion-mnist)";
  for (bool train : {true, false}) {
    Dataset d = LoadMnistFamily(dir, train);
    const int64_t n = train ? 60000 : 10000;
    ASSERT_EQ(d.size(), n);
    EXPECT_EQ(d.tensors[0].shape(), Shape({n, 1, 28, 28}));
    const float* img = d.tensors[0].data<float>();
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < d.tensors[0].numel(); ++i) {
      lo = std::min(lo, img[i]);
      hi = std::max(hi, img[i]);
    }
    EXPECT_EQ(lo, 0.0f);
    EXPECT_EQ(hi, 1.0f);
    std::vector<int64_t> counts(10, 0);
    const int64_t* lab = d.tensors[1].data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_GE(lab[i], 0);
      ASSERT_LT(lab[i], 10);
      ++counts[lab[i]];
    }
    // Fashion-MNIST is balanced: n / 10 of each class.
    for (int64_t c : counts) EXPECT_EQ(c, n / 10);
  }
}

// The digest ranks compare: any label changes it; in a large tensor, what
// its sampled rows hold (the first and last among them) and its shape.
TEST(ContentDigest, TellsLabelsAndSampledRowsApart) {
  Tensor labels;
  int64_t* l = labels.mutable_data<int64_t>(Shape{60000, 1});
  for (int64_t i = 0; i < 60000; ++i) l[i] = i % 10;
  const uint32_t base = ContentDigest(labels);
  EXPECT_EQ(ContentDigest(labels), base);
  l[31337] = (l[31337] + 1) % 10;
  EXPECT_NE(ContentDigest(labels), base);
  l[31337] = 31337 % 10;
  EXPECT_EQ(ContentDigest(labels), base);

  // 8 MiB of images: 1024 of its 2048 rows are read.
  Tensor images;
  float* px = images.mutable_data<float>(Shape{2048, 1, 32, 32});
  for (int64_t i = 0; i < images.numel(); ++i) px[i] = (i % 255) / 255.0f;
  const uint32_t img = ContentDigest(images);
  for (int64_t row : {int64_t{0}, int64_t{2047}}) {
    const float was = px[row * 1024 + 5];
    px[row * 1024 + 5] = was + 1;
    EXPECT_NE(ContentDigest(images), img) << "row " << row;
    px[row * 1024 + 5] = was;
  }
  EXPECT_EQ(ContentDigest(images), img);
  Tensor reshaped;
  reshaped.ShareDataWith(images);
  reshaped.Resize(Shape{2048, 1, 16, 64});
  EXPECT_NE(ContentDigest(reshaped), img);
}

}  // namespace
}  // namespace fluid

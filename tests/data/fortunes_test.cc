#include "src/data/fortunes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/io/crc32.h"

namespace fluid {
namespace {

namespace fs = std::filesystem;

std::vector<uint32_t> CodePoints(const std::string& bytes) {
  const std::u32string s = DecodeUtf8(bytes);
  return std::vector<uint32_t>(s.begin(), s.end());
}

// Expected values from CPython 3's bytes.decode("utf-8", errors="replace").
TEST(Fortunes, DecodesUtf8AsPythonReplaces) {
  using V = std::vector<uint32_t>;
  EXPECT_EQ(CodePoints("a\xff"
                       "b"),
            (V{0x61, 0xFFFD, 0x62}));
  EXPECT_EQ(CodePoints("\xe2\x82"), (V{0xFFFD}));
  EXPECT_EQ(CodePoints("\xe2\x82"
                       "A"),
            (V{0xFFFD, 0x41}));
  EXPECT_EQ(CodePoints("\xed\xa0\x80"), (V{0xFFFD, 0xFFFD, 0xFFFD}));
  EXPECT_EQ(CodePoints("\xf0\x9f\x98\x80"), (V{0x1F600}));
  EXPECT_EQ(CodePoints("\xf0\x9f\x98"), (V{0xFFFD}));
  EXPECT_EQ(CodePoints("\xc0\xaf"), (V{0xFFFD, 0xFFFD}));
  EXPECT_EQ(CodePoints("\xf4\x90\x80\x80"), (V(4, 0xFFFD)));
  EXPECT_EQ(CodePoints("\xe0\x80\x80"), (V(3, 0xFFFD)));
  EXPECT_EQ(CodePoints("\xc3\xa9\x80"), (V{0xE9, 0xFFFD}));
  EXPECT_EQ(CodePoints("\xf8\x88\x80\x80\x80"), (V(5, 0xFFFD)));
  const std::string text = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(EncodeUtf8(DecodeUtf8(text)), text);
}

// The split's checksum is zlib's CRC-32 of the UTF-8 (zlib.crc32).
TEST(Fortunes, SplitUsesZlibCrc32) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);
  const std::u32string text = U"h\u00e9llo\nw\u00f6rld";
  EXPECT_EQ(Crc32(EncodeUtf8(text)), 2127575403u);  // zlib.crc32
  EXPECT_EQ(IsValidationQuotation(text), 2127575403u % 100 < 10);
}

class FortunesDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fluid_fortunes_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  fs::path dir_;
};

// Topic files only (no '.', no links, no directories), in name order; cut
// at "\n%\n", stripped of '\n', empty pieces and "%" dropped.
TEST_F(FortunesDirTest, ReadsTopicFilesInOrder) {
  Write("zoo", "\nlast\n\n%\n%\n%\n\n");
  Write("apple", "one\n%\ntwo\nlines\n%\n\n\nthree\n%\n");
  Write("apple.dat", "index");
  fs::create_symlink(dir_ / "apple", dir_ / "apple2");
  fs::create_directories(dir_ / "sub");
  const std::vector<Quotation> q = ReadFortunes(dir_.string());
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0].topic, "apple");
  EXPECT_EQ(EncodeUtf8(q[0].text), "one");
  EXPECT_EQ(EncodeUtf8(q[1].text), "two\nlines");
  EXPECT_EQ(EncodeUtf8(q[2].text), "three");
  EXPECT_EQ(q[3].topic, "zoo");
  EXPECT_EQ(EncodeUtf8(q[3].text), "last");
  const auto train = ReadFortunes(dir_.string(), FortunesSplit::kTrain);
  const auto valid = ReadFortunes(dir_.string(), FortunesSplit::kValid);
  EXPECT_EQ(train.size() + valid.size(), q.size());
  for (const Quotation& v : valid) EXPECT_TRUE(IsValidationQuotation(v.text));
}

TEST_F(FortunesDirTest, MissingOrEmptyDirectoryIsAnError) {
  EXPECT_THROW(ReadFortunes((dir_ / "nothing").string()), Error);
  EXPECT_THROW(ReadFortunes(dir_.string()), Error);
  EXPECT_THROW(ParseFortunesSplit("test"), Error);
}

Quotation Q(const std::string& topic, const std::u32string& text) {
  return Quotation{topic, text};
}

// <pad>, <unk>, <eos>, then by falling count, ties by code point.
TEST(Fortunes, VocabIsOrderedByCountThenCodePoint) {
  const std::vector<Quotation> q = {Q("a", U"bca"), Q("a", U"ccz\u00e9")};
  const CharVocab v = CharVocab::Build(q);
  ASSERT_EQ(v.size(), 3 + 5);
  EXPECT_EQ(v.token(3), U'c');
  EXPECT_EQ(v.token(4), U'a');
  EXPECT_EQ(v.token(5), U'b');
  EXPECT_EQ(v.token(6), U'z');
  EXPECT_EQ(v.token(7), U'\u00e9');
  EXPECT_EQ(v.Id(U'c'), 3);
  EXPECT_EQ(v.Id(U'q'), kFortunesUnk);
  const CharVocab small = CharVocab::Build(q, 5);
  EXPECT_EQ(small.size(), 5);
  EXPECT_EQ(small.Id(U'b'), kFortunesUnk);
  EXPECT_THROW(CharVocab::Build(q, 2), Error);
}

// The stream ends each quotation with <eos>; windows start every seq_len
// ids and their next ids are one further on.
TEST(Fortunes, LmWindowsFollowTheStream) {
  const std::vector<Quotation> q = {Q("a", U"ab"), Q("a", U"bab")};
  const CharVocab v = CharVocab::Build(q);  // b=3, a=4
  const std::vector<int64_t> stream = LmStream(q, v);
  EXPECT_EQ(stream, (std::vector<int64_t>{4, 3, 2, 3, 4, 3, 2}));
  const Dataset d = LmWindows(stream, 3);
  ASSERT_EQ(d.names, (std::vector<std::string>{"tokens", "next"}));
  EXPECT_EQ(d.tensors[0].shape(), (Shape{2, 3, 1}));
  const int64_t* t = d.tensors[0].data<int64_t>();
  const int64_t* n = d.tensors[1].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(t, t + 6),
            (std::vector<int64_t>{4, 3, 2, 3, 4, 3}));
  EXPECT_EQ(std::vector<int64_t>(n, n + 6),
            (std::vector<int64_t>{3, 2, 3, 4, 3, 2}));
  // 6 ids hold one window of 3 with its next ids, not two.
  EXPECT_EQ(LmWindows({1, 2, 3, 4, 5, 6}, 3).size(), 1);
  EXPECT_EQ(LmWindows({1, 2, 3}, 3).size(), 0);
}

// Topics by quotation count, ties by name; samples padded or cut.
TEST(Fortunes, TopicSamplesAreLabelledAndPadded) {
  const std::vector<Quotation> q = {Q("b", U"x"), Q("a", U"xyzw"), Q("c", U"y"),
                                    Q("c", U"yy")};
  const std::vector<std::string> topics = FortunesTopics(q, 2);
  EXPECT_EQ(topics, (std::vector<std::string>{"c", "a"}));
  const CharVocab v = CharVocab::Build(q);  // y=3, x=4, w=5, z=6
  const Dataset d = TopicSamples(q, topics, v, 3);
  ASSERT_EQ(d.size(), 3);
  const int64_t* w = d.tensors[0].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(w, w + 9),
            (std::vector<int64_t>{4, 3, 6, 3, 0, 0, 3, 3, 0}));
  const int64_t* len = d.tensors[1].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(len, len + 3),
            (std::vector<int64_t>{3, 1, 2}));
  const int64_t* label = d.tensors[2].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(label, label + 3),
            (std::vector<int64_t>{1, 0, 0}));
}

// Debian's files: every one decodes, about one quotation in ten is for
// validation, and the vocabulary is built from the training split.
TEST(Fortunes, ReadsDebiansFiles) {
  if (!fs::is_directory(kFortunesDir))
    GTEST_SKIP() << "Debian's 'fortunes' package is not installed ("
                 << kFortunesDir << ")";
  const std::vector<Quotation> all = ReadFortunes(kFortunesDir);
  const auto valid = ReadFortunes(kFortunesDir, FortunesSplit::kValid);
  ASSERT_GT(all.size(), 1000u);
  const double share = static_cast<double>(valid.size()) / all.size();
  EXPECT_GT(share, 0.07);
  EXPECT_LT(share, 0.13);
  const auto train = ReadFortunes(kFortunesDir, FortunesSplit::kTrain);
  const CharVocab v = CharVocab::Build(train, 256);
  EXPECT_GT(v.size(), 50);
  EXPECT_LE(v.size(), 256);
  EXPECT_EQ(v.token(3), U' ');  // the commonest char
  EXPECT_EQ(FortunesTopics(all, 8).size(), 8u);
}

}  // namespace
}  // namespace fluid

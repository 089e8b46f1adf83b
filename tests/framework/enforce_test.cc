// Quote and the sanitising of error messages: whatever the input holds, an
// error is one short printable line.
#include "src/framework/enforce.h"

#include <gtest/gtest.h>

#include <string>

namespace fluid {
namespace {

bool Printable(const std::string& s) {
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

TEST(Quote, PlainNamesAreQuotedAsIs) {
  EXPECT_EQ(Quote("fc_0.w_0"), "'fc_0.w_0'");
  EXPECT_EQ(Quote(""), "''");
}

TEST(Quote, ControlBytesAreEscaped) {
  EXPECT_EQ(Quote(std::string("a\x1b[31mb\n\x7f", 9)),
            "'a\\x1b[31mb\\x0a\\x7f'");
  EXPECT_EQ(Quote(std::string("x\0y", 3)), "'x\\x00y'");
}

TEST(Quote, LongNamesAreCutWithTheirLength) {
  const std::string name(1 << 20, 'n');
  const std::string q = Quote(name);
  EXPECT_EQ(q,
            "'" + std::string(kMaxQuotedBytes, 'n') + "...' (1048576 bytes)");
  EXPECT_EQ(Quote("abcdef", 3), "'abc...' (6 bytes)");
}

TEST(ErrorMessage, IsOnePrintableLineOfBoundedLength) {
  try {
    FLUID_THROW(ErrorCode::kInvalidArgument, "bad name ",
                std::string(5 << 20, 'x'), "\nsecond line\x1b");
    FAIL() << "no throw";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_LE(msg.size(), kMaxErrorMessageBytes + 64);
    EXPECT_TRUE(Printable(msg)) << msg.substr(0, 100);
    EXPECT_EQ(msg.rfind("bad name xxx", 0), 0u);
    EXPECT_NE(msg.find("(message cut at 2048 of 5242902 bytes)"),
              std::string::npos)
        << msg.substr(msg.size() - 100);
  }
  EXPECT_EQ(Error(ErrorCode::kInternal, "a\tb").what(), std::string("a\\x09b"));
}

}  // namespace
}  // namespace fluid

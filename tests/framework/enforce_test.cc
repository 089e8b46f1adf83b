// Quote and the sanitising of error messages: whatever the input holds, an
// error is one short printable line. The op context: recorded once, kept
// through rethrows, and named at the front of the message.
#include "src/framework/enforce.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "tests/testing/gradient_checker.h"

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

TEST(OpContext, PrefixNamesTheOpItsIndexAndABlockOtherThanTheFirst) {
  EXPECT_EQ(OpContextPrefix(OpContext{"mul", 3, 0}), "in op 'mul' (#3): ");
  EXPECT_EQ(OpContextPrefix(OpContext{"mul", 0, 2}),
            "in op 'mul' (#0 of block 2): ");
  EXPECT_EQ(OpContextPrefix(OpContext{"a\nb", 1, 0}), "in op 'a\\x0ab' (#1): ");
}

TEST(OpContext, PrefixNamesTheLineThatBuiltTheOp) {
  EXPECT_EQ(OpContextPrefix(OpContext{"mul", 3, 0, "train.py:42 in net()"}),
            "in op 'mul' (#3, built at train.py:42 in net()): ");
  EXPECT_EQ(OpContextPrefix(OpContext{"mul", 0, 2, "a.py:1 in <module>"}),
            "in op 'mul' (#0 of block 2, built at a.py:1 in <module>): ");
  // One line whatever the path holds; a long one keeps its end (the file
  // and the line).
  EXPECT_EQ(OpContextPrefix(OpContext{"relu", 1, 0, "a\nb.py:7 in f()"}),
            "in op 'relu' (#1, built at a\\x0ab.py:7 in f()): ");
  const std::string tail = "/net.py:9 in f()";
  const std::string at = std::string(300, 'd') + tail;
  const std::string prefix = OpContextPrefix(OpContext{"mul", 3, 0, at});
  EXPECT_EQ(prefix.rfind("in op 'mul' (#3, built at ...", 0), 0u) << prefix;
  EXPECT_NE(prefix.find(tail + "): "), std::string::npos) << prefix;
  EXPECT_LT(prefix.size(), 260u) << prefix;
}

TEST(OpContext, ErrorsStartWithout) {
  Error e(ErrorCode::kInvalidArgument, "bad");
  EXPECT_EQ(e.op_context(), nullptr);
  EXPECT_EQ(testing::ErrorThrownBy([] {
              FLUID_THROW(ErrorCode::kNotFound, "x");
            }).op_context(),
            nullptr);
}

TEST(OpContext, IsRecordedWithCodeErrnoAndMessageKept) {
  Error e(ErrorCode::kIO, "cannot open 'f'", EACCES);
  Error in_op = e.WithOpContext(OpContext{"load", 4, 0});
  ASSERT_NE(in_op.op_context(), nullptr);
  EXPECT_EQ(in_op.op_context()->type, "load");
  EXPECT_EQ(in_op.op_context()->index, 4);
  EXPECT_EQ(in_op.op_context()->block_id, 0);
  EXPECT_EQ(in_op.code(), ErrorCode::kIO);
  EXPECT_EQ(in_op.os_errno(), EACCES);
  EXPECT_EQ(std::string(in_op.what()), "in op 'load' (#4): cannot open 'f'");
  // The original is untouched.
  EXPECT_EQ(e.op_context(), nullptr);
  EXPECT_EQ(std::string(e.what()), "cannot open 'f'");
}

TEST(OpContext, TheInnermostOpIsNamedOnce) {
  Error inner = Error(ErrorCode::kInvalidArgument, "boom")
                    .WithOpContext(OpContext{"relu", 1, 0});
  Error outer = inner.WithOpContext(OpContext{"while", 7, 0});
  ASSERT_NE(outer.op_context(), nullptr);
  EXPECT_EQ(outer.op_context()->type, "relu");
  EXPECT_EQ(outer.op_context()->index, 1);
  EXPECT_EQ(std::string(outer.what()), "in op 'relu' (#1): boom");
}

TEST(OpContext, SurvivesRethrowWithCodeAndErrno) {
  const Error cause = Error(ErrorCode::kIO, "no space", ENOSPC)
                          .WithOpContext(OpContext{"save", 2, 1});
  Error e = testing::ErrorThrownBy(
      [&] { FLUID_RETHROW(cause, "step 5: ", cause.what()); });
  EXPECT_EQ(e.code(), ErrorCode::kIO);
  EXPECT_EQ(e.os_errno(), ENOSPC);
  ASSERT_NE(e.op_context(), nullptr);
  EXPECT_EQ(e.op_context()->type, "save");
  EXPECT_EQ(e.op_context()->index, 2);
  EXPECT_EQ(e.op_context()->block_id, 1);
  // The cause's prefix is in the message once, where the caller put it.
  EXPECT_EQ(std::string(e.what()),
            "step 5: in op 'save' (#2 of block 1): no space");
  // A rethrown error leaving another op keeps the innermost op.
  EXPECT_EQ(e.WithOpContext(OpContext{"outer", 0, 0}).op_context()->type,
            "save");
  // Copies share the context.
  Error copy = e;
  EXPECT_EQ(copy.op_context(), e.op_context());
}

TEST(OpContext, RethrowWithoutContextStaysWithout) {
  const Error cause(ErrorCode::kNotFound, "no file", ENOENT);
  Error e = testing::ErrorThrownBy(
      [&] { FLUID_RETHROW(cause, "loading: ", cause.what()); });
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_EQ(e.os_errno(), ENOENT);
  EXPECT_EQ(e.op_context(), nullptr);
  EXPECT_EQ(std::string(e.what()), "loading: no file");
}

}  // namespace
}  // namespace fluid

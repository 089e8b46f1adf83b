// The last use of a block's temporaries (src/framework/liveness.h): what
// eager deletion drops after each op, on hand-made blocks.
#include "src/framework/liveness.h"

#include <gtest/gtest.h>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

using Names = std::vector<std::string>;
using OpVars = std::vector<std::pair<std::string, std::vector<std::string>>>;

proto::BlockDesc Block() { return NewProgram().blocks(0); }

void Var(proto::BlockDesc* b, const std::string& name, bool persistable = false,
         proto::VarDesc::Type type = proto::VarDesc::TENSOR) {
  AddVarDesc(b, name, DataType::kFloat32, Shape{-1, 4}, persistable)
      ->set_type(type);
}

void Op(proto::BlockDesc* b, const std::string& type, const OpVars& in,
        const OpVars& out) {
  *b->add_ops() = MakeOp(type, in, out);
}

// x (fed) -> a -> b -> c, with w persistable.
proto::BlockDesc Chain() {
  proto::BlockDesc b = Block();
  for (const char* n : {"x", "a", "b", "c"}) Var(&b, n);
  Var(&b, "w", true);
  Op(&b, "scale", {{"X", {"x"}}}, {{"Out", {"a"}}});
  Op(&b, "elementwise_add", {{"X", {"a"}}, {"Y", {"w"}}}, {{"Out", {"b"}}});
  Op(&b, "scale", {{"X", {"b"}}}, {{"Out", {"c"}}});
  return b;
}

TEST(Liveness, EachTemporaryDiesAfterItsLastReader) {
  const auto s = ReleaseSchedule(Chain());
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], Names{});
  EXPECT_EQ(s[1], Names{"a"});
  EXPECT_EQ(s[2], (Names{"b", "c"}));  // c is written and never read
}

// elementwise_add_grad reads the shapes of X and Y only
// (REGISTER_SHAPE_ONLY_INPUTS): the product before a bias dies after the
// forward add, not after the backward pass; the executor keeps its shape.
TEST(Liveness, AShapeOnlyReaderDoesNotKeepAVarAlive) {
  proto::BlockDesc b = Chain();
  for (const char* n : {"c@GRAD", "b@GRAD", "a@GRAD"}) Var(&b, n);
  Op(&b, "fill_constant", {}, {{"Out", {"c@GRAD"}}});
  Op(&b, "scale", {{"X", {"c@GRAD"}}}, {{"Out", {"b@GRAD"}}});
  Op(&b, "elementwise_add_grad",
     {{"X", {"a"}}, {"Y", {"w"}}, {"Out@GRAD", {"b@GRAD"}}},
     {{"X@GRAD", {"a@GRAD"}}});
  const auto s = ReleaseSchedule(b);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[1], Names{"a"});  // after the forward add, its last value read
  b.mutable_ops(5)->set_type("elementwise_sub_grad");  // shapes only too
  EXPECT_EQ(ReleaseSchedule(b)[1], Names{"a"});
  // A reader of values keeps it: the product's gradient reads a.
  b.mutable_ops(5)->set_type("elementwise_mul_grad");
  const auto t = ReleaseSchedule(b);
  EXPECT_EQ(t[1], Names{});
  EXPECT_EQ(t[5], (Names{"a", "a@GRAD", "b@GRAD"}));
}

TEST(Liveness, FedPersistableAndKeptVarsStay) {
  const auto s = ReleaseSchedule(Chain(), {"b"});
  EXPECT_EQ(s[2], Names{"c"});
  for (const auto& after : s)
    for (const auto& n : after) {
      EXPECT_NE(n, "x");  // read before written: fed on every run
      EXPECT_NE(n, "w");  // persistable
    }
}

TEST(Liveness, AnAsynchronousCollectiveHoldsItsVarsUntilItsWait) {
  proto::BlockDesc b = Block();
  for (const char* n : {"x", "g", "y"}) Var(&b, n);
  Var(&b, "h", false, proto::VarDesc::COMM_HANDLE);
  Op(&b, "scale", {{"X", {"x"}}}, {{"Out", {"g"}}});
  *b.add_ops() =
      MakeOp("c_allreduce", {{"X", {"g"}}}, {{"Out", {"g"}}, {"Handle", {"h"}}},
             {{"nranks", int32_t{2}}});
  Op(&b, "scale", {{"X", {"x"}}}, {{"Out", {"y"}}});
  Op(&b, "c_wait", {{"Handle", {"h"}}}, {});
  const auto s = ReleaseSchedule(b);
  // g is last named by the allreduce (op 1), but the collective reads and
  // writes it until the wait (op 3).
  EXPECT_EQ(s[1], Names{});
  EXPECT_EQ(s[2], Names{"y"});
  EXPECT_EQ(s[3], Names{"g"});
}

TEST(Liveness, ACollectiveLeftInFlightKeepsItsVars) {
  proto::BlockDesc b = Block();
  for (const char* n : {"x", "g"}) Var(&b, n);
  Var(&b, "h", true, proto::VarDesc::COMM_HANDLE);
  Op(&b, "scale", {{"X", {"x"}}}, {{"Out", {"g"}}});
  *b.add_ops() =
      MakeOp("c_allreduce", {{"X", {"g"}}}, {{"Out", {"g"}}, {"Handle", {"h"}}},
             {{"nranks", int32_t{2}}});
  for (const auto& after : ReleaseSchedule(b)) EXPECT_EQ(after, Names{});
}

TEST(Liveness, CoalescedBuffersAndTheirViewsAreNeverReleased) {
  proto::BlockDesc b = Block();
  for (const char* n : {"x", "g1", "g2", "fused", "y"}) Var(&b, n);
  *b.add_ops() = MakeOp("coalesce_tensor", {},
                        {{"Output", {"g1", "g2"}}, {"FusedOutput", {"fused"}}},
                        {{"numels", std::vector<int64_t>{4, 4}}});
  Op(&b, "scale", {{"X", {"x"}}}, {{"Out", {"g1"}}});
  Op(&b, "scale", {{"X", {"g1"}}}, {{"Out", {"g2"}}});
  Op(&b, "scale", {{"X", {"g2"}}}, {{"Out", {"y"}}});
  const auto s = ReleaseSchedule(b);
  EXPECT_EQ(s[3], Names{"y"});
  EXPECT_EQ(s[0], Names{});
  EXPECT_EQ(s[1], Names{});
  EXPECT_EQ(s[2], Names{});
}

TEST(Liveness, TheSkipFlagIsAnInputOfTheOpItSkips) {
  proto::BlockDesc b = Block();
  for (const char* n : {"x", "a", "y"}) Var(&b, n);
  AddVarDesc(&b, "flag", DataType::kInt32, Shape{1});
  *b.add_ops() = MakeOp("fill_constant", {}, {{"Out", {"flag"}}},
                        {{"shape", std::vector<int64_t>{1}},
                         {"dtype", int32_t{2}},
                         {"value", 0.0f}});
  Op(&b, "scale", {{"X", {"x"}}}, {{"Out", {"a"}}});
  proto::OpDesc skipped = MakeOp("scale", {{"X", {"a"}}}, {{"Out", {"y"}}});
  SetOpAttr(&skipped, kOpSkipIfAttr, std::string("flag"));
  *b.add_ops() = skipped;
  const auto s = ReleaseSchedule(b);
  EXPECT_EQ(s[1], Names{});
  EXPECT_EQ(s[2], (Names{"a", "flag", "y"}));
}

TEST(Liveness, AViewAndWhatItViewsLiveAsLongAsEither) {
  proto::BlockDesc b = Block();
  for (const char* n : {"x", "full", "part", "y"}) Var(&b, n);
  Op(&b, "scale", {{"X", {"x"}}}, {{"Out", {"full"}}});
  *b.add_ops() = MakeOp("shard_view", {{"X", {"full"}}}, {{"Out", {"part"}}},
                        {{"nranks", int32_t{2}}});
  Op(&b, "scale", {{"X", {"full"}}}, {{"Out", {"y"}}});
  Op(&b, "scale", {{"X", {"part"}}}, {{"Out", {"y"}}});
  const auto s = ReleaseSchedule(b);
  EXPECT_EQ(s[2], Names{});
  EXPECT_EQ(s[3], (Names{"full", "part", "y"}));
}

}  // namespace
}  // namespace fluid

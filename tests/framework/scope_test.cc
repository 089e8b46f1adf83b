#include "src/framework/scope.h"

#include <gtest/gtest.h>

namespace fluid {
namespace {

TEST(Scope, KidsSeeParentVarsAndShadow) {
  Scope root;
  root.Var("w")->GetMutableTensor()->mutable_data<float>(Shape{1})[0] = 1;
  Scope& kid = root.NewScope();
  EXPECT_EQ(kid.FindVar("w"), root.FindVar("w"));
  Variable* local = kid.Var("w");
  EXPECT_NE(local, root.FindVar("w"));
  EXPECT_EQ(kid.FindVar("w"), local);
  EXPECT_EQ(root.FindVar("nope"), nullptr);
  try {
    root.GetVar("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
  EXPECT_TRUE(root.DeleteKid(&kid));
  EXPECT_FALSE(root.DeleteKid(&kid));
}

TEST(Scope, VarIsStable) {
  Scope s;
  Variable* a = s.Var("a");
  for (int i = 0; i < 100; ++i) s.Var("v" + std::to_string(i));
  EXPECT_EQ(s.Var("a"), a);
}

TEST(Variable, HoldsOneType) {
  Variable v;
  *v.GetMutable<int>() = 3;
  EXPECT_EQ(v.Get<int>(), 3);
  EXPECT_THROW(v.GetMutable<Tensor>(), Error);
  EXPECT_FALSE(v.IsTensor());
}

}  // namespace
}  // namespace fluid

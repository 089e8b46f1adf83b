// Helpers shared by the checkpoint tests: temp directories, a small model
// whose values tell which save they came from, and loading shortcuts.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "src/io/checkpoint.h"
#include "src/io/checkpoint_internal.h"

namespace fluid {
namespace checkpoint_testing {

// A fresh directory under /tmp, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/fluid_ckpt_test_XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const {
    return path_ + "/" + name;
  }

 private:
  std::string path_;
};

inline std::vector<std::string> List(const std::string& dir) {
  return DefaultFileSystem()->ListDir(dir);
}

inline void WriteRaw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

template <typename T>
void SetVar(Scope* scope, const std::string& name, const Shape& shape,
            const std::vector<T>& values) {
  Tensor* t = scope->Var(name)->GetMutableTensor();
  T* p = t->mutable_data<T>(shape);
  ASSERT_EQ(static_cast<size_t>(t->numel()), values.size()) << name;
  if (!values.empty()) std::memcpy(p, values.data(), values.size() * sizeof(T));
}

// The tensor's bytes, for bitwise comparison (NaN payloads, -0.0).
inline std::string Bytes(const Scope& scope, const std::string& name) {
  const Tensor& t = scope.GetVar(name)->GetTensor();
  if (t.bytes() == 0) return "";
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

template <typename T>
T BitsAs(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// A small model whose every value depends on `seed`, so a loaded checkpoint
// tells which save it came from.
inline const std::vector<CheckpointVarSpec>& ModelSpecs() {
  static const std::vector<CheckpointVarSpec> specs = {
      {"fc_0.w", DataType::kFloat32, Shape{3, 4}},
      {"fc_0.w@MOMENT/1", DataType::kFloat64, Shape{3, 4}},
      {"global_step", DataType::kInt64, Shape{1}},
      {"empty", DataType::kFloat32, Shape{0, 5}},
  };
  return specs;
}

inline std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const auto& s : ModelSpecs()) names.push_back(s.name);
  return names;
}

inline proto::ProgramDesc ModelProgram() {
  proto::ProgramDesc p = NewProgram();
  for (const auto& s : ModelSpecs())
    AddVarDesc(p.mutable_blocks(0), s.name, s.dtype, s.shape, true);
  AddVarDesc(p.mutable_blocks(0), "fc_0.tmp", DataType::kFloat32, Shape{-1, 4});
  return p;
}

inline void SetModel(Scope* scope, int seed) {
  std::vector<float> w(12);
  std::vector<double> m(12);
  for (int i = 0; i < 12; ++i) {
    w[i] = seed + 0.25f * i;
    m[i] = -seed - 0.125 * i;
  }
  SetVar<float>(scope, "fc_0.w", Shape{3, 4}, w);
  SetVar<double>(scope, "fc_0.w@MOMENT/1", Shape{3, 4}, m);
  SetVar<int64_t>(scope, "global_step", Shape{1}, {int64_t{1000} * seed});
  SetVar<float>(scope, "empty", Shape{0, 5}, {});
}

inline void ExpectModel(const Scope& scope, int seed) {
  Scope want;
  SetModel(&want, seed);
  for (const auto& s : ModelSpecs()) {
    const Tensor& t = scope.GetVar(s.name)->GetTensor();
    EXPECT_EQ(t.dtype(), s.dtype) << s.name;
    EXPECT_EQ(t.shape(), s.shape) << s.name;
    EXPECT_EQ(Bytes(scope, s.name), Bytes(want, s.name))
        << s.name << " differs from the values of seed " << seed;
  }
}

inline void SaveModel(const std::string& dir, int64_t step,
                      FileSystem* fs = DefaultFileSystem()) {
  Scope scope;
  SetModel(&scope, static_cast<int>(step));
  SaveCheckpoint(scope, ModelNames(), dir, CheckpointInfo{step, step / 10}, fs);
}

// Loads `dir` into a fresh scope and returns the step, checking that the
// values are exactly those saved at that step.
inline int64_t LoadModel(const std::string& dir) {
  Scope scope;
  CheckpointInfo info = LoadCheckpoint(&scope, ModelProgram(), dir);
  ExpectModel(scope, static_cast<int>(info.step));
  EXPECT_EQ(info.epoch, info.step / 10);
  return info.step;
}

inline Error LoadError(Scope* scope, const proto::ProgramDesc& program,
                       const std::string& dir) {
  try {
    LoadCheckpoint(scope, program, dir);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "LoadCheckpoint of '" << dir << "' did not fail";
  return Error(ErrorCode::kInternal, "");
}

inline std::string OnlyFileOf(const std::string& ckpt, const std::string& var) {
  proto::CheckpointManifest m;
  EXPECT_TRUE(
      m.ParseFromString(DefaultFileSystem()->ReadFile(ckpt + "/manifest.pb")));
  for (const auto& e : m.entries())
    if (e.name() == var) return ckpt + "/" + e.file();
  ADD_FAILURE() << var << " not in the manifest";
  return "";
}

// The manifest of checkpoint directory `ckpt`, without its seal (the
// checksum a version 3 manifest ends with, which the proto does not
// declare).
inline proto::CheckpointManifest ReadManifestOf(const std::string& ckpt) {
  proto::CheckpointManifest m;
  EXPECT_TRUE(
      m.ParseFromString(DefaultFileSystem()->ReadFile(ckpt + "/manifest.pb")));
  m.DiscardUnknownFields();
  return m;
}

// Writes `m` as the manifest of `ckpt`, sealed with its checksum as a save
// does: a manifest crafted to be wrong, yet intact.
inline void WriteSealedManifest(const std::string& ckpt,
                                const proto::CheckpointManifest& m) {
  WriteRaw(ckpt + "/manifest.pb", checkpoint_internal::SealManifest(m));
}

// Writes `m` as an older build did (versions 1 and 2: no checksum).
inline void WriteUnsealedManifest(const std::string& ckpt,
                                  proto::CheckpointManifest m, int version) {
  m.set_version(version);
  WriteRaw(ckpt + "/manifest.pb", m.SerializeAsString());
}

}  // namespace checkpoint_testing
}  // namespace fluid

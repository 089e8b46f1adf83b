#include "src/framework/scope.h"

#include <cxxabi.h>

#include <cstdlib>
#include <iterator>

#include "src/framework/lod_rank_table.h"
#include "src/framework/tensor_array.h"

namespace fluid {

std::string HeldTypeName(const std::type_info& type) {
  if (type == typeid(Tensor)) return "a tensor";
  if (type == typeid(SelectedRows)) return "sparse rows (SELECTED_ROWS)";
  if (type == typeid(LoDTensorArray))
    return "a tensor array (LOD_TENSOR_ARRAY)";
  if (type == typeid(LoDRankTable))
    return "a rank table (the output of lod_rank_table)";
  int status = -1;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name =
      status == 0 && demangled != nullptr ? demangled : type.name();
  std::free(demangled);
  // The runtime's handle of an asynchronous collective (c_allreduce's
  // Handle output), which this layer knows by name only.
  if (name == "std::shared_ptr<fluid::CommHandle>")
    return "a collective handle (COMM_HANDLE)";
  return name;
}

Variable* Scope::Var(const std::string& name) {
  auto& slot = vars_[name];
  if (!slot) slot = std::make_unique<Variable>();
  return slot.get();
}

Variable* Scope::FindLocalVar(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

Variable* Scope::FindVar(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    if (Variable* v = s->FindLocalVar(name)) return v;
  }
  return nullptr;
}

Variable* Scope::GetVar(const std::string& name) const {
  Variable* v = FindVar(name);
  FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "variable ",
                     Quote(name), " is not in the scope");
  return v;
}

bool Scope::Erase(const std::string& name) { return vars_.erase(name) > 0; }

Scope& Scope::NewScope() {
  kids_.push_back(std::make_unique<Scope>());
  kids_.back()->parent_ = this;
  return *kids_.back();
}

bool Scope::DeleteKid(Scope* kid) {
  // From the newest: a loop frees its step scopes last made first.
  for (auto it = kids_.rbegin(); it != kids_.rend(); ++it) {
    if (it->get() == kid) {
      kids_.erase(std::next(it).base());
      return true;
    }
  }
  return false;
}

void Scope::DropKids() { kids_.clear(); }

std::vector<std::string> Scope::LocalVarNames() const {
  std::vector<std::string> names;
  names.reserve(vars_.size());
  for (const auto& kv : vars_) names.push_back(kv.first);
  return names;
}

Scope::~Scope() {
  if (parent_ == nullptr) Settle();
}

Scope* Scope::Root() const {
  const Scope* s = this;
  while (s->parent_ != nullptr) s = s->parent_;
  return const_cast<Scope*>(s);
}

bool Scope::HasFence() const {
  Scope* root = Root();
  std::lock_guard<std::mutex> lock(root->fence_mu_);
  for (const auto& [owner, wait] : root->fences_)
    if (wait) return true;
  return false;
}

void Scope::ClearFence(const void* owner) {
  Scope* root = Root();
  std::lock_guard<std::mutex> lock(root->fence_mu_);
  auto it = root->fences_.find(owner);
  if (it != root->fences_.end()) it->second = nullptr;
}

void Scope::SetFence(const void* owner, std::function<void()> wait) {
  Scope* root = Root();
  std::lock_guard<std::mutex> lock(root->fence_mu_);
  root->fences_[owner] = std::move(wait);
}

void Scope::Settle(const void* except) const {
  Scope* root = Root();
  std::vector<std::function<void()>> waits;
  {
    std::lock_guard<std::mutex> lock(root->fence_mu_);
    // An owner's entry stays, emptied, so that its next SetFence (once a
    // step) reuses it rather than allocating.
    for (auto& [owner, wait] : root->fences_) {
      if (owner == except || !wait) continue;
      waits.push_back(std::move(wait));
      wait = nullptr;
    }
  }
  for (auto& wait : waits) wait();
}

}  // namespace fluid

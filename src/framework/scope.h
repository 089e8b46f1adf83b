// Variables and scopes.
//
// A Variable holds one value: a Tensor, a SelectedRows (a sparse gradient),
// or (for collective handles and other runtime objects) any other type. A Scope
// maps names to variables it owns; lookups fall back to the parent scope. Kids
// are owned by their parent and are the place for per-run temporaries. Not
// thread-safe.
#pragma once

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <vector>

#include "src/framework/selected_rows.h"
#include "src/framework/tensor.h"

namespace fluid {

// A readable name of a type a Variable may hold, for messages: "a tensor",
// "sparse rows (SELECTED_ROWS)", "a collective handle (COMM_HANDLE)", else
// the demangled C++ name (never the mangled one typeid gives).
std::string HeldTypeName(const std::type_info& type);

class Variable {
 public:
  Tensor* GetMutableTensor() { return GetMutable<Tensor>(); }
  // An empty variable reads as an uninitialised tensor.
  const Tensor& GetTensor() const {
    static const Tensor kEmpty;
    FLUID_ENFORCE(!IsSelectedRows(),
                  "variable holds sparse rows (SELECTED_ROWS), not a tensor");
    return value_.has_value() ? Get<Tensor>() : kEmpty;
  }
  bool HasValue() const { return value_.has_value(); }
  bool IsTensor() const {
    return !value_.has_value() || value_.type() == typeid(Tensor);
  }

  bool IsSelectedRows() const {
    return value_.has_value() && value_.type() == typeid(SelectedRows);
  }
  // The SelectedRows this variable holds, made in place of a tensor that
  // was never given memory (shape inference may have sized one before the
  // kernel decided the value is sparse).
  SelectedRows* GetMutableSelectedRows() {
    if (value_.has_value() && value_.type() == typeid(Tensor) &&
        !Get<Tensor>().initialized())
      value_.reset();
    return GetMutable<SelectedRows>();
  }

  template <typename T>
  T* GetMutable() {
    if (!value_.has_value()) value_.emplace<T>();
    T* p = std::any_cast<T>(&value_);
    FLUID_ENFORCE(p != nullptr, "variable holds ", HeldTypeName(value_.type()),
                  ", not ", HeldTypeName(typeid(T)));
    return p;
  }
  template <typename T>
  const T& Get() const {
    const T* p = std::any_cast<T>(&value_);
    FLUID_ENFORCE(p != nullptr, "variable holds ",
                  value_.has_value() ? HeldTypeName(value_.type())
                                     : std::string("nothing"),
                  ", not ", HeldTypeName(typeid(T)));
    return *p;
  }

 private:
  std::any value_;
};

class Scope {
 public:
  Scope() = default;
  // Waits for the writes still in flight into its variables (Settle).
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // Returns the variable named `name` in this scope, creating it if needed
  // (a parent's variable of that name is shadowed).
  Variable* Var(const std::string& name);
  // Finds `name` here or in an ancestor; null when absent.
  Variable* FindVar(const std::string& name) const;
  Variable* FindLocalVar(const std::string& name) const;
  // Like FindVar, but a missing name is a kNotFound error.
  Variable* GetVar(const std::string& name) const;
  bool Erase(const std::string& name);

  Scope& NewScope();
  // Destroys one kid (and its variables); false if `kid` is not ours.
  bool DeleteKid(Scope* kid);
  void DropKids();
  const Scope* parent() const { return parent_; }
  std::vector<std::string> LocalVarNames() const;

  // The fence: writes still in flight into this scope's variables (a
  // sharded job's parameter all-gathers, which overlap the next step).
  // Whoever starts them registers how to wait for them under its own key
  // (replacing its previous one); Settle waits for every registered owner
  // but `except` and forgets them. Every reader outside the writer passes
  // through it: Executor::Prepare and Run (but for the writer's own
  // program), the checkpoint and model io, the Python scope. Kept by the
  // root scope; thread-safe.
  void SetFence(const void* owner, std::function<void()> wait);
  void Settle(const void* except = nullptr) const;
  // Forgets `owner`'s fence without waiting (it has waited itself).
  void ClearFence(const void* owner);
  // Whether some owner's writes are in flight.
  bool HasFence() const;

 private:
  Scope* Root() const;
  mutable std::mutex fence_mu_;
  mutable std::map<const void*, std::function<void()>> fences_;
  std::map<std::string, std::unique_ptr<Variable>> vars_;
  std::vector<std::unique_ptr<Scope>> kids_;
  Scope* parent_ = nullptr;
};

}  // namespace fluid

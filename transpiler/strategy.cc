#include "transpiler/strategy.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "src/framework/enforce.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr char kPrefix[] = "DistributedStrategy.";

// Calls `visit(message, field, path)` for every leaf field of `m`, in
// declaration order, descending into sub-messages (unset ones as their
// defaults).
template <typename Visit>
void ForEachLeaf(const Message& m, const std::string& prefix, Visit&& visit) {
  const auto* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      ForEachLeaf(m.GetReflection()->GetMessage(m, f), path + ".", visit);
    } else {
      visit(m, f, path);
    }
  }
}

// A number field's value as a double (for its range).
double NumberOf(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return static_cast<double>(r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return static_cast<double>(r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return r->GetFloat(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return r->GetDouble(m, f);
    default:
      return 0;
  }
}

// A field's value as text; a list of names (a repeated string field) is
// its items joined by commas.
std::string ValueText(const Message& m, const FieldDescriptor* f) {
  if (f->is_repeated()) {
    std::string out;
    for (int i = 0; i < m.GetReflection()->FieldSize(m, f); ++i)
      out +=
          (i == 0 ? "" : ",") + m.GetReflection()->GetRepeatedString(m, f, i);
    return out;
  }
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING)
    return m.GetReflection()->GetString(m, f);
  std::string out;
  google::protobuf::TextFormat::PrintFieldValueToString(m, f, -1, &out);
  return out;
}

// The declared range or allowed values of one leaf field.
void CheckDeclared(const Message& m, const FieldDescriptor* f,
                   const std::string& path) {
  const auto& o = f->options();
  if (f->is_repeated()) return;  // lists of names declare no range
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
    if (o.ExtensionSize(proto::allowed) == 0) return;
    const std::string v = m.GetReflection()->GetString(m, f);
    const int n = o.ExtensionSize(proto::allowed);
    std::string list;
    for (int i = 0; i < n; ++i) {
      if (o.GetExtension(proto::allowed, i) == v) return;
      list += (i == 0      ? ""
               : i + 1 < n ? ", "
                           : " or ") +
              o.GetExtension(proto::allowed, i);
    }
    FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, path, " must be ", list,
                ", got ", Quote(v));
  }
  const bool has_min = o.HasExtension(proto::min_value);
  const bool has_max = o.HasExtension(proto::max_value);
  if (!has_min && !has_max) return;
  const double v = NumberOf(m, f);
  const double lo = has_min ? o.GetExtension(proto::min_value)
                            : -std::numeric_limits<double>::infinity();
  const double hi = has_max ? o.GetExtension(proto::max_value)
                            : std::numeric_limits<double>::infinity();
  if (v >= lo && v <= hi) return;  // false for NaN
  std::ostringstream range;
  if (has_min && has_max) {
    range << "in [" << lo << ", " << hi << "]";
  } else if (has_min) {
    range << ">= " << lo;
  } else {
    range << "<= " << hi;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, path, " must be ",
              range.str(), ", got ", ValueText(m, f));
}

const FieldDescriptor* Resolve(const Message& root, Message* mutable_root,
                               const std::string& path, const Message** owner,
                               Message** mutable_owner);

// The fields a field set to other than its default needs true (needs)
// or false (excludes).
void CheckPairs(const proto::DistributedStrategy& s, const Message& m,
                const FieldDescriptor* f, const std::string& path) {
  const auto& o = f->options();
  if (!o.HasExtension(proto::needs) && !o.HasExtension(proto::excludes)) return;
  proto::DistributedStrategy unset;
  const std::string value = ValueText(m, f);
  const Message* def_owner = nullptr;
  const FieldDescriptor* def =
      Resolve(unset, nullptr, path, &def_owner, nullptr);
  if (value == ValueText(*def_owner, def)) return;  // at its default
  auto flag = [&s](const std::string& other) {
    const Message* owner = nullptr;
    const FieldDescriptor* g = Resolve(s, nullptr, other, &owner, nullptr);
    FLUID_ENFORCE_CODE(g->cpp_type() == FieldDescriptor::CPPTYPE_BOOL,
                       ErrorCode::kInternal, kPrefix, other,
                       " is named by needs or excludes but is not "
                       "a bool");
    return owner->GetReflection()->GetBool(*owner, g);
  };
  if (o.HasExtension(proto::needs))
    FLUID_ENFORCE(flag(o.GetExtension(proto::needs)), kPrefix, path, " needs ",
                  o.GetExtension(proto::needs));
  if (o.HasExtension(proto::excludes))
    FLUID_ENFORCE(!flag(o.GetExtension(proto::excludes)), kPrefix, path, " (",
                  value, ") does not combine with ",
                  o.GetExtension(proto::excludes), " yet; use one of the two");
}

// Walks `path` ("a.b") down to its leaf: the message holding it (mutable
// when `mutable_root` is given) and its field. An unknown name or a path
// that stops at a group of settings is an error naming the path.
const FieldDescriptor* Resolve(const Message& root, Message* mutable_root,
                               const std::string& path, const Message** owner,
                               Message** mutable_owner) {
  const Message* m = &root;
  Message* mm = mutable_root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string name = path.substr(start, dot - start);
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(name);
    FLUID_ENFORCE(f != nullptr, "DistributedStrategy has no field ",
                  Quote(path));
    const bool group = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (dot == std::string::npos) {
      FLUID_ENFORCE(!group, kPrefix, path,
                    " is a group of settings: set one of its fields (", path,
                    ".<name>)");
      *owner = m;
      if (mutable_owner != nullptr) *mutable_owner = mm;
      return f;
    }
    FLUID_ENFORCE(group, "DistributedStrategy has no field ", Quote(path), " (",
                  path.substr(0, dot), " is a single setting)");
    if (mm != nullptr) {
      mm = mm->GetReflection()->MutableMessage(mm, f);
      m = mm;
    } else {
      m = &m->GetReflection()->GetMessage(*m, f);
    }
    start = dot + 1;
  }
}

bool ParseBool(const std::string& v, bool* out) {
  if (v == "true" || v == "1" || v == "yes" || v == "True") {
    *out = true;
  } else if (v == "false" || v == "0" || v == "no" || v == "False") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

bool ParseInt(const std::string& v, int64_t* out) {
  if (v.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = x;
  return true;
}

bool ParseReal(const std::string& v, double* out) {
  if (v.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(v.c_str(), &end);
  return *end == '\0';
}

// Sets field `f` of `m` from `v`; false when `v` is not of its type. A
// list of names (a repeated string field) takes them comma-separated.
bool SetFromText(Message* m, const FieldDescriptor* f, const std::string& v) {
  const Reflection* r = m->GetReflection();
  if (f->is_repeated()) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_STRING) return false;
    r->ClearField(m, f);
    size_t start = 0;
    while (start <= v.size()) {
      const size_t comma = std::min(v.find(',', start), v.size());
      const std::string item = v.substr(start, comma - start);
      if (!item.empty()) r->AddString(m, f, item);
      start = comma + 1;
    }
    return true;
  }
  bool b = false;
  int64_t i = 0;
  double d = 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      if (!ParseBool(v, &b)) return false;
      r->SetBool(m, f, b);
      return true;
    case FieldDescriptor::CPPTYPE_INT32:
      if (!ParseInt(v, &i) || i < std::numeric_limits<int32_t>::min() ||
          i > std::numeric_limits<int32_t>::max())
        return false;
      r->SetInt32(m, f, static_cast<int32_t>(i));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:
      if (!ParseInt(v, &i)) return false;
      r->SetInt64(m, f, i);
      return true;
    case FieldDescriptor::CPPTYPE_FLOAT:
      if (!ParseReal(v, &d)) return false;
      r->SetFloat(m, f, static_cast<float>(d));
      return true;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      if (!ParseReal(v, &d)) return false;
      r->SetDouble(m, f, d);
      return true;
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(m, f, v);
      return true;
    default:
      return false;
  }
}

// Fills every unset field of `m` with its default, recursively.
void SetDefaults(Message* m) {
  const auto* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      SetDefaults(r->MutableMessage(m, f));
    } else if (!f->is_repeated() && !r->HasField(*m, f)) {
      const bool ok = SetFromText(m, f, ValueText(*m, f));
      FLUID_ENFORCE_CODE(ok, ErrorCode::kInternal, "cannot set the default of ",
                         kPrefix, f->full_name());
    }
  }
}

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty())
      first_ = "line " + std::to_string(line + 1) + ": " + message;
  }
  void AddWarning(int, int, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace

int ShardStage(const proto::DistributedStrategy& s) {
  return s.sharding() ? s.sharding_configs().stage() : 0;
}

void CheckStrategyRanges(const proto::DistributedStrategy& s) {
  ForEachLeaf(s, "", CheckDeclared);
}

void ValidateStrategy(const proto::DistributedStrategy& s,
                      const proto::TrainingJob* job) {
  CheckStrategyRanges(s);
  ForEachLeaf(s, "",
              [&s](const Message& m, const FieldDescriptor* f,
                   const std::string& path) { CheckPairs(s, m, f, path); });
  // Nothing the job decides at present: a sparse gradient under sharding
  // keeps its parameter whole on every rank (transpiler/sharding.h).
  (void)job;
}

proto::DistributedStrategy CanonicalStrategy(
    const proto::DistributedStrategy& s) {
  proto::DistributedStrategy out = s;
  SetDefaults(&out);
  return out;
}

std::string CanonicalBytes(const proto::DistributedStrategy& s) {
  const proto::DistributedStrategy c = CanonicalStrategy(s);
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  c.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

std::vector<std::pair<std::string, std::string>> StrategyFields(
    const proto::DistributedStrategy& s) {
  std::vector<std::pair<std::string, std::string>> out;
  ForEachLeaf(
      s, "",
      [&](const Message& m, const FieldDescriptor* f, const std::string& path) {
        out.emplace_back(path, ValueText(m, f));
      });
  return out;
}

std::string GetStrategyField(const proto::DistributedStrategy& s,
                             const std::string& path) {
  const Message* owner = nullptr;
  const FieldDescriptor* f = Resolve(s, nullptr, path, &owner, nullptr);
  return ValueText(*owner, f);
}

void SetStrategyField(proto::DistributedStrategy* s, const std::string& path,
                      const std::string& value) {
  const Message* owner = nullptr;
  Message* mutable_owner = nullptr;
  const FieldDescriptor* f = Resolve(*s, s, path, &owner, &mutable_owner);
  FLUID_ENFORCE(SetFromText(mutable_owner, f, value), kPrefix, path,
                " takes a ", f->cpp_type_name(), ", got ", Quote(value));
}

std::string StrategyFieldType(const std::string& path) {
  const proto::DistributedStrategy s;
  const Message* owner = nullptr;
  return Resolve(s, nullptr, path, &owner, nullptr)->cpp_type_name();
}

bool StrategyFieldIsList(const std::string& path) {
  const proto::DistributedStrategy s;
  const Message* owner = nullptr;
  return Resolve(s, nullptr, path, &owner, nullptr)->is_repeated();
}

std::string StrategyToText(const proto::DistributedStrategy& s) {
  std::string out;
  google::protobuf::TextFormat::PrintToString(s, &out);
  return out;
}

proto::DistributedStrategy StrategyFromText(const std::string& text,
                                            const std::string& where) {
  proto::DistributedStrategy s;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  FLUID_ENFORCE(parser.ParseFromString(text, &s), where,
                ": not a DistributedStrategy: ", errors.first());
  return s;
}

}  // namespace fluid

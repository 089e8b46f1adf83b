#include "src/distributed/run_settings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "src/framework/enforce.h"
#include "src/framework/hash.h"

namespace fluid {

namespace {

uint64_t SettingHash(const RunSetting& s) {
  uint64_t h = Fnv1a64(s.name);
  h = Fnv1a64(std::string_view("\0", 1), h);
  return Fnv1a64(s.value, h);
}

// A fixed-size record of one rank's setting, for the exchange on a
// mismatch: the value's full length, then the name and the start of the
// value, each NUL-padded.
constexpr size_t kNameBytes = 120;
constexpr size_t kValueBytes = kMaxQuotedBytes;
constexpr size_t kRecordBytes = 8 + kNameBytes + kValueBytes;
constexpr int64_t kRecordWords = (kRecordBytes + 7) / 8;

struct Received {
  std::string name;
  std::string value;  // at most kValueBytes
  int64_t full_length = 0;
};

std::vector<Received> ExchangeSetting(Communicator* comm,
                                      const RunSetting& mine) {
  Tensor in, out;
  char* send =
      reinterpret_cast<char*>(in.mutable_data<int64_t>(Shape{kRecordWords}));
  std::memset(send, 0, kRecordWords * 8);
  const int64_t length = static_cast<int64_t>(mine.value.size());
  std::memcpy(send, &length, 8);
  std::memcpy(send + 8, mine.name.data(),
              std::min(mine.name.size(), kNameBytes));
  std::memcpy(send + 8 + kNameBytes, mine.value.data(),
              std::min(mine.value.size(), kValueBytes));
  out.mutable_data<int64_t>(Shape{kRecordWords * comm->size()});
  comm->AllGather(in, out);
  const char* recv = reinterpret_cast<const char*>(out.data<int64_t>());
  std::vector<Received> all(comm->size());
  for (int r = 0; r < comm->size(); ++r) {
    const char* rec = recv + r * kRecordWords * 8;
    std::memcpy(&all[r].full_length, rec, 8);
    all[r].name.assign(rec + 8, strnlen(rec + 8, kNameBytes));
    const int64_t kept =
        std::min<int64_t>(std::max<int64_t>(all[r].full_length, 0),
                          static_cast<int64_t>(kValueBytes));
    all[r].value.assign(rec + 8 + kNameBytes, static_cast<size_t>(kept));
  }
  return all;
}

// How a received value is shown: as is when it is a short plain token,
// else quoted (and, when it was cut before the exchange, with its length).
std::string Display(const Received& v) {
  bool plain = !v.value.empty() && v.full_length <= 64;
  for (char c : v.value) {
    const unsigned char u = static_cast<unsigned char>(c);
    plain = plain && u > 0x20 && u < 0x7f && c != '\'' && c != ',';
  }
  if (plain) return v.value;
  std::string q = Quote(v.value);
  if (v.full_length > static_cast<int64_t>(v.value.size())) {
    q.insert(q.size() - 1, "...");
    q += " (" + std::to_string(v.full_length) + " bytes)";
  }
  return q;
}

}  // namespace

RunSetting RunSetting::Int(std::string name, int64_t value) {
  return {std::move(name), std::to_string(value)};
}

RunSetting RunSetting::Real(std::string name, double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return {std::move(name), text};
}

RunSetting RunSetting::Text(std::string name, std::string value) {
  return {std::move(name), std::move(value)};
}

RunSetting RunSetting::Flag(std::string name, bool value) {
  return {std::move(name), value ? "yes" : "no"};
}

std::string DescribeSettingMismatch(const std::string& name,
                                    const std::vector<std::string>& values) {
  // Distinct values in order of first appearance, each with its ranks.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int r = 0; r < static_cast<int>(values.size()); ++r) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == values[r]; });
    if (it == groups.end()) {
      groups.push_back({values[r], {r}});
    } else {
      it->second.push_back(r);
    }
  }
  constexpr size_t kMaxGroups = 4, kMaxRanks = 8;
  std::ostringstream os;
  os << "ranks disagree on " << name << ": ";
  for (size_t g = 0; g < groups.size() && g < kMaxGroups; ++g) {
    const std::vector<int>& ranks = groups[g].second;
    os << (g ? ", " : "") << (ranks.size() == 1 ? "rank " : "ranks ");
    for (size_t i = 0; i < ranks.size() && i < kMaxRanks; ++i)
      os << (i ? "," : "") << ranks[i];
    if (ranks.size() > kMaxRanks)
      os << " and " << ranks.size() - kMaxRanks << " more";
    os << (ranks.size() == 1 ? " has " : " have ") << groups[g].first;
  }
  if (groups.size() > kMaxGroups)
    os << ", and " << groups.size() - kMaxGroups << " other value(s)";
  return os.str();
}

void CheckRunSettingsAgree(Communicator* comm,
                           const std::vector<RunSetting>& settings) {
  FLUID_ENFORCE(comm != nullptr, "CheckRunSettingsAgree: null communicator");
  uint64_t fingerprint = Fnv1a64(std::to_string(settings.size()));
  for (const RunSetting& s : settings)
    fingerprint = fingerprint * 31 + SettingHash(s);
  const std::vector<uint64_t> all = comm->AllGatherValue(fingerprint);
  if (std::all_of(all.begin(), all.end(),
                  [&](uint64_t f) { return f == all[0]; }))
    return;

  // Every rank saw the same fingerprints, so every rank is here, and from
  // now on every rank sees the same gathered values and so issues the same
  // collectives: first the longest list, then one hash per setting until
  // the first that differs, then that setting's values.
  const std::vector<uint64_t> counts = comm->AllGatherValue(settings.size());
  const uint64_t longest = *std::max_element(counts.begin(), counts.end());
  const RunSetting missing{"(no setting)", ""};
  for (uint64_t i = 0; i < longest; ++i) {
    const RunSetting& mine = i < settings.size() ? settings[i] : missing;
    const std::vector<uint64_t> hashes =
        comm->AllGatherValue(SettingHash(mine));
    if (std::all_of(hashes.begin(), hashes.end(),
                    [&](uint64_t h) { return h == hashes[0]; }))
      continue;
    const std::vector<Received> got = ExchangeSetting(comm, mine);
    bool same_name = true;
    for (const Received& v : got)
      same_name = same_name && v.name == got[0].name;
    std::vector<std::string> shown;
    for (const Received& v : got)
      shown.push_back(same_name ? Display(v) : v.name + "=" + Display(v));
    FLUID_THROW(ErrorCode::kAborted,
                DescribeSettingMismatch(
                    same_name ? got[0].name : "the run settings", shown));
  }
  FLUID_THROW(ErrorCode::kAborted,
              "ranks disagree on the run settings (their fingerprints "
              "differ but no single setting does)");
}

}  // namespace fluid

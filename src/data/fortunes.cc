#include "src/data/fortunes.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "src/framework/enforce.h"
#include "src/io/crc32.h"

namespace fluid {

namespace {

namespace fs = std::filesystem;

constexpr char32_t kReplacement = 0xFFFD;

// The range the k-th continuation byte (k >= 1) of a sequence led by `lead`
// must fall in (Unicode's table of well-formed UTF-8 byte sequences).
std::pair<uint8_t, uint8_t> ContinuationRange(uint8_t lead, int k) {
  if (k == 1) {
    if (lead == 0xE0) return {0xA0, 0xBF};
    if (lead == 0xED) return {0x80, 0x9F};
    if (lead == 0xF0) return {0x90, 0xBF};
    if (lead == 0xF4) return {0x80, 0x8F};
  }
  return {0x80, 0xBF};
}

// The continuation bytes a lead byte announces; -1 for a byte that cannot
// start a sequence.
int Continuations(uint8_t lead) {
  if (lead < 0x80) return 0;
  if (lead >= 0xC2 && lead <= 0xDF) return 1;
  if (lead >= 0xE0 && lead <= 0xEF) return 2;
  if (lead >= 0xF0 && lead <= 0xF4) return 3;
  return -1;
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  FLUID_ENFORCE(in.good(), "fortunes: cannot open '", path.string(), "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  FLUID_ENFORCE(!in.bad(), "fortunes: cannot read '", path.string(), "'");
  return bytes.str();
}

// The topic files of `dir`, in name order.
std::vector<std::string> TopicFiles(const std::string& dir) {
  std::error_code ec;
  FLUID_ENFORCE_CODE(fs::is_directory(dir, ec), ErrorCode::kNotFound,
                     "no fortunes in '", dir, "': install Debian's ",
                     "'fortunes' package (apt-get install fortunes)");
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find('.') != std::string::npos || e.is_symlink() ||
        !e.is_regular_file())
      continue;  // .dat indexes and .u8 links
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The quotations of one decoded file: cut at "\n%\n", stripped of '\n'.
void SplitQuotations(const std::string& topic, const std::u32string& text,
                     FortunesSplit split, std::vector<Quotation>* out) {
  const std::u32string separator = U"\n%\n";
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::u32string::npos) end = text.size();
    size_t a = start, b = end;
    while (a < b && text[a] == U'\n') ++a;
    while (b > a && text[b - 1] == U'\n') --b;
    std::u32string quote = text.substr(a, b - a);
    if (!quote.empty() && quote != U"%" &&
        (split == FortunesSplit::kAll ||
         (split == FortunesSplit::kValid) == IsValidationQuotation(quote)))
      out->push_back(Quotation{topic, std::move(quote)});
    start = end + separator.size();
  }
}

Tensor Int64Tensor(const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t;
  int64_t* p = t.mutable_data<int64_t>(shape);
  std::copy(values.begin(), values.end(), p);
  return t;
}

}  // namespace

FortunesSplit ParseFortunesSplit(const std::string& split) {
  if (split == "train") return FortunesSplit::kTrain;
  if (split == "valid") return FortunesSplit::kValid;
  FLUID_ENFORCE(split == "all", "fortunes: split must be 'train', 'valid' ",
                "or 'all', got '", split, "'");
  return FortunesSplit::kAll;
}

std::u32string DecodeUtf8(std::string_view bytes) {
  std::u32string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const uint8_t lead = static_cast<uint8_t>(bytes[i++]);
    const int need = Continuations(lead);
    if (need <= 0) {
      out.push_back(need == 0 ? char32_t{lead} : kReplacement);
      continue;
    }
    char32_t c = lead & (0x3F >> need);
    int k = 1;
    for (; k <= need && i < bytes.size(); ++k, ++i) {
      const uint8_t next = static_cast<uint8_t>(bytes[i]);
      const auto range = ContinuationRange(lead, k);
      if (next < range.first || next > range.second) break;
      c = (c << 6) | (next & 0x3F);
    }
    // A maximal ill-formed subpart becomes one U+FFFD; the byte that broke
    // it is read again.
    out.push_back(k > need ? c : kReplacement);
  }
  return out;
}

std::string EncodeUtf8(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

bool IsValidationQuotation(const std::u32string& text) {
  return Crc32(EncodeUtf8(text)) % 100 < 10;
}

std::vector<Quotation> ReadFortunes(const std::string& dir,
                                    FortunesSplit split) {
  std::vector<Quotation> out;
  for (const std::string& name : TopicFiles(dir)) {
    const std::u32string text = DecodeUtf8(ReadBytes(fs::path(dir) / name));
    SplitQuotations(name, text, split, &out);
  }
  FLUID_ENFORCE_CODE(!out.empty() || split == FortunesSplit::kValid,
                     ErrorCode::kNotFound, "no fortunes in '", dir,
                     "': it holds no topic file with quotations");
  return out;
}

CharVocab CharVocab::Build(const std::vector<Quotation>& quotations,
                           int64_t max_size) {
  FLUID_ENFORCE(max_size == 0 || max_size >= 3,
                "CharVocab: max_size must be 0 or >= 3, got ", max_size);
  std::map<char32_t, int64_t> counts;
  for (const Quotation& q : quotations)
    for (char32_t c : q.text) ++counts[c];
  std::vector<std::pair<char32_t, int64_t>> ranked(counts.begin(),
                                                   counts.end());
  // Stable: equal counts stay in code point order.
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  CharVocab v;
  v.tokens_.assign(3, 0);
  for (const auto& [c, count] : ranked) {
    if (max_size > 0 && v.size() >= max_size) break;
    v.ids_[c] = v.size();
    v.tokens_.push_back(c);
  }
  return v;
}

int64_t CharVocab::Id(char32_t c) const {
  auto it = ids_.find(c);
  return it == ids_.end() ? kFortunesUnk : it->second;
}

std::vector<int64_t> LmStream(const std::vector<Quotation>& quotations,
                              const CharVocab& vocab) {
  std::vector<int64_t> stream;
  for (const Quotation& q : quotations) {
    for (char32_t c : q.text) stream.push_back(vocab.Id(c));
    stream.push_back(kFortunesEos);
  }
  return stream;
}

Dataset LmWindows(const std::vector<int64_t>& stream, int64_t seq_len) {
  FLUID_ENFORCE(seq_len >= 1, "LmWindows: seq_len must be >= 1, got ", seq_len);
  const int64_t n = static_cast<int64_t>(stream.size());
  const int64_t windows = n > seq_len ? (n - seq_len - 1) / seq_len + 1 : 0;
  std::vector<int64_t> tokens(stream.begin(),
                              stream.begin() + windows * seq_len);
  std::vector<int64_t> next(
      stream.begin() + (windows > 0 ? 1 : 0),
      stream.begin() + windows * seq_len + (windows > 0 ? 1 : 0));
  Dataset d;
  d.names = {"tokens", "next"};
  d.tensors = {Int64Tensor(Shape{windows, seq_len, 1}, tokens),
               Int64Tensor(Shape{windows, seq_len, 1}, next)};
  return d;
}

std::vector<std::string> FortunesTopics(
    const std::vector<Quotation>& all_quotations, int64_t num_topics) {
  FLUID_ENFORCE(num_topics >= 1, "FortunesTopics: num_topics must be >= 1, ",
                "got ", num_topics);
  std::map<std::string, int64_t> counts;
  for (const Quotation& q : all_quotations) ++counts[q.topic];
  std::vector<std::pair<std::string, int64_t>> ranked(counts.begin(),
                                                      counts.end());
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> topics;
  for (const auto& entry : ranked) {
    if (static_cast<int64_t>(topics.size()) == num_topics) break;
    topics.push_back(entry.first);
  }
  return topics;
}

Dataset TopicSamples(const std::vector<Quotation>& quotations,
                     const std::vector<std::string>& topics,
                     const CharVocab& vocab, int64_t max_len) {
  FLUID_ENFORCE(max_len >= 1, "TopicSamples: max_len must be >= 1, got ",
                max_len);
  std::vector<int64_t> words, lengths, labels;
  for (const Quotation& q : quotations) {
    auto it = std::find(topics.begin(), topics.end(), q.topic);
    if (it == topics.end()) continue;
    const int64_t len = std::min<int64_t>(q.text.size(), max_len);
    for (int64_t k = 0; k < max_len; ++k)
      words.push_back(k < len ? vocab.Id(q.text[k]) : kFortunesPad);
    lengths.push_back(len);
    labels.push_back(std::distance(topics.begin(), it));
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  Dataset d;
  d.names = {"words", "length", "label"};
  d.tensors = {Int64Tensor(Shape{n, max_len, 1}, words),
               Int64Tensor(Shape{n}, lengths),
               Int64Tensor(Shape{n, 1}, labels)};
  return d;
}

}  // namespace fluid

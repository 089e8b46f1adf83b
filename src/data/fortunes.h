// Quotations from Debian's `fortunes` package as text data sets: the char
// language-model windows of `trainer --model transformer` and the topic
// classification samples of `trainer --model textcnn`.
//
// The directory holds one file per topic (/usr/share/games/fortunes/art,
// ...), its quotations separated by lines holding "%". Everything here is a
// pure function of the files and reproduces fluid.datasets.fortunes
// (bindings/python/fluid/datasets.py) exactly, at the char level:
//
// - topics are the regular files whose names hold no '.' (not the .dat
//   indexes, not the .u8 links), in name order; quotations in file order;
// - a file is decoded from UTF-8, each invalid byte sequence becoming one
//   U+FFFD per maximal ill-formed subpart (Python's errors="replace"), cut
//   at "\n%\n", each piece stripped of '\n' at both ends, empty pieces and
//   "%" dropped;
// - a quotation is in the validation split when crc32(its UTF-8) % 100 < 10
//   (zlib's CRC-32), in the training split otherwise;
// - tokens are Unicode code points; the vocabulary holds <pad>, <unk>,
//   <eos> (ids 0, 1, 2), then the training split's code points by falling
//   count, ties by code point, cut at max_size ids in all.
//
// Errors name the directory or file. Free of shared state; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/data/idx_reader.h"

namespace fluid {

// Where Debian's package installs the quotations.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

// The reserved token ids of every fortunes vocabulary.
inline constexpr int64_t kFortunesPad = 0;
inline constexpr int64_t kFortunesUnk = 1;
inline constexpr int64_t kFortunesEos = 2;

struct Quotation {
  std::string topic;    // the file's name
  std::u32string text;  // code points
};

enum class FortunesSplit { kTrain, kValid, kAll };

// "train", "valid" or "all"; anything else is an error.
FortunesSplit ParseFortunesSplit(const std::string& split);

// `bytes` decoded from UTF-8, ill-formed sequences replaced as Python's
// bytes.decode("utf-8", errors="replace") does.
std::u32string DecodeUtf8(std::string_view bytes);
std::string EncodeUtf8(const std::u32string& text);

// Whether `text` belongs to the validation split.
bool IsValidationQuotation(const std::u32string& text);

// Every topic's quotations (split kAll), or those of one split, in topic
// then file order. An error when `dir` is missing or holds none.
std::vector<Quotation> ReadFortunes(const std::string& dir,
                                    FortunesSplit split = FortunesSplit::kAll);

// A char vocabulary: id -> token (ids below 3 are the reserved ones, their
// tokens 0) and token -> id.
class CharVocab {
 public:
  // From the quotations' code points (pass the training split), keeping at
  // most max_size ids (>= 3) in all; 0: every code point.
  static CharVocab Build(const std::vector<Quotation>& quotations,
                         int64_t max_size = 0);
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  // The token of a non-reserved id.
  char32_t token(int64_t id) const { return tokens_[id]; }
  // The id of a code point; kFortunesUnk when the vocabulary lacks it.
  int64_t Id(char32_t c) const;

 private:
  std::vector<char32_t> tokens_;
  std::unordered_map<char32_t, int64_t> ids_;
};

// The quotations' ids, each followed by kFortunesEos: the language-model
// stream of a split.
std::vector<int64_t> LmStream(const std::vector<Quotation>& quotations,
                              const CharVocab& vocab);

// The windows of `stream` (fluid.datasets.fortunes.lm_reader): window k
// starts at k * seq_len; "tokens" its seq_len ids, "next" the seq_len ids
// one further on, each int64 [windows, seq_len, 1]. Needs no window to run
// past the stream's end, so the last partial one is dropped.
Dataset LmWindows(const std::vector<int64_t>& stream, int64_t seq_len);

// The num_topics topics with the most quotations (all splits), ties by
// name: the classes of topic classification, in label order.
std::vector<std::string> FortunesTopics(
    const std::vector<Quotation>& all_quotations, int64_t num_topics);

// The quotations of `topics` as classification samples, in order: "words"
// int64 [N, max_len, 1] (the first max_len ids, kFortunesPad after),
// "length" int64 [N] (min(length, max_len), at least 1 as no quotation is
// empty) and "label" int64 [N, 1] (the topic's index in `topics`).
Dataset TopicSamples(const std::vector<Quotation>& quotations,
                     const std::vector<std::string>& topics,
                     const CharVocab& vocab, int64_t max_len);

}  // namespace fluid

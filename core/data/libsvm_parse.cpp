// The LIBSVM line parser and the line source (libsvm.hpp): no models, no dense rows here.

#include "core/data/libsvm.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/data_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dt::data {
namespace {

constexpr bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }
constexpr bool ends_token(char c) noexcept { return c == ' ' || c == '\t' || c == '#'; }

// The first space, tab or '#' at or after p (16 bytes at a time with SSE2: the index's pass
// skips every value this way).
const char* token_end(const char* p, const char* end) noexcept {
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' ');
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i hash = _mm_set1_epi8('#');
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, tab)),
                                     _mm_cmpeq_epi8(v, hash));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(hit));
    if (mask != 0) return p + __builtin_ctz(mask);
    p += 16;
  }
#endif
  while (p != end && !ends_token(*p)) ++p;
  return p;
}

// A finite number at p that ends its token (at `end`, a space, a tab or '#'), with an optional
// leading '+' (svmlight's "+1"): the byte after it, or nullptr. One scan: the number's own.
const char* number_end(const char* p, const char* end, double& out) noexcept {
  const char* q = p;
  if (q != end && *q == '+') ++q;
  if (q == end || *q == '+' || (q != p && *q == '-')) return nullptr;
  const auto [ptr, ec] = detail::parse_double(q, end, out);
  if (ec != std::errc{} || !std::isfinite(out) || (ptr != end && !ends_token(*ptr))) return nullptr;
  return ptr;
}

LineKind problem_at(LibsvmProblem& problem, const char* begin, const char* at, std::string what) {
  problem.column = static_cast<std::size_t>(at - begin) + 1;
  problem.what = std::move(what);
  return LineKind::kError;
}

// The parser; kValues false skips over the values without reading them (the index's pass).
template <bool kValues>
LineKind parse_line(std::string_view line, LibsvmRow& row, LibsvmProblem& problem) {
  const char* const begin = line.data();
  const char* end = begin + line.size();
  if (end != begin && end[-1] == '\r') --end;
  row.entries.clear();
  const char* p = begin;
  while (p != end && is_space(*p)) ++p;
  if (p == end || *p == '#') return LineKind::kBlank;

  const char* label_end = number_end(p, end, row.label_value);
  if (label_end == nullptr) {
    const std::string_view label(p, static_cast<std::size_t>(token_end(p, end) - p));
    const auto quoted = detail::quote_for_message(label);
    if (label.find(':') != std::string_view::npos) {
      return problem_at(problem, begin, p, fmt::format(
          "the line starts with {}, not a label; every line is `label index:value ...`",
          quoted));
    }
    if (label.find(',') != std::string_view::npos) {
      return problem_at(problem, begin, p, fmt::format(
          "label {} is a list (multi-label LIBSVM), which is not supported; give one number",
          quoted));
    }
    return problem_at(problem, begin, p, fmt::format(
        "label {} is not a finite number; a line is `label index:value ...`", quoted));
  }
  row.label = std::string_view(p, static_cast<std::size_t>(label_end - p));
  p = label_end;

  std::uint64_t last = 0;
  while (true) {
    while (p != end && is_space(*p)) ++p;
    if (p == end || *p == '#') break;
    const char* const token = p;
    std::uint64_t index = 0;
    while (p != end && *p >= '0' && *p <= '9') {
      index = index * 10 + static_cast<unsigned>(*p - '0');
      if (index > kMaxLibsvmIndex) {
        const char* digits = token;
        while (digits != end && *digits >= '0' && *digits <= '9') ++digits;
        return problem_at(problem, begin, token, fmt::format(
            "index {} is too large (at most {})",
            std::string_view(token, static_cast<std::size_t>(digits - token)), kMaxLibsvmIndex));
      }
      ++p;
    }
    if (p == token || p == end || *p != ':') {
      const char* const stop = token_end(token, end);
      const std::string_view text(token, static_cast<std::size_t>(stop - token));
      if (text.starts_with("qid:")) {  // a ranking query id: not a feature
        p = stop;
        continue;
      }
      return problem_at(problem, begin, token, fmt::format(
          "{} is not index:value (a whole number >= 0, a colon, a number, no spaces)",
          detail::quote_for_message(text)));
    }
    const char* const value = ++p;
    SparseEntry entry{index, 0.0};
    const char* const stop = kValues ? number_end(value, end, entry.value) : token_end(value, end);
    if (stop == nullptr) {
      const auto text = std::string_view(value, static_cast<std::size_t>(token_end(value, end) - value));
      return problem_at(problem, begin, value, fmt::format(
          "the value of index {}, {}, is not a finite number", index,
          detail::quote_for_message(text)));
    }
    if (!row.entries.empty() && index <= last) {
      return problem_at(problem, begin, token,
                        index == last
                            ? fmt::format("index {} appears twice; give each index once", index)
                            : fmt::format("index {} comes after index {}; indices must increase "
                                          "along a line: sort each line's index:value pairs by "
                                          "index", index, last));
    }
    row.entries.push_back(entry);
    last = index;
    p = stop;
  }
  return LineKind::kRow;
}

}  // namespace

LineKind parse_libsvm_line(std::string_view line, LibsvmRow& row, LibsvmProblem& problem,
                           bool values) {
  return values ? parse_line<true>(line, row, problem) : parse_line<false>(line, row, problem);
}

LineSource::LineSource(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t line)
    : file_(std::make_unique<detail::FileHandle>(path)), buf_(std::size_t{1} << 20) {
  seek(offset, line);
}

LineSource::~LineSource() = default;

std::uint64_t LineSource::file_size() const noexcept { return file_->size(); }

void LineSource::seek(std::uint64_t offset, std::uint64_t line) {
  line_ = line;
  if (offset >= buf_offset_ && offset <= buf_offset_ + end_) {
    pos_ = static_cast<std::size_t>(offset - buf_offset_);
    return;
  }
  buf_offset_ = offset;
  pos_ = end_ = 0;
  eof_ = false;
}

void LineSource::refill() {
  std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
  buf_offset_ += pos_;
  end_ -= pos_;
  pos_ = 0;
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);  // one line longer than the buffer
  const std::size_t want = buf_.size() - end_;
  const std::size_t got = file_->read_at(buf_offset_ + end_, buf_.data() + end_, want);
  end_ += got;
  if (got < want) eof_ = true;
}

bool LineSource::next(std::string_view& text, std::uint64_t& start, std::uint64_t& number) {
  while (true) {
    const char* const from = buf_.data() + pos_;
    const auto* nl = static_cast<const char*>(std::memchr(from, '\n', end_ - pos_));
    if (nl == nullptr && eof_) {
      if (pos_ == end_) return false;
      nl = buf_.data() + end_;  // the last line, without a '\n'
    }
    if (nl != nullptr) {
      text = std::string_view(from, static_cast<std::size_t>(nl - from));
      start = buf_offset_ + pos_;
      number = line_++;
      pos_ = std::min(end_, static_cast<std::size_t>(nl - buf_.data()) + 1);
      return true;
    }
    refill();
  }
}

namespace {

// Whether a line that does not parse still has LIBSVM's shape: a number, then a field of
// digits and a colon, and no comma ("1 3000000000:1" with an index past the limit, "1 2:x"). Such a file is
// LIBSVM with a bad line, which the reader then reports by line; CSV never looks like that.
bool has_libsvm_pair(std::string_view line) {
  const auto gap = line.find_first_of(" \t");
  if (gap == std::string_view::npos || line.find(',') != std::string_view::npos) return false;
  const auto label = line.substr(0, gap);  // a number: "1", "-1", "0.5", "+1"
  if (label.find_first_not_of("+-.0123456789eE") != std::string_view::npos ||
      label.find_first_of("0123456789") == std::string_view::npos) {
    return false;
  }
  const auto field = line.find_first_not_of(" \t", gap);
  if (field == std::string_view::npos) return false;
  std::size_t digits = field;
  while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
  return digits > field && digits < line.size() && line[digits] == ':';
}

}  // namespace

bool looks_like_libsvm(std::string_view head, bool lenient) {
  LibsvmRow row;
  LibsvmProblem problem;
  while (!head.empty()) {
    const auto nl = head.find('\n');
    // The last line of `head` may be cut short: judge it only when nothing else is there.
    const std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 1);
    switch (parse_libsvm_line(line, row, problem)) {
      case LineKind::kBlank: continue;
      case LineKind::kError: return has_libsvm_pair(line);
      case LineKind::kRow:
        if (!row.entries.empty()) return true;
        // "1 qid:3" counts as LIBSVM; a bare number may be a one-column CSV header or row.
        return lenient || line.find("qid:") != std::string_view::npos;
    }
  }
  return false;
}

bool libsvm_extension(const std::filesystem::path& path) {
  const auto ext = path.extension();
  return ext == ".svm" || ext == ".libsvm" || ext == ".svmlight";
}

}  // namespace dt::data

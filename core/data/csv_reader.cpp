// The record parser (RecordReader), the public CsvReader over it, and parse_number.

#include "core/data/csv.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/label_sink.hpp"
#include "base/error.hpp"
#include "core/data/byte_stream.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace dt::data {
namespace detail {

namespace {

files::InputFile open_data(const std::filesystem::path& path) {
  try {
    return files::InputFile(path);
  } catch (const files::UnreadableFile& e) {
    fail<DataError>("{}: cannot open: {}", path.string(), e.reason());
  }
}

}  // namespace

FileHandle::FileHandle(const std::filesystem::path& path) : path_(path), file_(open_data(path)) {}

FileHandle::~FileHandle() = default;

std::size_t FileHandle::read_at(std::uint64_t offset, char* out, std::size_t n) const {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(file_.fd(), out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail<DataError>("{}: cannot read: {}", path_.string(), std::strerror(errno));
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::size_t bom_length(const FileHandle& file) {
  char head[3] = {};
  const std::size_t n = file.read_at(0, head, 3);
  return (n == 3 && head[0] == '\xEF' && head[1] == '\xBB' && head[2] == '\xBF') ? 3 : 0;
}

std::string quote_for_message(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMax) out += "...";
  out += "'";
  return out;
}

std::string_view trim_spaces(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

namespace {

constexpr double kExactPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// Clinger's fast path (as in fast_float and Go's strconv): when the decimal significand fits in
// 53 bits and the power of ten is at most 22, both are exact doubles and one IEEE multiply or
// divide gives the correctly rounded result -- the same bits as from_chars. It makes loading a
// typical numeric CSV 20-30% faster. Anything else (long significands, big exponents, inf/nan,
// malformed text) returns false and goes to from_chars.
bool fast_decimal(const char* s, const char* e, double& out) {
  const bool negative = s < e && *s == '-';
  if (negative) ++s;
  std::uint64_t mantissa = 0;
  int digits = 0;
  int exponent = 0;
  for (; s < e && *s >= '0' && *s <= '9'; ++s, ++digits) {
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(*s - '0');
  }
  if (s < e && *s == '.') {
    for (++s; s < e && *s >= '0' && *s <= '9'; ++s, ++digits, --exponent) {
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(*s - '0');
    }
  }
  if (digits == 0 || digits > 19) return false;  // 19 digits cannot overflow 64 bits
  if (s < e && (*s == 'e' || *s == 'E')) {
    ++s;
    const bool negative_exp = s < e && *s == '-';
    if (s < e && (*s == '-' || *s == '+')) ++s;
    if (s == e) return false;
    int value = 0;
    for (; s < e && *s >= '0' && *s <= '9'; ++s) {
      if (value > 1000) return false;
      value = value * 10 + (*s - '0');
    }
    exponent += negative_exp ? -value : value;
  }
  if (s != e || mantissa > (std::uint64_t{1} << 53) || exponent < -22 || exponent > 22) return false;
  double value = static_cast<double>(mantissa);
  value = exponent < 0 ? value / kExactPow10[-exponent] : value * kExactPow10[exponent];
  out = negative ? -value : value;
  return true;
}

}  // namespace

bool to_number(std::string_view trimmed, double& out) {
  if (trimmed.empty()) return false;
  const char* s = trimmed.data();
  const char* const e = s + trimmed.size();
  // from_chars rejects a leading '+', which spreadsheets and printf("%+g") both write.
  if (*s == '+' && e - s > 1 && s[1] != '+' && s[1] != '-') ++s;
  if (fast_decimal(s, e, out)) return true;
  const auto [ptr, ec] = std::from_chars(s, e, out);
  if (ptr != e) return false;
  if (ec == std::errc::result_out_of_range) {
    // Out of range is both overflow (not finite) and underflow (a tiny number that is fine as
    // 0 or a subnormal); strtod on this rare path tells them apart.
    const std::string copy(s, e);
    out = std::strtod(copy.c_str(), nullptr);
    return true;
  }
  return ec == std::errc{};
}

RecordReader::RecordReader(const std::filesystem::path& path, std::uint64_t offset,
                           std::uint64_t line, char delimiter)
    : path_(path), sep_(delimiter), file_(std::in_place, path), map_(file_->fd(), file_->size()) {
  if (!map_.ok()) buf_ = std::make_unique_for_overwrite<char[]>(kBlockSize);
  seek(offset, line);
}

RecordReader::RecordReader(const std::filesystem::path& name, ByteSource& source, char delimiter)
    : path_(name), sep_(delimiter), map_(-1, 0), stream_(&source),
      buf_(std::make_unique_for_overwrite<char[]>(kBlockSize)) {
  while (end_ < 3 && !eof_) refill();
  if (end_ >= 3 && std::memcmp(buf_.get(), "\xEF\xBB\xBF", 3) == 0) pos_ = line_start_ = 3;
}

void RecordReader::seek(std::uint64_t offset, std::uint64_t line) {
  // A reader placed at the very start skips the byte order mark, so columns on line 1 count
  // from the first real character, as editors show them.
  if (offset == 0) offset = bom_length(*file_);
  if (map_.ok()) {
    if (offset < mapped_from_ || offset > end_) {  // elsewhere: start a new window there
      map_.drop(mapped_from_, end_);
      mapped_from_ = end_ = static_cast<std::size_t>(offset);
      eof_ = offset >= file_->size();
    }
    pos_ = static_cast<std::size_t>(offset);
  } else if (offset >= buf_offset_ && offset <= buf_offset_ + end_) {
    pos_ = static_cast<std::size_t>(offset - buf_offset_);
  } else {
    buf_offset_ = offset;
    pos_ = end_ = 0;
    eof_ = false;
  }
  line_ = line;
  line_start_ = offset;
}

RecordReader& reader_at(std::optional<RecordReader>& own, const std::filesystem::path& path,
                        std::uint64_t offset, std::uint64_t line, char delimiter) {
  if (!own) {
    own.emplace(path, offset, line, delimiter);
  } else {
    own->seek(offset, line);
  }
  return *own;
}

void RecordReader::refill_mapped() {
  // Pages well behind the reader are released; the ones of the current record stay.
  if (pos_ - mapped_from_ >= 4 * MappedFile::kWindow) {
    const std::uint64_t keep = pos_ - MappedFile::kWindow;
    map_.drop(mapped_from_, keep);
    mapped_from_ = keep;
  }
  const std::uint64_t to = std::min(end_ + MappedFile::kWindow, file_->size());
  const std::uint64_t got = map_.readable(*file_, end_, to);
  // Short only when the file has shrunk: it ends there, as with a short pread.
  eof_ = got < to || to == file_->size();
  end_ = static_cast<std::size_t>(got);
}

void RecordReader::refill() {
  if (map_.ok()) {
    refill_mapped();
    return;
  }
  if (pos_ > 0) {
    std::memmove(buf_.get(), buf_.get() + pos_, end_ - pos_);
    buf_offset_ += pos_;
    end_ -= pos_;
    pos_ = 0;
  }
  if (end_ == capacity_) {
    // One record larger than the buffer: grow rather than fail (a stream up to a bound: it may
    // have no end, as /dev/zero through a pipe).
    if (stream_ != nullptr && capacity_ >= kMaxStreamRecord) {
      fail<DataError>("{}:{}: a row longer than {} MiB (no line end in it): not a CSV, or not "
                      "its line ends", path_.string(), line_, kMaxStreamRecord >> 20);
    }
    auto bigger = std::make_unique_for_overwrite<char[]>(capacity_ * 2);
    std::memcpy(bigger.get(), buf_.get(), end_);
    buf_ = std::move(bigger);
    capacity_ *= 2;
  }
  if (stream_ != nullptr) {
    // Filled up (a pipe gives 64 KiB a read): a record longer than a read is parsed again
    // once per doubling of the buffer, not once per read.
    while (end_ < capacity_ && !eof_) {
      const std::size_t got = stream_->read(buf_.get() + end_, capacity_ - end_);
      end_ += got;
      eof_ = got == 0;
    }
    return;
  }
  const std::size_t got = file_->read_at(buf_offset_ + end_, buf_.get() + end_, capacity_ - end_);
  end_ += got;
  if (got == 0) eof_ = true;
}

std::string_view RecordReader::peek(std::size_t want) {
  // Refill unless the buffer is full from its first byte (a row longer than the buffer, which
  // next_views grows it for).
  if (end_ - pos_ < want && !eof_ && (map_.ok() || pos_ > 0 || end_ < capacity_)) refill();
  return {base() + pos_, end_ - pos_};
}

bool RecordReader::next_views(std::vector<FieldView>& fields) {
  for (;;) {
    switch (parse(fields)) {
      case Parse::kRecord:
        if (blank_line_ != 0) {
          fail<DataError>("{}:{}:1: blank line in the middle of the data; only blank lines at "
                          "the end of the file are ignored", path_.string(), blank_line_);
        }
        return true;
      case Parse::kBlank:
        // A stream has no index to have checked this (line 1 is left to the header's check).
        if (stream_ != nullptr && blank_line_ == 0 && line_ > 2) blank_line_ = line_ - 1;
        break;
      case Parse::kEnd: return false;
      case Parse::kNeedMore: refill(); break;
    }
  }
}

bool RecordReader::next(std::vector<CsvField>& fields) {
  if (!next_views(views_)) return false;
  fields.resize(views_.size());
  for (std::size_t i = 0; i < views_.size(); ++i) {
    fields[i].text.assign(views_[i].data, views_[i].size);
    fields[i].line = views_[i].line;
    fields[i].column = views_[i].column;
  }
  return true;
}

// Parses one record from buf_[pos_, end_). Line bookkeeping is done on locals and committed only
// when the record is complete, so a kNeedMore can simply start over after a refill.
RecordReader::Parse RecordReader::parse(std::vector<FieldView>& fields) {
  constexpr std::size_t kInBuffer = ~std::size_t{0};
  const char* const buf = base();
  const char* const end = buf + end_;
  const char* p = buf + pos_;
  std::uint64_t line = line_;
  std::uint64_t line_start = line_start_;
  const auto at = [&](const char* q) { return buf_offset_ + static_cast<std::uint64_t>(q - buf); };
  const auto commit = [&](const char* q) {
    pos_ = static_cast<std::size_t>(q - buf);
    line_ = line;
    line_start_ = line_start;
  };

  // Blank lines: "\n", "\r\n", or a lone "\r" at the very end of the file.
  if (p == end) return eof_ ? Parse::kEnd : Parse::kNeedMore;
  if (*p == '\n' || *p == '\r') {
    const char* q = p;
    if (*q == '\r') {
      if (q + 1 == end && !eof_) return Parse::kNeedMore;
      if (q + 1 == end || q[1] == '\n') ++q;
    }
    if (q == end || *q == '\n') {
      if (q < end) ++q;
      ++line;
      line_start = at(q);
      commit(q);
      return Parse::kBlank;
    }
  }

  scratch_.clear();
  bool any_scratch = false;
  std::size_t used = 0;
  for (;;) {
    if (used == fields.size()) fields.emplace_back();
    FieldView& field = fields[used++];
    field.line = line;
    field.column = at(p) - line_start + 1;
    field.scratch = kInBuffer;

    if (p < end && *p == '"') {
      ++p;
      const char* const content = p;
      for (;;) {
        const auto* quote = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(end - p)));
        if (quote == nullptr) {
          if (!eof_) return Parse::kNeedMore;
          fail<DataError>("{}:{}:{}: unterminated quoted field (opened here)", path_.string(),
                          field.line, field.column);
        }
        for (const char* nl = p;
             (nl = static_cast<const char*>(std::memchr(nl, '\n', static_cast<std::size_t>(quote - nl)))) != nullptr;) {
          ++nl;
          ++line;
          line_start = at(nl);
        }
        if (field.scratch != kInBuffer) scratch_.append(p, quote);
        p = quote + 1;
        if (p == end && !eof_) return Parse::kNeedMore;
        if (p < end && *p == '"') {  // "" is an escaped quote: from here on the text is a copy
          if (field.scratch == kInBuffer) {
            field.scratch = scratch_.size();
            scratch_.append(content, quote);
            any_scratch = true;
          }
          scratch_.push_back('"');
          ++p;
          continue;
        }
        if (field.scratch == kInBuffer) {
          field.data = content;
          field.size = static_cast<std::size_t>(quote - content);
        } else {
          field.size = scratch_.size() - field.scratch;
        }
        break;
      }
      // Spaces (and a CR) between the closing quote and the separator are tolerated and dropped.
      while (p < end && *p != sep_ && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
      if (p == end) {
        if (!eof_) return Parse::kNeedMore;
        break;
      }
      if (*p == sep_) {
        ++p;
        continue;
      }
      if (*p == '\n') {
        ++p;
        ++line;
        line_start = at(p);
        break;
      }
      fail<DataError>(
          "{}:{}:{}: unexpected {} after the closing quote of a field; inside a quoted field a "
          "quote is written as \"\"",
          path_.string(), line, at(p) - line_start + 1, quote_for_message(std::string_view(p, 1)));
    }

    const char* q = p;
    while (q < end && *q != sep_ && *q != '\n') ++q;
    if (q == end && !eof_) return Parse::kNeedMore;
    const char* stop = q;
    if ((q == end || *q == '\n') && stop > p && stop[-1] == '\r') --stop;  // CRLF
    field.data = p;
    field.size = static_cast<std::size_t>(stop - p);
    if (q == end) {
      p = q;
      break;
    }
    p = q + 1;
    if (*q == '\n') {
      ++line;
      line_start = at(p);
      break;
    }
  }
  fields.resize(used);
  if (any_scratch) {  // the scratch string no longer grows: its pointers are stable now
    for (auto& field : fields) {
      if (field.scratch != kInBuffer) field.data = scratch_.data() + field.scratch;
    }
  }
  commit(p);
  return Parse::kRecord;
}

}  // namespace detail

struct CsvReader::Impl {
  Impl(const std::filesystem::path& path, std::uint64_t byte_offset, std::uint64_t line,
       char delimiter)
      : reader(path, byte_offset, line, delimiter) {}
  detail::RecordReader reader;  // neither copied nor moved: it owns the open file
};

CsvReader::CsvReader(const std::filesystem::path& path, std::uint64_t byte_offset,
                     std::uint64_t line, char delimiter)
    : path_(path), impl_(std::make_unique<Impl>(path, byte_offset, line, delimiter)) {}

CsvReader::~CsvReader() = default;

bool CsvReader::next(std::vector<CsvField>& fields) { return impl_->reader.next(fields); }

namespace detail {

double parse_cell(std::string_view text, std::uint64_t line, std::uint64_t column,
                  const std::filesystem::path& path, const std::string& name) {
  text = trim_spaces(text);
  double value = 0.0;
  const bool number = to_number(text, value);
  if (number && std::isfinite(value)) return value;
  if (text.empty()) {
    fail<DataError>("{}:{}:{}: column '{}': empty cell; expected a number", path.string(), line,
                    column, name);
  }
  fail<DataError>("{}:{}:{}: column '{}': {} is not a {}number", path.string(), line, column, name,
                  quote_for_message(text), number ? "finite " : "");
}

}  // namespace detail

double parse_number(const CsvField& field, const std::filesystem::path& path,
                    const std::string& column) {
  return detail::parse_cell(field.text, field.line, field.column, path, column);
}

}  // namespace dt::data

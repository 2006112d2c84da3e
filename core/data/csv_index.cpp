// index_csv: one pass over the file that finds every row start and checks every row's shape
// without materializing a single field. The header goes through the full RecordReader (it needs
// the text); the data rows through 64-byte bit masks, and a byte-level state machine for quoted rows,
// over 256 KiB blocks.

#include "core/data/csv.hpp"
#include "core/data/csv_cells.hpp"
#include "core/data/csv_io.hpp"
#include "base/error.hpp"

#include <malloc.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>
#include <thread>

namespace dt::data {
// Named (not anonymous): StreamIndexer::Impl holds an Indexer.
namespace index_pass {

enum class State : std::uint8_t {
  kRowStart,    // before the first byte of a record
  kRowStartCr,  // a CR at the start of a line: a blank CRLF line, or the start of a field
  kFieldStart,  // after a comma
  kUnquoted,
  kQuoted,
  kQuoteSeen,   // a quote inside a quoted field: the close, or the first half of ""
  kAfterQuote,  // closed; only spaces or a CR may come before the separator
};

// Bytes that end an unquoted field (the separator and a newline); everything else is skipped in
// the tight inner loop.
std::array<bool, 256> unquoted_stops(char sep) {
  std::array<bool, 256> table{};
  table[static_cast<unsigned char>(sep)] = true;
  table[static_cast<unsigned char>('\n')] = true;
  return table;
}

#if defined(__SSE2__)
// The common 64 bytes of a long row: no newline and no quote in them. Then only their commas
// matter, and they are added to per-byte counters in `commas` (0 - 1 per comma, up to 4 per
// byte lane per call) instead of being turned into masks and counted: about half the work of
// byte_masks plus a bit count. False, with `commas` untouched, for any other chunk.
inline bool quiet_chunk(const char* p, __m128i comma, __m128i& commas) noexcept {
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i quote = _mm_set1_epi8('"');
  __m128i v[4];
  __m128i special = _mm_setzero_si128();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    special = _mm_or_si128(special, _mm_or_si128(_mm_cmpeq_epi8(v[k], newline),
                                                 _mm_cmpeq_epi8(v[k], quote)));
  }
  if (_mm_movemask_epi8(special) != 0) return false;
  for (int k = 0; k < 4; ++k) commas = _mm_sub_epi8(commas, _mm_cmpeq_epi8(v[k], comma));
  return true;
}

// The sum of quiet_chunk's byte counters, which are then reset.
inline std::uint64_t drain_commas(__m128i& commas) noexcept {
  const __m128i sums = _mm_sad_epu8(commas, _mm_setzero_si128());  // two 64-bit sums
  commas = _mm_setzero_si128();
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(sums)) +
         static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
}
#endif

std::string plural(std::uint64_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

class Indexer {
 public:
  Indexer(CsvIndex& index, std::uint64_t offset, std::uint64_t line)
      : index_(index), name_(index.path.string()), expected_(index.columns.size()),
        sep_(index.delimiter), stops_(unquoted_stops(index.delimiter)), line_(line),
        line_start_(offset) {}

  void feed(const char* buf, std::size_t n, std::uint64_t base) {
    std::size_t i = 0;
    while (i < n) {
      const char c = buf[i];
      switch (state_) {
        case State::kRowStart:
          i = whole_lines(buf, n, i, base);
          if (i == n) break;
          row_offset_ = base + i;
          row_line_ = line_;
          if (buf[i] == '\n') {
            blank_line(base + i + 1);
          } else if (buf[i] == '\r') {
            state_ = State::kRowStartCr;
          } else {
            begin_row();
            field_start(buf[i], base + i);
          }
          ++i;
          break;
        case State::kRowStartCr:
          if (c == '\n') {
            blank_line(base + i + 1);
            ++i;
          } else {
            begin_row();  // the CR belongs to an unquoted first field; look at c again there
            state_ = State::kUnquoted;
          }
          break;
        case State::kFieldStart:
          field_start(c, base + i);
          ++i;
          break;
        case State::kUnquoted: {
          while (i < n && !stops_[static_cast<unsigned char>(buf[i])]) ++i;
          if (i == n) break;
          if (buf[i] == sep_) {
            ++fields_;
            state_ = State::kFieldStart;
          } else {
            end_row(base + i + 1);
          }
          ++i;
          break;
        }
        case State::kQuoted: {
          const auto* q = static_cast<const char*>(std::memchr(buf + i, '"', n - i));
          const std::size_t stop = q ? static_cast<std::size_t>(q - buf) : n;
          for (const char* nl = buf + i;
               (nl = static_cast<const char*>(std::memchr(nl, '\n', static_cast<std::size_t>(buf + stop - nl)))) != nullptr;) {
            ++nl;
            ++line_;
            line_start_ = base + static_cast<std::uint64_t>(nl - buf);
          }
          i = stop;
          if (q != nullptr) {
            state_ = State::kQuoteSeen;
            ++i;
          }
          break;
        }
        case State::kQuoteSeen:
          if (c == '"') {
            state_ = State::kQuoted;
            ++i;
            break;
          }
          state_ = State::kAfterQuote;
          [[fallthrough]];
        case State::kAfterQuote:
          if (c == sep_) {
            ++fields_;
            state_ = State::kFieldStart;
          } else if (c == '\n') {
            end_row(base + i + 1);
          } else if (c != ' ' && c != '\t' && c != '\r') {
            fail<DataError>(
                "{}:{}:{}: unexpected {} after the closing quote of a field; inside a quoted "
                "field a quote is written as \"\"",
                name_, line_, base + i - line_start_ + 1,
                detail::quote_for_message(std::string_view(&buf[i], 1)));
          }
          ++i;
          break;
      }
    }
  }

  // True between rows, with no blank line pending: where a half indexed on its own may follow.
  [[nodiscard]] bool clean_row_start() const noexcept {
    return state_ == State::kRowStart && blank_line_ == 0;
  }
  [[nodiscard]] std::uint64_t line() const noexcept { return line_; }
  // The wanted cells of the rows indexed so far (csv_cells.hpp); the offset to keep mapped.
  std::uint64_t scan(CellScan& cells, const char* data, std::uint64_t got, bool range_end) {
    return cells.scan(data, index_.row_offset, got, range_end, sep_);
  }

  void finish() {
    switch (state_) {
      case State::kRowStart:
      case State::kRowStartCr:  // a lone CR on the last line counts as a blank line
        break;
      case State::kQuoted:
        fail<DataError>("{}:{}:{}: unterminated quoted field (opened here)", name_, quote_line_,
                        quote_column_);
      default:
        end_row(line_start_);
    }
  }

 private:
  // Fast path for the common case: a line with no quote in it, entirely inside this block, is
  // one row whose field count is its comma count plus one. Lines are found 64 bytes at a time
  // from bit masks of newlines, commas and quotes, so each byte is looked at once (the old
  // memchr for the newline, memchr for a quote and comma count took three passes). The
  // byte-at-a-time state machine takes over at the first quote and for the line that straddles
  // the end of the block.
  std::size_t whole_lines(const char* buf, std::size_t n, std::size_t i, std::uint64_t base) {
    std::size_t start = i;  // the current line's first byte
    std::uint64_t commas = 0;  // in the current line, before the chunk being looked at
#if defined(__SSE2__)
    __m128i quiet_commas = _mm_setzero_si128();
    const __m128i sep = _mm_set1_epi8(sep_);
    int quiet = 0;  // chunks counted in quiet_commas: at most 63, so no byte lane overflows
#endif
    for (std::size_t j = i; j + 64 <= n; j += 64) {
#if defined(__SSE2__)
      if (quiet_chunk(buf + j, sep, quiet_commas)) {
        if (++quiet == 63) {
          commas += drain_commas(quiet_commas);
          quiet = 0;
        }
        continue;
      }
      if (quiet > 0) {
        commas += drain_commas(quiet_commas);
        quiet = 0;
      }
#endif
      const detail::ByteMasks m = detail::byte_masks(buf + j, sep_);
      // Newlines after the first quote belong to the state machine.
      const std::uint64_t before_quote =
          m.quote == 0 ? ~std::uint64_t{0} : (m.quote & (0 - m.quote)) - 1;
      std::uint64_t comma = m.comma;
      for (std::uint64_t nl = m.newline & before_quote; nl != 0; nl &= nl - 1) {
        const int bit = std::countr_zero(nl);
        const std::uint64_t below = (std::uint64_t{1} << bit) - 1;
        commas += static_cast<std::uint64_t>(detail::bit_count(comma & below));
        comma &= ~below;
        line(buf, start, j + static_cast<std::size_t>(bit), commas, base);
        start = j + static_cast<std::size_t>(bit) + 1;
        commas = 0;
      }
      if (m.quote != 0) return start;
      commas += static_cast<std::uint64_t>(detail::bit_count(comma));
    }
    // The last few bytes of the block, line by line.
    i = start;
    while (i < n) {
      const auto* nl = static_cast<const char*>(std::memchr(buf + i, '\n', n - i));
      if (nl == nullptr) return i;
      const char* p = buf + i;
      const auto len = static_cast<std::size_t>(nl - p);
      if (std::memchr(p, '"', len) != nullptr) return i;
      std::uint64_t count = 0;
      for (std::size_t k = 0; k < len; ++k) count += p[k] == sep_ ? 1 : 0;
      line(buf, i, i + len, count, base);
      i = static_cast<std::size_t>(nl + 1 - buf);
    }
    return i;
  }

  // A whole line buf[start, newline) without quotes, holding `commas` commas.
  void line(const char* buf, std::size_t start, std::size_t newline, std::uint64_t commas,
            std::uint64_t base) {
    const std::size_t len = newline - start;
    row_offset_ = base + start;
    row_line_ = line_;
    if (len == 0 || (len == 1 && buf[start] == '\r')) {
      blank_line(base + newline + 1);
    } else {
      begin_row();
      fields_ += commas;
      end_row(base + newline + 1);
    }
  }

  void field_start(char c, std::uint64_t offset) {
    if (c == '"') {
      quote_line_ = line_;
      quote_column_ = offset - line_start_ + 1;
      state_ = State::kQuoted;
    } else if (c == sep_) {
      ++fields_;
      state_ = State::kFieldStart;
    } else if (c == '\n') {
      end_row(offset + 1);
    } else {
      state_ = State::kUnquoted;
    }
  }

  void begin_row() {
    if (blank_line_ != 0) {
      fail<DataError>(
          "{}:{}:1: blank line in the middle of the data; only blank lines at the end of the "
          "file are ignored",
          name_, blank_line_);
    }
    index_.row_offset.push_back(row_offset_);
    index_.row_line.push_back(row_line_);
    fields_ = 1;
  }

  void end_row(std::uint64_t next_line_start) {
    if (fields_ != expected_) {
      fail<DataError>("{}:{}:1: row has {}, the header has {}", name_, row_line_,
                      plural(fields_, "field"), expected_);
    }
    ++line_;
    line_start_ = next_line_start;
    state_ = State::kRowStart;
  }

  void blank_line(std::uint64_t next_line_start) {
    if (blank_line_ == 0) blank_line_ = line_;
    ++line_;
    line_start_ = next_line_start;
    state_ = State::kRowStart;
  }

  CsvIndex& index_;
  std::string name_;
  std::uint64_t expected_;
  char sep_;
  std::array<bool, 256> stops_;
  State state_ = State::kRowStart;
  std::uint64_t line_;
  std::uint64_t line_start_;
  std::uint64_t fields_ = 0;
  std::uint64_t row_offset_ = 0;
  std::uint64_t row_line_ = 0;
  std::uint64_t blank_line_ = 0;  // first blank line seen; an error once another row follows
  std::uint64_t quote_line_ = 0;
  std::uint64_t quote_column_ = 0;
};

// Feeds [from, to) of the mapped file to `indexer` a window at a time, and `cells` (if any)
// the rows' wanted cells while they are in cache; returns where it stopped (short of `to` only
// when the file has shrunk). A row whose cells run into the next window keeps its pages.
std::uint64_t index_range(Indexer& indexer, CellScan* cells, detail::MappedFile& map,
                          const detail::FileHandle& file, std::uint64_t from, std::uint64_t to) {
  std::uint64_t mapped = from;  // not dropped yet from here on
  while (from < to) {
    const std::uint64_t end = std::min(from + detail::MappedFile::kWindow, to);
    const std::uint64_t got = map.readable(file, from, end);
    indexer.feed(map.data() + from, static_cast<std::size_t>(got - from), from);
    const std::uint64_t keep =
        cells == nullptr ? got : indexer.scan(*cells, map.data(), got, got == to);
    map.drop(mapped, keep);
    mapped = std::max(mapped, keep);
    if (got < end) return got;
    from = end;
  }
  return from;
}

// The first line start after `from`, or `to` when there is none before it.
std::uint64_t next_line_start(detail::MappedFile& map, const detail::FileHandle& file,
                              std::uint64_t from, std::uint64_t to) {
  const std::uint64_t window = std::min(from + detail::MappedFile::kWindow, to);
  const std::uint64_t got = map.readable(file, from, window);
  const auto* nl = static_cast<const char*>(
      std::memchr(map.data() + from, '\n', static_cast<std::size_t>(got - from)));
  return nl == nullptr ? to : static_cast<std::uint64_t>(nl - map.data()) + 1;
}

// Indexes [start, size) as two halves at once, the second [split, size) from a line start on a
// thread of its own, as if it were a file (its line numbers count from 1). The second half is
// kept only when the first ends cleanly at that line start and it has no error; otherwise
// (split inside a quoted field, a blank line before it, an error to report with its true line
// number) `indexer` reads it again, in order. Either way `indexer` is left where one pass
// would leave it, for finish().
void index_halves(CsvIndex& index, Indexer& indexer, CellScan* cells, detail::MappedFile& map,
                  const detail::FileHandle& file, std::uint64_t start, std::uint64_t split,
                  std::uint64_t size) {
  CsvIndex tail;
  tail.path = index.path;
  tail.columns = index.columns;
  tail.delimiter = index.delimiter;
  // Room for the second half's rows, reserved here rather than grown on the thread: memory a
  // thread allocates stays in its own malloc arena once freed, out of the main thread's reach
  // (the coordinator's peak RSS on the 2 GB file was 15 MiB higher). The rows are estimated
  // from the lines of its first window, plus a quarter, and capped at one row per 16 bytes of
  // the half (16 bytes of index a row), so an odd first window (a quoted text of many short
  // lines) cannot reserve more than the half's own size. Past the estimate they grow as usual.
  {
    const std::uint64_t window = std::min(split + detail::MappedFile::kWindow, size);
    const std::uint64_t sample_end = map.readable(file, split, window);
    const auto lines = static_cast<std::uint64_t>(
        std::count(map.data() + split, map.data() + sample_end, '\n'));
    const std::uint64_t estimate =
        sample_end > split ? lines * (size - split) / (sample_end - split) : 0;
    const std::uint64_t rows = std::min(estimate + estimate / 4 + 1024, (size - split) / 16);
    tail.row_offset.reserve(rows);
    tail.row_line.reserve(rows);
  }
  Indexer tail_indexer(tail, split, 1);
  std::optional<CellScan> tail_cells;  // the second half's cells, fresh
  if (cells != nullptr) tail_cells = *cells;
  std::exception_ptr tail_error;
  std::jthread second([&] {
    try {
      // Short if the file shrank.
      (void)index_range(tail_indexer, tail_cells ? &*tail_cells : nullptr, map, file, split, size);
      tail_indexer.finish();
    } catch (...) {
      tail_error = std::current_exception();
    }
  });
  if (index_range(indexer, cells, map, file, start, split) < split) return;  // the file shrank
  second.join();
  if (!indexer.clean_row_start() || tail_error != nullptr) {
    (void)index_range(indexer, cells, map, file, split, size);
    return;
  }
  if (cells != nullptr) cells->merge(std::move(*tail_cells));
  const std::uint64_t shift = indexer.line() - 1;
  index.row_offset.insert(index.row_offset.end(), tail.row_offset.begin(), tail.row_offset.end());
  index.row_line.reserve(index.row_offset.size());
  for (const std::uint64_t line : tail.row_line) index.row_line.push_back(line + shift);
}

}  // namespace index_pass

using index_pass::Indexer;
using index_pass::index_halves;
using index_pass::index_range;
using index_pass::next_line_start;

CsvIndex index_csv(const std::filesystem::path& path, unsigned threads,
                   std::uint64_t min_parallel_bytes, char delimiter, CellScan* cells) {
  CsvIndex index;
  index.path = path;
  index.delimiter = detail::choose_delimiter(path, delimiter);
  detail::RecordReader reader(path, 0, 1, index.delimiter);
  index.file_size = reader.file_size();
  detail::read_header(index, reader);
  if (cells != nullptr) cells->start(index.columns);

  const detail::FileHandle file(path);
  const std::uint64_t start = reader.offset();
  Indexer indexer(index, start, reader.line());
  // In place from the page cache when the file can be mapped (no copy), else through a block.
  detail::MappedFile map(file.fd(), file.size());
  if (map.ok()) {
    const std::uint64_t size = file.size();
    // Small files are one pass: a thread would cost more than it saves.
    const std::uint64_t split = threads > 1 && size - start >= min_parallel_bytes
                                    ? next_line_start(map, file, start + (size - start) / 2, size)
                                    : size;
    if (split < size) {
      index_halves(index, indexer, cells, map, file, start, split, size);
      // What the thread did allocate stays in its own malloc arena once freed: give it back.
      (void)::malloc_trim(0);
    } else {
      (void)index_range(indexer, cells, map, file, start, size);
    }
    indexer.finish();  // nothing to do after a kept second half: it ended between rows
  } else {
    if (cells != nullptr) cells->given_up = true;  // read through a block: the caller's own pass
    std::uint64_t offset = start;
    const auto block = std::make_unique_for_overwrite<char[]>(detail::kBlockSize);
    for (;;) {
      const std::size_t n = file.read_at(offset, block.get(), detail::kBlockSize);
      if (n == 0) break;
      indexer.feed(block.get(), n, offset);
      offset += n;
    }
    indexer.finish();
  }
  if (index.rows() == 0) fail<DataError>("{}: no data rows after the header", path.string());
  return index;
}

struct StreamIndexer::Impl {
  Impl(CsvIndex& index, std::uint64_t offset, std::uint64_t line)
      : index(index), indexer(index, offset, line), offset(offset) {}
  CsvIndex& index;
  Indexer indexer;
  std::uint64_t offset;  // of the next byte fed
};

StreamIndexer::StreamIndexer(CsvIndex& index, std::uint64_t offset, std::uint64_t line)
    : impl_(std::make_unique<Impl>(index, offset, line)) {}

StreamIndexer::~StreamIndexer() = default;

void StreamIndexer::feed(const char* data, std::size_t n) {
  impl_->indexer.feed(data, n, impl_->offset);
  impl_->offset += n;
}

void StreamIndexer::finish() {
  impl_->indexer.finish();
  impl_->index.file_size = impl_->offset;
  if (impl_->index.rows() == 0) {
    fail<DataError>("{}: no data rows after the header", impl_->index.path.string());
  }
}

}  // namespace dt::data

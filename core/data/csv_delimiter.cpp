// The field separator of a CSV/TSV file: detected from its first lines, or checked when forced.

#include "core/data/csv.hpp"
#include "core/data/csv_io.hpp"
#include "core/config/names.hpp"
#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>

namespace dt::data {
namespace {

constexpr std::array<char, 4> kDelimiters{',', '\t', ';', '|'};

// The header line and the first data line (empty when there is none), from the file's first
// 64 KiB; a newline inside double quotes does not end a line.
struct Head {
  std::string header;
  std::string first;
};

Head head_of(std::string_view rest) {
  Head head;
  std::string* out = &head.header;
  bool quoted = false;
  for (const char c : rest) {
    if (c == '"') quoted = !quoted;
    if (c == '\n' && !quoted) {
      if (out == &head.first) break;
      out = &head.first;
      continue;
    }
    out->push_back(c);
  }
  return head;
}

Head read_head(const std::filesystem::path& path) {
  const detail::FileHandle file(path);
  std::string bytes(detail::kDelimiterHead, '\0');
  bytes.resize(file.read_at(0, bytes.data(), bytes.size()));
  std::string_view rest(bytes);
  rest.remove_prefix(std::min(rest.size(), detail::bom_length(file)));
  return head_of(rest);
}

// Fields of one line split at `sep` outside double quotes.
std::size_t fields_in(std::string_view line, char sep) {
  std::size_t fields = 1;
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') quoted = !quoted;
    fields += c == sep && !quoted ? 1 : 0;
  }
  return fields;
}

// The delimiter that splits the header into the most fields (more than one), the first data
// line into as many; 0 when none does.
char best_delimiter(const Head& head) {
  char best = 0;
  std::size_t most = 1;
  for (const char sep : kDelimiters) {
    const std::size_t n = fields_in(head.header, sep);
    if (n > most && (head.first.empty() || fields_in(head.first, sep) == n)) {
      best = sep;
      most = n;
    }
  }
  return best;
}

bool is_tsv_name(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".tsv" || ext == ".tab";
}

}  // namespace

char detect_delimiter(const std::filesystem::path& path) {
  if (is_tsv_name(path)) return '\t';
  const char best = best_delimiter(read_head(path));
  return best == 0 ? ',' : best;
}

char detail::detect_delimiter_in(std::string_view head, const std::filesystem::path& name) {
  if (is_tsv_name(name)) return '\t';
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  const char best = best_delimiter(head_of(head));
  return best == 0 ? ',' : best;
}

namespace detail {

char choose_delimiter(const std::filesystem::path& path, char forced) {
  if (forced == 0) return detect_delimiter(path);
  const Head head = read_head(path);
  if (fields_in(head.header, forced) > 1) return forced;
  const char seen = best_delimiter(head);
  if (seen != 0 && seen != forced) {
    fail<DataError>("{}:1: data.delimiter is {}, but the header has no {}: it seems to use "
                    "{} ({} fields); set data.delimiter: {} (or auto, which detects it)",
                    path.string(), config::delimiter_name(forced), config::delimiter_name(forced),
                    config::delimiter_name(seen), fields_in(head.header, seen), config::delimiter_name(seen));
  }
  return forced;
}

}  // namespace detail
}  // namespace dt::data

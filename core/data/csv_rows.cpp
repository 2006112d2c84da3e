// The fast path of loading a shard (PlainRow) and the exact number parser it uses.

#include "core/data/csv_io.hpp"
#include "base/text.hpp"

#include <cmath>

#if __has_include(<fast_float/fast_float.h>) && !defined(DT_NO_FAST_FLOAT)
#include <fast_float/fast_float.h>
#define DT_HAVE_FAST_FLOAT 1
#endif

namespace dt::data::detail {

std::from_chars_result parse_double(const char* first, const char* last, double& out) noexcept {
#ifdef DT_HAVE_FAST_FLOAT
  const auto r = fast_float::from_chars(first, last, out);
  return {r.ptr, r.ec};
#else
  return std::from_chars(first, last, out);
#endif
}

namespace {

// A number cell at p: an optional '-' then a digit (so '+', '.', spaces, "inf" and "nan" are
// left to the general path, which has its own rules for them), parsed to a finite value.
// Advances p to the byte after the number.
inline bool plain_number(const char*& p, const char* end, double& out) noexcept {
  const char* digit = p < end && *p == '-' ? p + 1 : p;
  if (digit == end || static_cast<unsigned char>(*digit - '0') > 9) return false;
  const auto [ptr, ec] = parse_double(p, end, out);
  if (ec != std::errc{} || !std::isfinite(out)) return false;
  p = ptr;
  return true;
}

// Bytes that end a cell the fast path does not convert (a skipped column or a text label).
// Quotes and the spaces the general path trims send the row there instead.
inline bool stops_text(char c) noexcept {
  return c == ',' || c == '\n' || c == '\r' || c == '"' || c == ' ' || c == '\t';
}

}  // namespace

const char* PlainRow::parse(const char* p, const char* end, double* row, double& label,
                            std::string_view& text) const noexcept {
  const std::size_t width = use_.size();
  for (std::size_t c = 0; c < width; ++c) {
    switch (use_[c]) {
      case CellUse::kFeature:
        if (!plain_number(p, end, row[target_[c]])) return nullptr;
        break;
      case CellUse::kNumericLabel:
        if (!plain_number(p, end, label)) return nullptr;
        break;
      case CellUse::kBinaryLabel: {
        double v = 0.0;
        if (!plain_number(p, end, v) || (v != 0.0 && v != 1.0)) return nullptr;
        label = v == 1.0 ? 1.0 : 0.0;  // "-0" is class 0, stored as +0
        break;
      }
      case CellUse::kTextLabel: {
        const char* start = p;
        while (p < end && !stops_text(*p)) ++p;
        text = std::string_view(start, static_cast<std::size_t>(p - start));
        if (text.empty() || !text::valid_utf8(text)) return nullptr;
        break;
      }
      case CellUse::kSkip:
        // Any text but a quote (which may hide a separator); spaces do not matter here.
        while (p < end && *p != ',' && *p != '\n' && *p != '"') ++p;
        if (p < end && *p == '"') return nullptr;
        break;
    }
    if (c + 1 < width) {
      if (p == end || *p != ',') return nullptr;
      ++p;
    }
  }
  if (p < end && *p == '\r') ++p;
  if (p == end || *p != '\n') return nullptr;
  return p + 1;
}

}  // namespace dt::data::detail

// The fast path of loading a shard (PlainRow) and the exact number parser it uses.

#include "core/data/csv_io.hpp"
#include "base/text.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#if __has_include(<fast_float/fast_float.h>) && !defined(DT_NO_FAST_FLOAT)
#include <fast_float/fast_float.h>
#define DT_HAVE_FAST_FLOAT 1
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
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
inline bool plain_number_general(const char*& p, const char* end, double& out) noexcept {
  const char* digit = p < end && *p == '-' ? p + 1 : p;
  if (digit == end || static_cast<unsigned char>(*digit - '0') > 9) return false;
  const auto [ptr, ec] = parse_double(p, end, out);
  if (ec != std::errc{} || !std::isfinite(out)) return false;
  p = ptr;
  return true;
}

#if defined(DT_HAVE_FAST_FLOAT) && defined(__SSE2__)

[[nodiscard]] inline std::uint64_t load8(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;  // little-endian: p[0] in the low byte (x86-64)
}

// The value of 8 ASCII digits, the first in the low byte (the SWAR step fast_float uses).
[[nodiscard]] inline std::uint64_t eight_digits(std::uint64_t v) noexcept {
  constexpr std::uint64_t kMask = 0x000000FF000000FFULL;
  constexpr std::uint64_t kMul1 = 0x000F424000000064ULL;  // 100 + (1000000 << 32)
  constexpr std::uint64_t kMul2 = 0x0000271000000001ULL;  // 1 + (10000 << 32)
  v -= 0x3030303030303030ULL;
  v = v * 10 + (v >> 8);
  return (((v & kMask) * kMul1) + (((v >> 16) & kMask) * kMul2)) >> 32;
}

// The value of the k digits at p (1 <= k <= 8): they are moved to the top of the word and the
// bytes below filled with '0', so eight_digits reads them as a number with leading zeros.
[[nodiscard]] inline std::uint64_t few_digits(const char* p, int k) noexcept {
  static constexpr std::uint64_t kZeros[9] = {
      0x3030303030303030ULL, 0x30303030303030ULL, 0x303030303030ULL, 0x3030303030ULL,
      0x30303030ULL,         0x303030ULL,         0x3030ULL,         0x30ULL, 0};
  return eight_digits((load8(p) << (8 * (8 - k))) | kZeros[k]);
}

inline constexpr std::uint64_t kPow10[19] = {1ULL,
                                             10ULL,
                                             100ULL,
                                             1000ULL,
                                             10000ULL,
                                             100000ULL,
                                             1000000ULL,
                                             10000000ULL,
                                             100000000ULL,
                                             1000000000ULL,
                                             10000000000ULL,
                                             100000000000ULL,
                                             1000000000000ULL,
                                             10000000000000ULL,
                                             100000000000000ULL,
                                             1000000000000000ULL,
                                             10000000000000000ULL,
                                             100000000000000000ULL,
                                             1000000000000000000ULL};

// Bit i set where s[i] is an ASCII digit, for 32 bytes.
[[nodiscard]] inline std::uint32_t digit_mask(const char* s) noexcept {
  const __m128i below = _mm_set1_epi8('0' - 1);
  const __m128i above = _mm_set1_epi8('9' + 1);
  const auto mask = [&](const char* q) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return static_cast<std::uint32_t>(static_cast<std::uint16_t>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(v, below), _mm_cmplt_epi8(v, above)))));
  };
  return mask(s) | (mask(s + 16) << 16);
}

// plain_number for the usual cell, "-d.ddddddddddddddddd": at most 8 integer digits, at most 19
// digits in all, no exponent. The digit runs are found with one 32-byte compare (no byte loop,
// few branches that depend on the length), read 8 at a time, and the decimal significand w and
// exponent q are turned into the double by fast_float's own Eisel-Lemire step (compute_float).
// That step is exact whenever it succeeds (power2 >= 0), so this gives the bits
// fast_float::from_chars gives -- checked on all 101 million cells of the 1M x 100 benchmark
// file -- and it does not depend on the rounding mode (Clinger's path, which fast_float tries
// first, does). Anything else -- an exponent, longer numbers, a cell too near the end of the
// buffer for the 32-byte read, the rare inputs compute_float declines -- goes to from_chars.
inline bool plain_number(const char*& p, const char* end, double& out) noexcept {
  constexpr std::ptrdiff_t kReach = 40;  // the loads below read at most 33 bytes from p
  if (end - p < kReach) return plain_number_general(p, end, out);
  const bool negative = *p == '-';
  const char* s = p + (negative ? 1 : 0);
  const std::uint32_t other = ~digit_mask(s);  // bits of the bytes that are not digits
  if (other == 0) return plain_number_general(p, end, out);
  const int integer_digits = __builtin_ctz(other);
  if (integer_digits == 0 || integer_digits > 8) return plain_number_general(p, end, out);
  const char* point = s + integer_digits;
  const char* after = point;
  int fraction_digits = 0;
  if (*point == '.') {
    const std::uint32_t rest = other >> (integer_digits + 1);
    if (rest == 0) return plain_number_general(p, end, out);
    fraction_digits = __builtin_ctz(rest);
    after = point + 1 + fraction_digits;
  }
  if (integer_digits + fraction_digits > 19 || *after == 'e' || *after == 'E') {
    return plain_number_general(p, end, out);
  }
  std::uint64_t w = few_digits(s, integer_digits);
  if (fraction_digits > 0) {
    const char* f = point + 1;
    const int n = fraction_digits;
    std::uint64_t fraction = 0;
    if (n <= 8) {
      fraction = few_digits(f, n);
    } else if (n <= 16) {
      fraction = few_digits(f, n - 8) * 100000000ULL + eight_digits(load8(f + n - 8));
    } else {
      fraction = (few_digits(f, n - 16) * 100000000ULL + eight_digits(load8(f + n - 16))) *
                     100000000ULL +
                 eight_digits(load8(f + n - 8));
    }
    w = w * kPow10[n] + fraction;  // at most 19 digits: no overflow
  }
  const fast_float::adjusted_mantissa am =
      fast_float::compute_float<fast_float::binary_format<double>>(-fraction_digits, w);
  if (am.power2 < 0) return plain_number_general(p, end, out);
  fast_float::to_float(negative, am, out);
  p = after;
  return true;
}

#else

inline bool plain_number(const char*& p, const char* end, double& out) noexcept {
  return plain_number_general(p, end, out);
}

#endif

// Bytes that end a cell the fast path does not convert (a skipped column or a text label).
// Quotes and the spaces the general path trims send the row there instead.
inline bool stops_text(char c, char sep) noexcept {
  return c == sep || c == '\n' || c == '\r' || c == '"' || c == ' ' || c == '\t';
}

}  // namespace

bool plain_cell_number(const char*& p, const char* end, double& out) noexcept {
  return plain_number(p, end, out);
}

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
        while (p < end && !stops_text(*p, sep_)) ++p;
        text = std::string_view(start, static_cast<std::size_t>(p - start));
        if (text.empty() || !text::valid_utf8(text)) return nullptr;
        break;
      }
      case CellUse::kSkip:
        // Any text but a quote (which may hide a separator); spaces do not matter here.
        while (p < end && *p != sep_ && *p != '\n' && *p != '"') ++p;
        if (p < end && *p == '"') return nullptr;
        break;
    }
    if (c + 1 < width) {
      if (p == end || *p != sep_) return nullptr;
      ++p;
    }
  }
  if (p < end && *p == '\r') ++p;
  if (p == end || *p != '\n') return nullptr;
  return p + 1;
}

}  // namespace dt::data::detail

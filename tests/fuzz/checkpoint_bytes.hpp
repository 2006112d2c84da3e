#pragma once
// What fuzz_checkpoint and fuzz_resume do to an input before decoding it: a valid trailer (the
// checksum core/coordinator/checkpoint.hpp defines over the body for the format version the
// input's header names: FNV-1a 64 for version 1, CRC-32 otherwise; then the end marker)
// put in place of the input's own, so that mutations reach the manifest and the arrays behind
// the checksum, as a file edited by hand or written by something else than disttrain would.

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace dt::fuzz {

// The longest sparse array (format version 3) the checkpoint harnesses decode: a file may claim
// any length in a few bytes, and the product allocates what a checkpoint claims (up to 2^32
// entries), which would only exhaust the fuzzer's memory limit. 2^17 takes the seeds' 70,000.
inline constexpr std::uint64_t kMaxSparseSize = std::uint64_t{1} << 17;

inline std::string with_valid_trailer(std::string_view input) {
  constexpr std::string_view kEnd = "DTCKEND\n";
  constexpr std::size_t kTrailer = 8 + kEnd.size();
  const bool has_trailer = input.size() >= kTrailer && input.ends_with(kEnd);
  std::string out(has_trailer ? input.substr(0, input.size() - kTrailer) : input);
  std::uint64_t sum = 0;
  if (out.size() > 8 && out[8] == 1) {
    sum = 0xcbf29ce484222325ULL;  // FNV-1a 64 of every byte before it
    for (const char c : out) sum = (sum ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  } else if (!out.empty()) {
    sum = ::crc32_z(0, reinterpret_cast<const Bytef*>(out.data()), out.size());
  }
  char bytes[8];
  std::memcpy(bytes, &sum, 8);
  out.append(bytes, 8);
  out += kEnd;
  return out;
}

}  // namespace dt::fuzz

#pragma once
// The input format of fuzz_wire: the frames of one multipart message, each a 4-byte
// little-endian length and then its bytes. Shared by the harness and the seed writer
// (make_wire_seeds.cpp).

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace dt::fuzz {

// The job id of the seed messages; the harness decodes as this job.
inline constexpr std::uint64_t kWireJob = 0x5eed5eed5eed5eedULL;

// A length past the end takes what is left.
inline std::vector<std::string_view> split_frames(std::string_view input) {
  std::vector<std::string_view> frames;
  while (input.size() >= 4) {
    std::uint32_t n = 0;
    std::memcpy(&n, input.data(), 4);
    input.remove_prefix(4);
    const std::size_t take = n < input.size() ? n : input.size();
    frames.push_back(input.substr(0, take));
    input.remove_prefix(take);
  }
  return frames;
}

inline std::string join_frames(const std::vector<std::string>& frames) {
  std::string out;
  for (const auto& f : frames) {
    const auto n = static_cast<std::uint32_t>(f.size());
    char bytes[4];
    std::memcpy(bytes, &n, 4);
    out.append(bytes, 4);
    out += f;
  }
  return out;
}

}  // namespace dt::fuzz

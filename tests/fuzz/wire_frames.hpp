#pragma once
// The input format of fuzz_wire and fuzz_step: the frames of one multipart message, each a
// 4-byte little-endian length and then its bytes. Shared by the harnesses and the seed writer
// (tests/unit/test_fuzz_seeds.cpp).

#include "transports/wire.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
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

// The message as a socket's receive path takes it apart (transports/zmq/zmq_socket.cpp
// Socket::parse, transports/shm): the header frame checked (peek_version, decode_header), the
// payload sizes checked before anything is copied, then the frames copied. ProtocolError for
// what a receiver refuses; nullopt for an input of no frame.
inline std::optional<wire::Message> read_message(std::string_view input) {
  const auto frames = split_frames(input);
  if (frames.empty()) return std::nullopt;
  wire::Message message;
  const auto head = std::as_bytes(std::span(frames[0].data(), frames[0].size()));
  (void)wire::peek_version(head);
  message.header = wire::decode_header(head);
  std::uint64_t total = 0;
  for (std::size_t i = 1; i < frames.size(); ++i) total += frames[i].size();
  wire::check_payload(message.header, total, frames.size() - 1);
  for (std::size_t i = 1; i < frames.size(); ++i) {
    const auto bytes = std::as_bytes(std::span(frames[i].data(), frames[i].size()));
    message.payload.emplace_back(bytes.begin(), bytes.end());
  }
  wire::check_payload(message);
  return message;
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

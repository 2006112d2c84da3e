#pragma once
// The input format of fuzz_shm_ring: one ring of the shared-memory transport as a writer in
// another process could leave it (transports/shm/region.hpp): the control block's write and
// read positions (u64 little-endian each), then the ring's kRingImageCapacity bytes (a shorter
// input leaves the rest zero). Shared by the harness and the seed writer
// (tests/unit/test_fuzz_seeds.cpp).

#include "transports/shm/region.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace dt::fuzz {

inline constexpr std::uint64_t kRingImageCapacity = transport::shm::kMinCapacity;

struct RingImage {
  transport::shm::RingControl control;
  alignas(8) std::array<std::byte, kRingImageCapacity> data{};

  // A fresh image holding `input` (heap: the control block is cache-line aligned and 192 bytes).
  [[nodiscard]] static std::unique_ptr<RingImage> load(std::string_view input) {
    auto image = std::make_unique<RingImage>();
    std::uint64_t positions[2] = {0, 0};
    const std::size_t head = std::min(input.size(), sizeof positions);
    if (head > 0) std::memcpy(positions, input.data(), head);  // an empty input's data() may be null
    input.remove_prefix(head);
    image->control.write_pos.store(positions[0]);
    image->control.read_pos.store(positions[1]);
    if (!input.empty()) {
      std::memcpy(image->data.data(), input.data(), std::min(input.size(), image->data.size()));
    }
    return image;
  }

  [[nodiscard]] std::string save() const {
    const std::uint64_t positions[2] = {control.write_pos.load(), control.read_pos.load()};
    std::string out(reinterpret_cast<const char*>(positions), sizeof positions);
    out.append(reinterpret_cast<const char*>(data.data()), data.size());
    return out;
  }
};

}  // namespace dt::fuzz

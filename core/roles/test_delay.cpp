#include "core/roles/test_delay.hpp"

#include "core/util/error.hpp"

#include <charconv>
#include <cstdlib>
#include <string>

namespace dt::roles {

namespace {

template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

std::chrono::milliseconds parse_test_delay(std::string_view text, std::uint32_t rank) {
  std::chrono::milliseconds mine{0};
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    const auto item = text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
    const auto colon = item.find(':');
    std::uint32_t r = 0;
    std::uint32_t ms = 0;
    if (colon == std::string_view::npos || !parse_number(item.substr(0, colon), r) ||
        !parse_number(item.substr(colon + 1), ms) || ms > 600000) {
      fail<ConfigError>("{}='{}': '{}' is not rank:milliseconds (a worker rank and a delay of at "
                        "most 600000 ms, e.g. \"1:30\" or \"0:10,2:50\"); this variable is a "
                        "test hook, unset it for real runs",
                        kTestDelayVariable, text, item);
    }
    if (r == rank) mine = std::chrono::milliseconds(ms);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return mine;
}

std::chrono::milliseconds test_delay(std::uint32_t rank) {
  const char* value = std::getenv(kTestDelayVariable);
  if (value == nullptr || *value == '\0') return std::chrono::milliseconds{0};
  return parse_test_delay(value, rank);
}

}  // namespace dt::roles

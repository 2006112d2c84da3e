// output.timeline: a boolean (true: the default window) or a map with the window's steps.

#include <fmt/format.h>

#include "core/config/internal.hpp"

namespace dt::config::detail {

std::uint64_t parse_timeline(const Section& output) {
  if (!output.has("timeline")) return 0;
  const YAML::Node node = output.node("timeline");
  if (node.IsScalar()) {
    if (node.Scalar() != "true" && node.Scalar() != "false") {
      output.fail("timeline", fmt::format("expected true, false or a map such as {{steps: 500}}, "
                                          "got {}",
                                          describe(node)));
    }
    return output.boolean("timeline", false) ? kTimelineDefaultSteps : 0;
  }
  constexpr std::int64_t kMaxSteps = 1'000'000;
  return static_cast<std::uint64_t>(output.section("timeline").integer(
      "steps", static_cast<std::int64_t>(kTimelineDefaultSteps), 1, kMaxSteps));
}

}  // namespace dt::config::detail

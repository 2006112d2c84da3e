#pragma once
// A TEST HOOK, not a feature: DISTTRAIN_TEST_DELAY_MS="rank:ms[,rank:ms...]" makes the named
// workers sleep that long in every training step (async mode and sharded gradients mode), so
// that end-to-end tests can make a straggler without timing luck. Issue 4's `faults:` config key
// is the user-facing way to inject such faults; this variable exists only for tests.

#include <chrono>
#include <cstdint>
#include <string_view>

namespace dt::roles {

inline constexpr const char* kTestDelayVariable = "DISTTRAIN_TEST_DELAY_MS";

// The delay `text` sets for `rank` (0 when it names other ranks). ConfigError for a malformed
// value, naming the variable and the expected form.
[[nodiscard]] std::chrono::milliseconds parse_test_delay(std::string_view text, std::uint32_t rank);
// The delay the environment sets for `rank` (0 when the variable is unset or empty).
[[nodiscard]] std::chrono::milliseconds test_delay(std::uint32_t rank);

}  // namespace dt::roles

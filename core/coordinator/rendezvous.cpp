#include "core/coordinator/rendezvous.hpp"

#include "base/error.hpp"

#include <charconv>
#include <cstdlib>
#include <string>

namespace dt::rendezvous {
namespace {

constexpr const char* kDefaultAddress = "127.0.0.1";
constexpr const char* kDefaultPort = "29500";  // torchrun's

int number(const std::string& text, const char* name, int min, int max) {
  int value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    fail<UsageError>("the launcher's {}={} is not a whole number from {} to {}", name, text, min,
                     max);
  }
  return value;
}

}  // namespace

std::optional<Launch> from_environment(const Lookup& env) {
  if (const auto off = env("DISTTRAIN_LAUNCHER"); off && *off == "none") return std::nullopt;
  struct Pair {
    const char* source;
    const char* rank;
    const char* size;
  };
  static constexpr Pair kPairs[] = {
      {"torchrun", "RANK", "WORLD_SIZE"},
      {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMI", "PMI_RANK", "PMI_SIZE"},
      {"Slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS"},
  };
  for (const auto& p : kPairs) {
    const bool has_rank = env(p.rank).has_value();
    const bool has_size = env(p.size).has_value();
    if (!has_rank && !has_size) continue;
    if (!has_rank || !has_size) {
      // SLURM_PROCID alone is a batch script's own shell: no launched step.
      if (std::string(p.source) == "Slurm") continue;
      fail<UsageError>("{} is set but {} is not: set both (or DISTTRAIN_LAUNCHER=none to run "
                       "as a single process)",
                       has_rank ? p.rank : p.size, has_rank ? p.size : p.rank);
    }
    Launch launch;
    launch.source = fmt::format("{} ({}, {})", p.source, p.rank, p.size);
    launch.size = number(*env(p.size), p.size, 1, 1 << 20);
    launch.rank = number(*env(p.rank), p.rank, 0, 1 << 20);
    if (launch.rank >= launch.size) {
      fail<UsageError>("the launcher's {}={} is not below {}={}", p.rank, launch.rank, p.size,
                       launch.size);
    }
    if (launch.size == 1) return std::nullopt;  // one process: an ordinary local run
    std::string host = env("MASTER_ADDR").value_or(kDefaultAddress);
    if (host.empty()) host = kDefaultAddress;
    const std::string port = env("MASTER_PORT").value_or(kDefaultPort);
    (void)number(port, "MASTER_PORT", 1, 65535);
    // An IPv6 literal needs brackets in host:port.
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    launch.address = host + ":" + port;
    return launch;
  }
  return std::nullopt;
}

std::optional<Launch> from_environment() {
  return from_environment([](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace dt::rendezvous

// Running out of memory, threads or open files is said as such, with the limit and what to do
// (base/resources.hpp); the limit on open files is raised to the hard one, and a need above it
// is refused by name.

#include "base/error.hpp"
#include "base/resources.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

namespace {

using dt::resources::describe_exhaustion;

rlimit fd_limits() {
  rlimit limit{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  return limit;
}

}  // namespace

TEST_CASE("resources: out of memory, threads or files is named; anything else is not") {
  CHECK(describe_exhaustion(std::bad_alloc()).starts_with("out of memory ("));
  const std::system_error no_thread(std::make_error_code(std::errc::resource_unavailable_try_again));
  CHECK(describe_exhaustion(no_thread).starts_with("cannot start a thread: out of memory or of "
                                                   "threads ("));
  const std::system_error no_file(std::make_error_code(std::errc::too_many_files_open));
  CHECK(describe_exhaustion(no_file).find("raise the limit on open files (ulimit -n, now ") !=
        std::string::npos);
  CHECK(describe_exhaustion(std::runtime_error("boom")).empty());
  CHECK(describe_exhaustion(std::system_error(std::make_error_code(std::errc::no_such_file_or_directory))).empty());
  CHECK(dt::resources::fd_limit_advice("cannot open x.csv: No such file or directory").empty());
  CHECK(dt::resources::fd_limit_advice("cannot listen on ipc://x: Too many open files") ==
        fmt::format("; raise the limit on open files (ulimit -n, now {}) or run fewer workers on "
                    "this host",
                    fd_limits().rlim_cur));
}

TEST_CASE("resources: the soft limit on open files is raised to the hard one; more is refused") {
  const rlimit saved = fd_limits();
  if (saved.rlim_max == RLIM_INFINITY || saved.rlim_max < 128) return;  // nothing to show here
  rlimit low = saved;
  low.rlim_cur = 64;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  CHECK(dt::resources::raise_fd_limit() == saved.rlim_max);
  dt::resources::require_fds(saved.rlim_max, "a test");  // enough: no error
  const auto need = saved.rlim_max + 1;
  try {
    dt::resources::require_fds(need, "a test");
    FAIL("no error");
  } catch (const dt::IoError& e) {
    CHECK(std::string(e.what()) ==
          fmt::format("too many open files ahead: a test needs about {} open files and this "
                      "process may open {} (ulimit -n); raise the limit (ulimit -n {}) or run "
                      "fewer workers on this host",
                      need, saved.rlim_max, need));
  }
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
}

TEST_CASE("resources: the address-space probe sees the limit") {
  const pid_t child = ::fork();  // the limit is set in a child: this process keeps its own
  REQUIRE(child >= 0);
  if (child == 0) {
    // 64 MiB more than this process has mapped already (statm's first field, in pages).
    unsigned long pages = 0;
    std::FILE* statm = std::fopen("/proc/self/statm", "r");
    if (statm == nullptr || std::fscanf(statm, "%lu", &pages) != 1) ::_exit(2);
    std::fclose(statm);
    const std::uint64_t mib = (pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) >> 20) + 64;
    rlimit cap{mib << 20, mib << 20};
    const bool ok = ::setrlimit(RLIMIT_AS, &cap) == 0 && dt::resources::can_map(1 << 20) &&
                    !dt::resources::can_map(std::size_t{1} << 30) &&
                    dt::resources::address_space_limit() == (mib << 20) &&
                    describe_exhaustion(std::bad_alloc())
                            .find(fmt::format("ulimit -v, is {} MiB", mib)) != std::string::npos;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

#pragma once
// What the operating system says this process has used, for the run's own reports, and the
// limits it runs under (ulimit -v, -n): running out of one is said as such, with the limit and
// what to do, never as "internal error: std::bad_alloc" or a crash inside ZeroMQ.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace dt::resources {

// The peak resident set size of the calling process so far, in bytes (getrusage's ru_maxrss).
// On Linux a child started by fork + exec begins from the parent's resident size at the fork
// (the kernel carries the old high-water mark across exec), which is small for a worker: the
// coordinator forks before it loads or generates data. 0 when the system cannot tell.
[[nodiscard]] std::uint64_t peak_rss_bytes() noexcept;

// The cores this process may run on (its CPU affinity, which taskset, cgroups' cpusets and
// Slurm narrow), at least 1.
[[nodiscard]] int usable_cores() noexcept;

// Running out of memory, threads or open files said as such, with this process's limit and what
// to do: "out of memory (the address-space limit, ulimit -v, is 300 MiB: raise it, or train on
// more workers or less data)". Empty for any other exception.
[[nodiscard]] std::string describe_exhaustion(const std::exception& e);

// The advice for a message that embeds the system's "Too many open files" (EMFILE), "" for any
// other: every layer words its own errors around strerror, so the advice is added where a
// message leaves the program ("; raise the limit on open files, ulimit -n, now 32").
[[nodiscard]] std::string fd_limit_advice(std::string_view message);

// The soft limit on open files, raised to the hard limit first (as the Go runtime does: the soft
// limit of 1024 many systems set is a remnant of select(2), which nothing here uses).
std::uint64_t raise_fd_limit() noexcept;

// raise_fd_limit(), then IoError (exit 3) when the limit is still below `need`, naming `what`
// needs them, the limit and what to do. For callers that would otherwise run into EMFILE where
// they cannot report it (ZeroMQ aborts the process when accept(2) gets it on ipc).
void require_fds(std::uint64_t need, std::string_view what);

// Whether `bytes` more address space can be mapped now: a probe, unmapped at once.
[[nodiscard]] bool can_map(std::size_t bytes) noexcept;
// The stack a new thread reserves (glibc's default: the stack limit, ulimit -s).
[[nodiscard]] std::size_t thread_stack_bytes() noexcept;
// The address-space limit (ulimit -v) in bytes, 0 when there is none.
[[nodiscard]] std::uint64_t address_space_limit() noexcept;

}  // namespace dt::resources

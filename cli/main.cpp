// disttrain: subcommands as a table; dt::Error becomes an exit code and one message here only.

#include "cli/commands.hpp"
#include "base/blas_kernels.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/log.hpp"
#include "base/resources.hpp"
#include "base/subnormals.hpp"

#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cerrno>
#include <cstring>

namespace dt::cli {

int Globals::log_level() const {
  const int level = static_cast<int>(log::Level::kWarn) + verbose - quiet;
  return std::clamp(level, static_cast<int>(log::Level::kQuiet), static_cast<int>(log::Level::kDebug));
}

void print(std::string_view text) {
  // The log first: on a terminal, or with 2>&1, what was logged before shows before. A stderr
  // that nobody reads does not hold stdout up for long (log::flush gives up).
  (void)log::flush();
  // A closed pipe (`disttrain gen ... | head`) ends the output quietly; any other failure
  // (a full disk) must not pass for success.
  if (!files::write_fd(STDOUT_FILENO, text) && errno != EPIPE) {
    fail<IoError>("cannot write to standard output: {}", std::strerror(errno));
  }
}

}  // namespace dt::cli

namespace {

// A step's messages (parameters down, gradients up: megabytes for a large model) are built and
// freed every step. By default glibc serves such blocks with mmap and unmaps them on free, or
// trims the heap top back to the OS, so every step paid page faults and zeroing again (60% of
// a large star step). Keeping them in the heap makes the next step reuse the same pages; peak
// memory does not change, freed blocks only stay mapped.
void keep_freed_memory() {
#if defined(__GLIBC__)
  (void)::mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's ceiling for the threshold
  (void)::mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dt;
  keep_freed_memory();
  (void)resources::raise_fd_limit();  // before any thread or child: they inherit it
  subnormals::flush();  // before any thread starts: every thread inherits it
  (void)blas::use_the_cpus_kernels();  // likewise, and before any product
  CLI::App app{"disttrain: data-parallel training of classic models over ZeroMQ worker processes",
               "disttrain"};
  app.require_subcommand(1);
  app.fallthrough();  // -v and -q work after the subcommand too
  app.set_version_flag("--version", "disttrain 0.1.0");
  cli::Globals globals;
  app.add_flag("-v,--verbose", globals.verbose, "more log output on stderr (repeatable)");
  app.add_flag("-q,--quiet", globals.quiet, "less log output on stderr (repeatable)");

  using Add = void (*)(CLI::App&, cli::Action&, const cli::Globals&);
  constexpr Add kCommands[] = {cli::add_run,    cli::add_validate, cli::add_predict,
                               cli::add_eval,   cli::add_worker,   cli::add_gen,
                               cli::add_reference, cli::add_keygen, cli::add_export,
                               cli::add_compare, cli::add_leave};
  cli::Action action;
  for (Add add : kCommands) add(app, action, globals);

  if (const auto code = cli::check_subcommand(app, argc, argv)) return *code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const auto code = cli::explain_unknown_option(app, e)) return *code;
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kBadInput);
  }
  log::set_level(static_cast<log::Level>(globals.log_level()));
  // The last word goes through the log, after what it queued, and never waits on stderr for
  // long (exit flushes it).
  try {
    return action();
  } catch (const Error& e) {
    log::plain(fmt::format("disttrain: {}: {}{}\n", e.kind(), e.what(),
                           resources::fd_limit_advice(e.what())));
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    // Out of memory, threads or files is the run failing for want of a resource (exit 3, as a
    // full disk is), said as such; anything else is a bug.
    const std::string exhausted = resources::describe_exhaustion(e);
    log::plain(exhausted.empty() ? fmt::format("disttrain: internal error: {}\n", e.what())
                                 : fmt::format("disttrain: {}\n", exhausted));
    return static_cast<int>(ExitCode::kTrainingFailed);
  }
}

// base/files: the sweep of temporary directories whose owner was killed (a coordinator killed
// with SIGKILL leaves its ipc socket folder behind; the next run removes it).

#include "base/files.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string owner_of(const fs::path& dir) {
  std::ifstream in(dir / ".owner");
  std::string text;
  std::getline(in, text);
  return text;
}

// The pid of a process that has exited and been reaped: no process has it now (until the pid
// is reused, which the start time in the owner file also catches).
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return static_cast<long>(child);
}

void write_owner(const fs::path& dir, const std::string& text) {
  std::ofstream(dir / ".owner") << text << '\n';
}

}  // namespace

TEST_CASE("files: sweep_orphans removes the directories of processes that are gone, only those") {
  const dt::files::TempDir base("dt-sweep-test-");
  const dt::files::TempDir mine("disttrain-", base.path());
  const std::string me = owner_of(mine.path());
  REQUIRE(me.starts_with(std::to_string(::getpid()) + " "));
  REQUIRE(me.size() > std::to_string(::getpid()).size() + 1);  // with a start time

  const auto make = [&](const std::string& name) {
    const fs::path dir = base.path() / name;
    fs::create_directory(dir);
    std::ofstream(dir / "coord.sock") << "x";
    return dir;
  };
  const fs::path dead = make("disttrain-dead01");
  write_owner(dead, std::to_string(dead_pid()) + " 12345");
  const fs::path reused = make("disttrain-reuse1");  // my pid, another start time
  write_owner(reused, std::to_string(::getpid()) + " 1");
  const fs::path unowned = make("disttrain-noown1");  // being made now: left alone
  // Its maker killed before it wrote the owner file, two hours ago: removed.
  const fs::path stale = make("disttrain-noown2");
  const auto two_hours_ago = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(stale, two_hours_ago);
  const fs::path other = make("someone-else1");
  write_owner(other, std::to_string(dead_pid()) + " 1");
  const fs::path longer = make("disttrain-toolong1");
  write_owner(longer, std::to_string(dead_pid()) + " 1");

  CHECK(dt::files::sweep_orphans(base.path(), "disttrain-") == 3);
  CHECK_FALSE(fs::exists(dead));
  CHECK_FALSE(fs::exists(stale));
  CHECK_FALSE(fs::exists(reused));
  CHECK(fs::exists(mine.path() / ".owner"));
  CHECK(fs::exists(unowned / "coord.sock"));
  CHECK(fs::exists(other));
  CHECK(fs::exists(longer));
  CHECK(dt::files::sweep_orphans(base.path() / "missing", "disttrain-") == 0);
}

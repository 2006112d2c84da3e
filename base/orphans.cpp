// TempDir's owner file and the sweep of directories whose owner was killed (files.hpp).

#include "base/files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

namespace dt::files {

namespace {

constexpr const char* kOwnerFile = ".owner";
// A folder with no owner file this many seconds after its last change is an orphan.
constexpr long kOwnerlessAge = 3600;

}  // namespace

std::string process_start_time(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {};
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  // Fields 3 (state) to 22 (starttime) follow the name.
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && field == "Z") return {};
    if (i == 22) return field;
  }
  return {};
}


void write_owner_file(const std::filesystem::path& dir) noexcept {
  const long pid = static_cast<long>(::getpid());
  std::ofstream out(dir / kOwnerFile);
  out << pid << ' ' << process_start_time(pid) << '\n';
}

std::size_t sweep_orphans(const std::filesystem::path& base, std::string_view prefix) noexcept {
  std::size_t removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& dir = it->path();
    const std::string name = dir.filename().string();
    if (!name.starts_with(prefix) || name.size() != prefix.size() + 6) continue;
    struct stat st {};
    // Our own directories only, never a symlink or another user's.
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      continue;
    }
    std::ifstream in(dir / kOwnerFile);
    long pid = 0;
    std::string started;
    if (!(in >> pid >> started) || pid <= 0) {
      // No owner yet: a process starting now, or one killed between mkdtemp and writing the
      // owner file. Only an old folder is the second.
      if (::time(nullptr) - st.st_mtime < kOwnerlessAge) continue;
    } else if (process_start_time(pid) == started) {
      continue;  // still running
    }
    std::error_code remove_error;
    if (std::filesystem::remove_all(dir, remove_error) > 0 && !remove_error) ++removed;
  }
  return removed;
}

}  // namespace dt::files

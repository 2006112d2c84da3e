#pragma once
// RUN_DIR/members.json: who trains in a running elastic run (fault_tolerance.elastic), so that
// `disttrain leave RUN_DIR --rank N` (leave_request.hpp) finds worker N's process. The session
// writes it (atomically) once the first step is done, when every worker takes SIGTERM as a
// leave, and again at every change of membership; it is removed when the run ends, however it
// ends. A coordinator killed outright leaves it behind: the readers check that the processes
// it names still run.
//   {"format": "disttrain-members", "version": 1, "job": "<16 hex digits>",
//    "coordinator": {"pid", "host", "started"},
//    "workers": [{"rank", "pid", "host", "started"}],   // training now, ascending rank
//    "events": [...]}                                   // summary.json's membership.events so far
// `started` is the process's start time (/proc/<pid>/stat): a pid reused by another process has
// another. Empty for a process on another host.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dt::roles {

struct Member {
  int rank = 0;
  std::int64_t pid = 0;
  std::string host;
  std::string started;
};

struct Members {
  std::uint64_t job_id = 0;
  Member coordinator;  // rank -1
  std::vector<Member> workers;
  nlohmann::json events = nlohmann::json::array();
};

// The file name in a run folder.
inline constexpr const char* kMembersFile = "members.json";

// Owns the file of one run: publish() writes it whole, the destructor removes it.
class MembersFile {
 public:
  MembersFile(std::filesystem::path path, std::uint64_t job_id);
  ~MembersFile();
  MembersFile(const MembersFile&) = delete;
  MembersFile& operator=(const MembersFile&) = delete;

  // `workers`' start times are filled in here for those on this host. An unwritable file is a
  // warning, once: `disttrain leave` then cannot find the run, training is not disturbed.
  void publish(std::vector<Member> workers, const nlohmann::json& events);
  // publish() was called (whether or not the file could be written).
  [[nodiscard]] bool published() const noexcept { return tried_; }
  // A joiner was admitted: it takes SIGTERM as a leave once it trains, so the file lists it
  // from the next step boundary on (the session asks due(true) there).
  void mark_stale() noexcept { stale_ = true; }
  // Whether the session should publish now: at a step boundary (`boundary`) the first time or
  // after a join; at a change (a leave, a loss) once it has published before.
  [[nodiscard]] bool due(bool boundary) const noexcept {
    return boundary ? (!tried_ || stale_) : tried_;
  }

 private:
  std::filesystem::path path_;
  std::uint64_t job_id_;
  bool tried_ = false;
  bool written_ = false;
  bool warned_ = false;
  bool stale_ = false;
};

// Reads RUN_DIR/members.json. DataError naming the file when it is not one of ours (or torn by
// hand); the caller says what a missing file means.
[[nodiscard]] Members read_members(const std::filesystem::path& path);

}  // namespace dt::roles

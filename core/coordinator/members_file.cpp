#include "core/coordinator/members_file.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/log.hpp"
#include "base/net.hpp"

#include <unistd.h>

namespace dt::roles {
namespace {

constexpr const char* kFormat = "disttrain-members";

nlohmann::json member_json(const Member& m) {
  return {{"rank", m.rank}, {"pid", m.pid}, {"host", m.host}, {"started", m.started}};
}

Member member_of(const nlohmann::json& j) {
  return {j.at("rank").get<int>(), j.at("pid").get<std::int64_t>(),
          j.at("host").get<std::string>(), j.at("started").get<std::string>()};
}

}  // namespace

MembersFile::MembersFile(std::filesystem::path path, std::uint64_t job_id)
    : path_(std::move(path)), job_id_(job_id) {}

MembersFile::~MembersFile() {
  if (!written_) return;
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

void MembersFile::publish(std::vector<Member> workers, const nlohmann::json& events) {
  const std::string here = net::this_host();
  const auto pid = static_cast<std::int64_t>(::getpid());
  nlohmann::json list = nlohmann::json::array();
  for (auto& w : workers) {
    if (w.host == here) w.started = files::process_start_time(static_cast<long>(w.pid));
    list.push_back(member_json(w));
  }
  const nlohmann::json j = {
      {"format", kFormat},
      {"version", 1},
      {"job", fmt::format("{:016x}", job_id_)},
      {"coordinator", member_json({-1, pid, here, files::process_start_time(static_cast<long>(pid))})},
      {"workers", std::move(list)},
      {"events", events.is_null() ? nlohmann::json::array() : events}};
  tried_ = true;
  stale_ = false;
  try {
    files::write_atomic(path_, j.dump(2) + "\n");
    written_ = true;
  } catch (const Error& e) {
    if (!warned_) log::warn("{}; `disttrain leave` cannot find this run's workers", e.what());
    warned_ = true;
  }
}

Members read_members(const std::filesystem::path& path) {
  const std::string text = files::read_all(path, 16u << 20);
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("format", "") != kFormat || j.value("version", 0) != 1) {
      fail<DataError>("{} is not a members file of this disttrain (format {}, version {})",
                      path.string(), j.value("format", "?"), j.value("version", 0));
    }
    Members m;
    m.job_id = std::stoull(j.at("job").get<std::string>(), nullptr, 16);
    m.coordinator = member_of(j.at("coordinator"));
    for (const auto& w : j.at("workers")) m.workers.push_back(member_of(w));
    m.events = j.at("events");
    return m;
  } catch (const nlohmann::json::exception& e) {
    fail<DataError>("{}: not a members file ({}); it is written by a running elastic run",
                    path.string(), e.what());
  } catch (const std::logic_error&) {  // stoull
    fail<DataError>("{}: its job id is not a hexadecimal number", path.string());
  }
}

}  // namespace dt::roles

#include "core/outputs/run_rotation.hpp"

#include "base/error.hpp"
#include "base/log.hpp"

#include <array>
#include <string_view>

namespace dt::output {

namespace {

constexpr std::array<std::string_view, 6> kRunFiles = {
    "model.json", "summary.json", "loss.csv", "loss.svg", "config.resolved.yaml", "timeline.json"};
constexpr std::array<std::string_view, 2> kRunFolders = {"checkpoint", "workers"};

bool is_run_entry(const std::filesystem::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  std::error_code ec;
  const auto type = entry.symlink_status(ec).type();
  for (const auto f : kRunFolders) {
    if (name == f) return type == std::filesystem::file_type::directory;
  }
  if (type != std::filesystem::file_type::regular) return false;
  for (const auto f : kRunFiles) {
    if (name == f) return true;
  }
  // `disttrain export`'s files beside the model (model.onnx, model.npz), and what a write cut
  // short leaves (files::write_atomic's ".<name>.tmp.XXXXXX").
  return name.starts_with("model.") || (name.starts_with('.') && name.find(".tmp.") != std::string::npos);
}

// runs/x/ and runs/x alike; empty for a path whose last part names no folder of its own
// (".", "..", "/").
std::filesystem::path run_folder_path(const std::filesystem::path& dir) {
  auto d = dir.lexically_normal();
  if (!d.has_filename()) d = d.parent_path();
  const auto name = d.filename().string();
  if (name.empty() || name == "." || name == "..") return {};
  return d;
}

}  // namespace

bool is_whole_run_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::symlink_status(dir, ec).type() != std::filesystem::file_type::directory) return false;
  bool marked = false;  // a run's own record: its config copy or its summary
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!is_run_entry(entry)) return false;
    const auto name = entry.path().filename();
    marked = marked || name == "config.resolved.yaml" || name == "summary.json";
  }
  return !ec && marked;
}

bool keep_previous_run(const std::filesystem::path& dir) {
  const auto d = run_folder_path(dir);
  if (d.empty() || !is_whole_run_folder(d)) return false;
  auto prev = d;
  prev += ".prev";
  std::error_code ec;
  if (std::filesystem::symlink_status(prev, ec).type() != std::filesystem::file_type::not_found) {
    if (!is_whole_run_folder(prev)) {
      fail<ConfigError>("output.dir: {} is in the way: a rerun keeps the run before it there, and "
                        "it is not a run folder; move it away or set another output.dir",
                        prev.string());
    }
    std::filesystem::remove_all(prev, ec);
    if (ec) {
      fail<ConfigError>("output.dir: cannot remove the older run {}: {}; remove it yourself or "
                        "set another output.dir",
                        prev.string(), ec.message());
    }
  }
  std::filesystem::rename(d, prev, ec);
  if (ec) {
    fail<ConfigError>("output.dir: cannot keep the earlier run as {}: {}; move {} away or set "
                      "another output.dir",
                      prev.string(), ec.message(), d.string());
  }
  log::info("the earlier run in {} is kept as {}", d.string(), prev.string());
  return true;
}

}  // namespace dt::output

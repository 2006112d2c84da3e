#pragma once
// Files are written whole or not at all: a temp file beside the target, fsync, rename, fsync of
// the directory. A crash at any moment leaves either the old or the new content, never a torn file.

#include <filesystem>
#include <string>
#include <string_view>

namespace dt::files {

void write_atomic(const std::filesystem::path& path, std::string_view content);
[[nodiscard]] std::string read_all(const std::filesystem::path& path);  // IoError names the path

// A private directory removed with everything in it when the object goes away.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dt::files

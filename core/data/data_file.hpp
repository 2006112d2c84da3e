#pragma once
// Internal to core/data: the bytes of a data file, read with pread (FileHandle) or in place from
// the page cache (MappedFile). Used by index_csv and RecordReader (csv_io.hpp).

#include "base/files.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace dt::data::detail {

// An open file read with pread: no shared file position, so a reader can jump anywhere.
// DataError names the path and errno text when it cannot be opened or read.
class FileHandle {
 public:
  explicit FileHandle(const std::filesystem::path& path);
  ~FileHandle();
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  // Reads up to n bytes at offset; fewer only at the end of the file.
  [[nodiscard]] std::size_t read_at(std::uint64_t offset, char* out, std::size_t n) const;
  [[nodiscard]] std::uint64_t size() const noexcept { return file_.size(); }
  [[nodiscard]] int fd() const noexcept { return file_.fd(); }
  // The size now (fstat), which differs from size() when the file changed after it was opened.
  [[nodiscard]] std::uint64_t current_size() const noexcept;

 private:
  std::filesystem::path path_;
  files::InputFile file_;  // a regular file only: a FIFO or /dev/zero is refused (DataError)
};

// A read-only mapping of a whole file, read a window at a time. Parsing straight from the page
// cache saves the kernel's copy into a buffer (9-13% of `validate`). populate() makes a window
// resident in one system call before it is read, and reports a file that has shrunk since it
// was opened, which a plain access would turn into SIGBUS; drop() releases pages already read,
// so resident memory stays at a few windows whatever the file's size. Empty (ok() false) where
// the system cannot map the file or populate a range (kernels before 5.14): the readers then
// use pread. populate, readable and drop change nothing in the object, so threads may call them
// on ranges of their own at once. The file must stay open while it is mapped.
class MappedFile {
 public:
  static constexpr std::uint64_t kWindow = std::uint64_t{1} << 20;
  MappedFile(int fd, std::uint64_t size) noexcept;
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  [[nodiscard]] bool ok() const noexcept { return data_ != nullptr; }
  [[nodiscard]] const char* data() const noexcept { return data_; }
  // Maps [from, to) in; false when part of it is past the file's end now.
  [[nodiscard]] bool populate(std::uint64_t from, std::uint64_t to) noexcept;
  // How far [from, to) can be read: `to`, or the file's end now when it has shrunk below it
  // (then no more than that is ever read, as with pread).
  [[nodiscard]] std::uint64_t readable(const FileHandle& file, std::uint64_t from,
                                       std::uint64_t to) noexcept;
  // Unmaps the whole pages inside [from, to) from this process (the page cache keeps them; a
  // later read maps them again, so views into the range stay valid).
  void drop(std::uint64_t from, std::uint64_t to) noexcept;

 private:
  const char* data_ = nullptr;
  std::uint64_t size_ = 0;
};

// Length of the UTF-8 byte order mark at the start of the file (0 or 3).
[[nodiscard]] std::size_t bom_length(const FileHandle& file);

}  // namespace dt::data::detail

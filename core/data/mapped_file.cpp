// MappedFile: the page cache read in place, a window at a time (data_file.hpp).

#include "core/data/data_file.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace dt::data::detail {
namespace {

std::uint64_t page_size() noexcept {
  static const auto size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

std::uint64_t FileHandle::current_size() const noexcept {
  struct stat st {};
  return ::fstat(file_.fd(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

MappedFile::MappedFile(int fd, std::uint64_t size) noexcept : size_(size) {
#if defined(MADV_POPULATE_READ)
  if (size == 0) return;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return;
  data_ = static_cast<const char*>(p);
  // A kernel without MADV_POPULATE_READ says EINVAL: read with pread there instead.
  if (::madvise(p, std::min(size, page_size()), MADV_POPULATE_READ) != 0 && errno == EINVAL) {
    (void)::munmap(p, size);
    data_ = nullptr;
  }
#else
  (void)fd;
#endif
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) (void)::munmap(const_cast<char*>(data_), size_);
}

bool MappedFile::populate(std::uint64_t from, std::uint64_t to) noexcept {
#if defined(MADV_POPULATE_READ)
  to = std::min(to, size_);
  from -= from % page_size();
  if (from >= to) return true;
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (::madvise(const_cast<char*>(data_) + from, to - from, MADV_POPULATE_READ) == 0) {
      return true;
    }
    if (errno != EINTR && errno != EAGAIN) return false;  // EFAULT: the file has shrunk
  }
#else
  (void)from;
  (void)to;
#endif
  return false;
}

std::uint64_t MappedFile::readable(const FileHandle& file, std::uint64_t from,
                                   std::uint64_t to) noexcept {
  if (populate(from, to)) return to;
  const std::uint64_t now = std::min(file.current_size(), to);
  return now > from && populate(from, now) ? now : from;
}

void MappedFile::drop(std::uint64_t from, std::uint64_t to) noexcept {
  const std::uint64_t page = page_size();
  from = (from + page - 1) / page * page;
  to = std::min(to, size_) / page * page;
  if (data_ == nullptr || from >= to) return;
  (void)::madvise(const_cast<char*>(data_) + from, to - from, MADV_DONTNEED);
}

}  // namespace dt::data::detail

// .npz archives (a zip of .npy members, numpy.savez / savez_compressed): the central directory
// read (zip64 too, which numpy writes), and the wanted members written out as plain .npy files
// (stored: copied; deflated: inflated with zlib) for the .npy reader (npy.hpp).

#include "core/data/npy.hpp"
#include "core/data/data_file.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

namespace dt::data {
namespace {

struct Member {
  std::string name;
  std::uint16_t method = 0;
  std::uint64_t packed = 0, size = 0, local_offset = 0;
};

std::uint64_t le(const char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}

[[noreturn]] void corrupt(const std::string& name, std::string_view what) {
  fail<DataError>("{}: not a readable .npz archive ({}); write it again with numpy.savez", name,
                  what);
}

std::vector<Member> read_directory(const detail::FileHandle& file, const std::string& name) {
  const std::uint64_t size = file.size();
  const std::uint64_t tail_len = std::min<std::uint64_t>(size, 65557);
  std::vector<char> tail(tail_len);
  if (file.read_at(size - tail_len, tail.data(), tail_len) != tail_len) corrupt(name, "short read");
  std::int64_t eocd = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail_len) - 22; i >= 0; --i) {
    if (le(&tail[static_cast<std::size_t>(i)], 4) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) corrupt(name, "no end of central directory: the file is truncated");
  const char* e = &tail[static_cast<std::size_t>(eocd)];
  std::uint64_t count = le(e + 10, 2), dir_size = le(e + 12, 4), dir_offset = le(e + 16, 4);
  if ((count == 0xFFFF || dir_size == 0xFFFFFFFF || dir_offset == 0xFFFFFFFF) && eocd >= 20) {
    const char* loc = e - 20;  // the zip64 locator
    if (le(loc, 4) == 0x07064b50) {
      char z[56];
      if (file.read_at(le(loc + 8, 8), z, 56) != 56 || le(z, 4) != 0x06064b50) {
        corrupt(name, "bad zip64 directory");
      }
      count = le(z + 32, 8);
      dir_size = le(z + 40, 8);
      dir_offset = le(z + 48, 8);
    }
  }
  if (dir_offset > size || dir_size > size - dir_offset || dir_size > (std::uint64_t{64} << 20)) {
    corrupt(name, "the central directory is outside the file");
  }
  std::vector<char> dir(dir_size);
  (void)file.read_at(dir_offset, dir.data(), dir_size);
  std::vector<Member> out;
  std::uint64_t at = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (at + 46 > dir_size || le(&dir[at], 4) != 0x02014b50) corrupt(name, "bad directory entry");
    const char* c = &dir[at];
    Member m;
    m.method = static_cast<std::uint16_t>(le(c + 10, 2));
    m.packed = le(c + 20, 4);
    m.size = le(c + 24, 4);
    const auto name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
    m.local_offset = le(c + 42, 4);
    if (at + 46 + name_len + extra_len > dir_size) corrupt(name, "bad directory entry");
    m.name.assign(c + 46, name_len);
    for (std::uint64_t x = 0; x + 4 <= extra_len;) {  // zip64: the fields that overflowed
      const char* f = c + 46 + name_len + x;
      const auto id = le(f, 2), len = le(f + 2, 2);
      if (x + 4 + len > extra_len) corrupt(name, "bad directory entry (an extra field overruns it)");
      if (id == 0x0001) {
        const char* v = f + 4;
        const char* const end = v + len;
        const auto take = [&](std::uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          if (end - v < 8) corrupt(name, "bad zip64 field");
          field = le(v, 8);
          v += 8;
        };
        take(m.size);
        take(m.packed);
        take(m.local_offset);
      }
      x += 4 + len;
    }
    out.push_back(std::move(m));
    at += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

void write_all(int fd, const char* data, std::size_t n, const std::filesystem::path& to) {
  if (!files::write_fd(fd, std::string_view(data, n))) {
    fail<IoError>("cannot write {}: {} (set TMPDIR to a folder with room)", to.string(),
                  std::strerror(errno));
  }
}

// Writes member `m` of the archive to `to`.
void extract(const detail::FileHandle& file, const std::string& name, const Member& m,
             const std::filesystem::path& to) {
  char local[30];
  if (file.read_at(m.local_offset, local, 30) != 30 || le(local, 4) != 0x04034b50) {
    corrupt(name, fmt::format("array '{}': bad local header", m.name));
  }
  const std::uint64_t at_data = m.local_offset + 30 + le(local + 26, 2) + le(local + 28, 2);
  std::uint64_t at = at_data;
  if (at_data > file.size() || m.packed > file.size() - at_data) {
    fail<DataError>("{}: array '{}' is cut off (the archive is truncated); write it again", name,
                    m.name);
  }
  if (m.method != 0 && m.method != 8) {
    corrupt(name, fmt::format("array '{}' uses zip method {}, not stored or deflate", m.name, m.method));
  }
  const int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail<IoError>("cannot create {}: {}", to.string(), std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  std::vector<char> in(std::size_t{1} << 20), out(std::size_t{1} << 20);
  z_stream z{};
  if (m.method == 8 && inflateInit2(&z, -MAX_WBITS) != Z_OK) corrupt(name, "zlib init failed");
  std::uint64_t left = m.packed, written = 0;
  int rc = Z_OK;
  while (left > 0) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, in.size()));
    (void)file.read_at(at, in.data(), n);
    at += n;
    left -= n;
    if (m.method == 0) {
      write_all(fd, in.data(), n, to);
      written += n;
      continue;
    }
    z.next_in = reinterpret_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(n);
    while (z.avail_in > 0 && rc != Z_STREAM_END) {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        inflateEnd(&z);
        fail<DataError>("{}: array '{}' is corrupt (deflate: {}); write it again", name, m.name,
                        z.msg != nullptr ? z.msg : "bad data");
      }
      const auto got = out.size() - z.avail_out;
      written += got;
      if (written > m.size) break;  // more than the archive says: refused below, not written on
      write_all(fd, out.data(), got, to);
    }
  }
  if (m.method == 8) inflateEnd(&z);
  if (written != m.size) {
    fail<DataError>("{}: array '{}' holds {} bytes, the archive says {}; write it again", name,
                    m.name, written, m.size);
  }
}

}  // namespace

std::pair<std::filesystem::path, std::filesystem::path> unpack_npz(
    const std::filesystem::path& from, const std::string& x_name, const std::string& y_name,
    bool y_required, const std::filesystem::path& dir) {
  const std::string name = from.string();
  const detail::FileHandle file(from);
  const auto members = read_directory(file, name);
  const auto find = [&](const std::string& array) -> const Member* {
    for (const auto& m : members) {
      if (m.name == array + ".npy" || m.name == array) return &m;
    }
    return nullptr;
  };
  std::string names;
  for (const auto& m : members) {
    names += (names.empty() ? "" : ", ") + m.name.substr(0, m.name.rfind(".npy"));
  }
  const Member* x = find(x_name);
  if (x == nullptr && x_name == "x") x = find("X");
  if (x == nullptr) {
    fail<DataError>("{}: no array '{}'; the arrays are: {} (set data.arrays.x to the features' "
                    "array)", name, x_name, names);
  }
  const Member* y = find(y_name);
  if (y == nullptr && y_required) {
    fail<DataError>("{}: no array '{}'; the arrays are: {} (set data.arrays.y to the labels' "
                    "array)", name, y_name, names);
  }
  std::pair<std::filesystem::path, std::filesystem::path> out;
  out.first = dir / (from.stem().string() + "." + x->name);
  extract(file, name, *x, out.first);
  if (y != nullptr) {
    out.second = dir / (from.stem().string() + "." + y->name);
    extract(file, name, *y, out.second);
  }
  return out;
}

}  // namespace dt::data

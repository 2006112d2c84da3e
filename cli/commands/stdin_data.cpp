// data.path: - : the rows come from stdin (`disttrain gen ... | disttrain run c.yaml --set
// data.path=-`). The command spools them once, unchanged, into a private folder (a TempDir:
// removed when the command ends, and by the next run's sweep if it was killed), and the run
// shards that file as any other: the workers on this host read their rows from it. A gzip or
// zstd file (or pipe) is decompressed into the same kind of folder, once (core/data/compressed).

#include "cli/commands.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "core/config/names.hpp"
#include "core/data/byte_stream.hpp"
#include "core/data/compressed.hpp"
#include "core/data/npy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace dt::cli {

std::filesystem::path spool_stdin(const std::filesystem::path& dir) {
  if (::isatty(STDIN_FILENO) == 1) {
    fail<UsageError>("data.path is '-', which reads the rows from stdin, but stdin is a "
                     "terminal: pipe a CSV into it (disttrain gen ... | disttrain run c.yaml "
                     "--set data.path=-, or < data.csv)");
  }
  const auto path = dir / "stdin.csv";
  const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    fail<IoError>("cannot spool stdin to {}: {}", path.string(), std::strerror(errno));
  }
  std::vector<char> buffer(std::size_t{1} << 20);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR && !signals::interrupted()) continue;
      if (errno == EINTR) {
        ::close(out);
        fail<InterruptedError>("interrupted while reading the data from stdin ({} bytes read)",
                               total);
      }
      const int e = errno;
      ::close(out);
      fail<DataError>("data.path -: cannot read stdin: {}", std::strerror(e));
    }
    if (!files::write_fd(out, std::string_view(buffer.data(), static_cast<std::size_t>(n)))) {
      const int e = errno;
      ::close(out);
      // A full disk is a resource run out (exit 3, as elsewhere), not bad input.
      fail<IoError>("cannot spool stdin to {}: {} (after {} bytes; set TMPDIR to a folder "
                    "with room)", path.string(), std::strerror(e), total);
    }
    total += static_cast<std::uint64_t>(n);
  }
  ::close(out);
  if (total == 0) {
    fail<DataError>("data.path is '-' and stdin was empty: pipe a CSV with a header row into "
                    "it");
  }
  log::info("read {} bytes of data from stdin", total);
  return path;
}

namespace {

const std::filesystem::path& spool_folder(std::optional<files::TempDir>& spool) {
  if (!spool) {
    (void)files::sweep_orphans(files::temp_root(), "disttrain-data-");
    spool.emplace("disttrain-data-");
  }
  return spool->path();
}

}  // namespace

config::DataFormat resolve_format(config::DataConfig& data, bool from_stdin,
                    std::optional<files::TempDir>& spool, const char* what) {
  using config::DataFormat;
  const auto found = data::format_of(data.path, data.format, what, !from_stdin);
  data.format = found;
  if (from_stdin && (found == DataFormat::kNpy || found == DataFormat::kLibsvm) &&
      data.path.extension() != ".npy") {
    // stdin's copy (stdin.csv): the readers tell an .npy (and predict a LIBSVM file) by its
    // name from here on.
    const auto renamed =
        spool_folder(spool) / (found == DataFormat::kNpy ? "stdin.npy" : "stdin.libsvm");
    std::filesystem::rename(data.path, renamed);
    data.path = renamed;
  }
  if (found != DataFormat::kNpz) return found;
  if (!data.labels.empty()) {
    fail<DataError>("{} {}: data.labels goes with an .npy; an .npz holds its labels as an "
                    "array (data.arrays.y)", what, data.path.string());
  }
  const auto [x, y] = data::unpack_npz(data.path, data.array_x, data.array_y,
                                       /*y_required=*/data.array_y != "y", spool_folder(spool));
  log::info("unpacked {}: {}{}", data.path.string(), x.filename().string(),
            y.empty() ? std::string() : ", " + y.filename().string());
  data.path = x;
  data.labels = y;
  data.format = DataFormat::kNpy;
  return found;
}

std::filesystem::path readable_data(const std::filesystem::path& path,
                                    config::Compression compression,
                                    std::optional<files::TempDir>& spool, const char* what,
                                    data::CsvIndex* index) {
  const auto folder = [&spool]() -> const std::filesystem::path& { return spool_folder(spool); };
  const bool from_stdin = path == "-";
  const auto plain = from_stdin ? spool_stdin(folder()) : path;
  const auto found = data::compression_of(plain, compression, what, !from_stdin);
  if (found == config::Compression::kNone) return plain;
  // Named after the file it came from (x.csv.gz -> x.csv), so that a bad row's message reads
  // .../x.csv:LINE:COLUMN; stdin's is stdin.csv.
  const auto target =
      folder() / (from_stdin ? std::filesystem::path("stdin.csv") : plain.stem());
  if (from_stdin) std::filesystem::rename(plain, folder() / "stdin.compressed");
  const auto source = from_stdin ? folder() / "stdin.compressed" : plain;
  const auto bytes = data::decompress(source, found, target, index);
  log::info("decompressed {} ({}): {} bytes", from_stdin ? "stdin" : plain.string(),
            config::name_of(found), bytes);
  if (from_stdin) std::filesystem::remove(source);  // the compressed copy is not needed again
  return target;
}

std::filesystem::path spool_bytes(data::ByteSource& in, const std::filesystem::path& name,
                                  std::optional<files::TempDir>& spool) {
  const auto path = spool_folder(spool) / name;
  const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) fail<IoError>("cannot create {}: {}", path.string(), std::strerror(errno));
  std::vector<char> buffer(std::size_t{1} << 20);
  try {
    for (std::size_t n; (n = in.read(buffer.data(), buffer.size())) > 0;) {
      if (!files::write_fd(out, std::string_view(buffer.data(), n))) {
        fail<IoError>("cannot write {}: {} (set TMPDIR to a folder with room)", path.string(),
                      std::strerror(errno));
      }
    }
  } catch (...) {
    ::close(out);
    throw;
  }
  ::close(out);
  return path;
}

}  // namespace dt::cli

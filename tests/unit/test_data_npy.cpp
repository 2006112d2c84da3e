// NumPy .npy headers as numpy writes them and as other writers may (format 2, a 1-D shape
// "(n,)", Python 2's "3L"), rows read at their offset, and the header's refusals.

#include "core/data/npy.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

// An .npy file: magic, version, header length (2 bytes in format 1, 4 in format 2), the dict
// padded with spaces to a multiple of 64 and ended by '\n', then the values.
std::filesystem::path write_npy(const std::filesystem::path& path, int major,
                                const std::string& dict, const std::vector<char>& data) {
  const std::size_t pre = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((pre + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY", 6);
  bytes += static_cast<char>(major);
  bytes += '\0';
  const auto n = static_cast<std::uint32_t>(header.size());
  bytes += static_cast<char>(n & 0xff);
  bytes += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    bytes += static_cast<char>((n >> 16) & 0xff);
    bytes += static_cast<char>((n >> 24) & 0xff);
  }
  bytes += header;
  bytes.append(data.begin(), data.end());
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

template <class T>
std::vector<char> npy_bytes(const std::vector<T>& values) {
  std::vector<char> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::string header_error(const std::filesystem::path& path) {
  try {
    (void)dt::data::read_npy_header(path);
  } catch (const dt::DataError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("npy: format 2, float32 rows read at their offset") {
  const dt::files::TempDir dir("dt-test-npy");
  const auto path = write_npy(dir.path() / "a.npy", 2,
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
                              npy_bytes(std::vector<float>{1, 2, 3, 4, 5.5f, -6}));
  const auto a = dt::data::read_npy_header(path);
  CHECK(a.rows == 3);
  CHECK(a.cols == 2);
  CHECK(a.data_offset % 64 == 0);
  CHECK(a.dtype() == "float32");
  dt::data::NpyReader reader(a);
  std::vector<double> out(4);
  reader.read(1, 2, out.data());
  CHECK(out == std::vector<double>{3, 4, 5.5, -6});
}

TEST_CASE("npy: a 1-D shape '(n,)' and Python 2's '3L' are one column") {
  const dt::files::TempDir dir("dt-test-npy");
  for (const char* shape : {"(3,)", "(3L,)"}) {
    CAPTURE(shape);
    const auto path = write_npy(
        dir.path() / "y.npy", 1,
        std::string("{'descr': '<i8', 'fortran_order': False, 'shape': ") + shape + ", }",
        npy_bytes(std::vector<std::int64_t>{7, -1, 2}));
    const auto a = dt::data::read_npy_header(path);
    CHECK(a.one_d);
    CHECK(a.rows == 3);
    CHECK(a.cols == 1);
    dt::data::NpyReader reader(a);
    std::vector<double> out(3);
    reader.read(0, 3, out.data());
    CHECK(out == std::vector<double>{7, -1, 2});
  }
}

TEST_CASE("npy: a header cut off, a wrong version and too few rows are refused by name") {
  const dt::files::TempDir dir("dt-test-npy");
  const auto cut = dir.path() / "cut.npy";
  std::ofstream(cut, std::ios::binary) << std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 18);
  CHECK(header_error(cut) == cut.string() + ": the .npy header is cut off (18 bytes in the file); "
                                          "the file is truncated: write it again");
  const auto v9 = write_npy(dir.path() / "v9.npy", 9, "{}", {});
  CHECK(header_error(v9) == v9.string() + ": .npy format version 9 is not supported (1 to 3 "
                                        "are); write it with numpy.save");
  const auto short_rows = write_npy(dir.path() / "s.npy", 1,
                                    "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), }",
                                    npy_bytes(std::vector<double>{1, 2, 3, 4, 5}));
  CHECK(header_error(short_rows) == short_rows.string() +
                                      ": the header says 4 rows of 2 float64, the file holds 2 "
                                      "rows; the file is truncated: write it again");
}

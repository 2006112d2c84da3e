// What the .npy/.npz fuzzer (tests/fuzz/fuzz_npy.cpp) and reading its parsers found: headers and
// archives that made the readers divide by zero, read past a buffer or loop over a size that
// wrapped around. Each is now refused by name (DataError), as the other bad files are.

#include "core/data/npy.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace {

// An .npy of format 1 whose header dict is `dict` (not padded: the readers do not need it).
std::filesystem::path npy_with_dict(const std::filesystem::path& path, const std::string& dict,
                                    const std::string& data = {}) {
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>(dict.size() >> 8);
  bytes += dict + data;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

doctest::String npy_refusal(const std::filesystem::path& path) {
  try {
    (void)dt::data::read_npy_header(path);
  } catch (const dt::DataError& e) {
    return doctest::String(e.what());
  }
  return doctest::String("(no error)");
}

void put_le(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A zip with one central directory entry for "x.npy" (stored), sizes `packed`/`size` (32-bit
// fields) and the extra field `extra`, its local header at offset 0 holding `data`.
std::string zip_of(std::uint32_t packed, std::uint32_t size, const std::string& extra,
                   const std::string& data) {
  const std::string name = "x.npy";
  std::string z;
  put_le(z, 0x04034b50, 4);
  z += std::string(10, '\0');
  put_le(z, 0, 4);  // crc
  put_le(z, data.size(), 4);
  put_le(z, data.size(), 4);
  put_le(z, name.size(), 2);
  put_le(z, 0, 2);
  z += name + data;
  const std::size_t dir_at = z.size();
  put_le(z, 0x02014b50, 4);
  z += std::string(6, '\0');
  put_le(z, 0, 2);  // method: stored
  z += std::string(8, '\0');
  put_le(z, packed, 4);
  put_le(z, size, 4);
  put_le(z, name.size(), 2);
  put_le(z, extra.size(), 2);
  z += std::string(10, '\0');
  put_le(z, 0, 4);  // local header offset
  z += name + extra;
  const std::size_t dir_size = z.size() - dir_at;
  put_le(z, 0x06054b50, 4);
  z += std::string(6, '\0');
  put_le(z, 1, 2);
  put_le(z, dir_size, 4);
  put_le(z, dir_at, 4);
  put_le(z, 0, 2);
  return z;
}

doctest::String npz_refusal(const dt::files::TempDir& dir, const std::string& bytes) {
  const auto path = dir.path() / "a.npz";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const auto out = dir.path() / "out";
  std::filesystem::remove_all(out);
  std::filesystem::create_directory(out);
  try {
    (void)dt::data::unpack_npz(path, "x", "y", false, out);
  } catch (const dt::DataError& e) {
    return doctest::String(e.what());
  }
  return doctest::String("(no error)");
}

}  // namespace

TEST_CASE("npy found: a shape whose row size wraps to 0, a huge dtype size, a key without a value") {
  const dt::files::TempDir dir("dt-test-npy-found");
  // 2^61 columns of 8 bytes: the row size wrapped to 0, and the rows held were divided by it.
  CHECK(npy_refusal(npy_with_dict(dir.path() / "a.npy",
                                  "{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (1, 2305843009213693952), }")) ==
        doctest::Contains("is not 1-D or 2-D"));
  // No rows of 10^12 columns: a file of 100 bytes, and 10^12 column names to make.
  CHECK(npy_refusal(npy_with_dict(dir.path() / "f.npy",
                                  "{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (0, 1000000000000), }")) ==
        doctest::Contains("has more than 4194304 columns"));
  // A shape number of more digits than a 64-bit count holds.
  CHECK(npy_refusal(npy_with_dict(dir.path() / "b.npy",
                                  "{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (99999999999999999999999, 1), }")) ==
        doctest::Contains("is not 1-D or 2-D"));
  // A dtype size too large for an int (std::atoi's undefined behaviour before).
  CHECK(npy_refusal(npy_with_dict(dir.path() / "c.npy",
                                  "{'descr': '<f99999999999999999999', 'fortran_order': False, "
                                  "'shape': (1, 1), }")) ==
        doctest::Contains("is not read; save float32 or float64"));
  // "'shape':" then only spaces: read past the end of the header before.
  CHECK(npy_refusal(npy_with_dict(dir.path() / "d.npy",
                                  "{'descr': '<f8', 'fortran_order': False, 'shape':     ")) ==
        doctest::Contains("is not 1-D or 2-D"));
  // The good form of the same header still reads.
  const auto good = npy_with_dict(dir.path() / "e.npy",
                                  "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }",
                                  std::string(16, '\0'));
  CHECK(dt::data::read_npy_header(good).cols == 2);
}

TEST_CASE("npz found: a zip64 field past its extra field, sizes that wrap past the file's end") {
  const dt::files::TempDir dir("dt-test-npz-found");
  // The size says "see the zip64 field", whose 8 bytes are not in the entry (an empty field at
  // the directory's end): read past the directory before.
  std::string extra;
  put_le(extra, 1, 2);
  put_le(extra, 0, 2);
  CHECK(npz_refusal(dir, zip_of(10, 0xFFFFFFFF, extra, "0123456789")) ==
        doctest::Contains("bad zip64 field"));
  // An extra field longer than the entry's extra bytes.
  std::string long_field;
  put_le(long_field, 7, 2);
  put_le(long_field, 200, 2);
  CHECK(npz_refusal(dir, zip_of(10, 10, long_field, "0123456789")) ==
        doctest::Contains("an extra field overruns it"));
  // A packed size of 2^64 - 1 (zip64) from a small offset: `at + packed` wrapped past the
  // file's size check, and 2^64 bytes were then "copied" a megabyte at a time.
  std::string huge;
  put_le(huge, 1, 2);
  put_le(huge, 8, 2);
  put_le(huge, ~std::uint64_t{0}, 8);
  CHECK(npz_refusal(dir, zip_of(0xFFFFFFFF, 10, huge, "0123456789")) ==
        doctest::Contains("is cut off (the archive is truncated)"));
  // The well-formed archive of the same member unpacks.
  CHECK(npz_refusal(dir, zip_of(10, 10, "", "0123456789")) == "(no error)");
}

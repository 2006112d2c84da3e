#pragma once
// Compressed data files (gzip, zstd): told from the file's name and checked against its first
// bytes, and decompressed whole into a plain file (zlib, libzstd), which a run then shards like
// any CSV. Decompressing once keeps what the workers read seekable: each reads only its rows.

#include "core/config/config.hpp"

#include <filesystem>

namespace dt::data {

struct CsvIndex;

// The compression of `path` for `wanted` (data.compression): kAuto looks at the name (.gz,
// .zst) and the first bytes; DataError when they disagree ("x.csv starts like a gzip file:
// name it x.csv.gz, or set data.compression: gzip") or when a forced one does not match the
// content. kNone when the file is plain. `what` names the file in messages ("data.path").
// `named` false (stdin's copy, whose name says nothing): the content alone decides.
[[nodiscard]] config::Compression compression_of(const std::filesystem::path& path,
                                                 config::Compression wanted, const char* what,
                                                 bool named = true);

// Decompresses `from` (gzip: every member, as zcat does; zstd: every frame) into `to`, created
// new: on a thread of its own, which hands 1 MiB blocks to the calling thread's writes (4 of
// them at most in flight). DataError naming the file and the byte offset for corrupt or
// truncated input, IoError when `to` cannot be written (a full disk), InterruptedError after
// Ctrl-C; the thread has ended when it returns or throws. Returns the bytes written.
//
// With `index` (its delimiter: data.delimiter, 0 to detect): `to` is also indexed as a CSV while
// it is written, as index_csv(to, ..., delimiter) would index it; `index` is left empty (no
// path) where that could not be done (not a CSV, a bad row: index_csv then says what is wrong).
std::uint64_t decompress(const std::filesystem::path& from, config::Compression compression,
                         const std::filesystem::path& to, CsvIndex* index = nullptr);

}  // namespace dt::data

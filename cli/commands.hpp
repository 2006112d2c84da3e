#pragma once
// Each subcommand lives in cli/commands/<name>.cpp and registers itself on the CLI11 app:
// it adds its options and returns, through `action`, what to run when it is chosen.
// Commands parse arguments and print; the work is in core/.
//
// cli/: main and one file per subcommand in commands/: arguments in, exit codes and printing out.
// May use: base/, transports/, core/, cli/.

#include "base/files.hpp"
#include "core/config/config.hpp"
#include "transports/security.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace dt::data {
class ByteSource;
struct CsvIndex;
}  // namespace dt::data

namespace dt::cli {

using Action = std::function<int()>;

struct Globals {
  int verbose = 0;
  int quiet = 0;
  [[nodiscard]] int log_level() const;  // dt::log::Level as int
};

void add_run(CLI::App& app, Action& action, const Globals& globals);
void add_validate(CLI::App& app, Action& action, const Globals& globals);
void add_predict(CLI::App& app, Action& action, const Globals& globals);
void add_eval(CLI::App& app, Action& action, const Globals& globals);
void add_worker(CLI::App& app, Action& action, const Globals& globals);
void add_gen(CLI::App& app, Action& action, const Globals& globals);
void add_reference(CLI::App& app, Action& action, const Globals& globals);
void add_keygen(CLI::App& app, Action& action, const Globals& globals);
void add_export(CLI::App& app, Action& action, const Globals& globals);
void add_compare(CLI::App& app, Action& action, const Globals& globals);
void add_leave(CLI::App& app, Action& action, const Globals& globals);

// Before CLI11 parses: with no subcommand, the usage on stderr; with an unknown one, that said,
// a "did you mean" and the list (usage.cpp). Returns the exit code (2) then, nullopt to go on.
[[nodiscard]] std::optional<int> check_subcommand(const CLI::App& app, int argc, const char* const* argv);
// After a failed parse: an option the subcommand does not have ("--jsn") named with the one
// meant and where the options are listed, exit 2; nullopt for any other error (CLI11 says it).
[[nodiscard]] std::optional<int> explain_unknown_option(const CLI::App& app,
                                                        const CLI::ParseError& error);

// A worker that joins a coordinator by itself (`disttrain worker --connect`, or a rank > 0 of
// `disttrain run` under a launcher). job_id 0: learned from the coordinator.
struct JoinOptions {
  std::string connect;  // tcp://HOST:PORT (or ipc://PATH)
  std::uint32_t rank = 0;  // with `join`: the slot asked for, or protocol::kAnyRank
  bool join = false;       // --join: joins a running job (fault_tolerance.elastic)
  std::uint64_t job_id = 0;
  std::string config_hash;  // of the config this worker read itself; empty: none
  std::string data;         // its own copy of the data (--data); empty: the coordinator's path
  std::string advertise;    // tcp: the host its peers connect to; empty: its route address
  int join_timeout_ms = 60000;
  int log_level = -1;
  transport::Security security;  // core/protocol/keys.hpp: worker_keys()
};
[[nodiscard]] int run_joining_worker(const JoinOptions& join);

// data.path '-': copies stdin into `dir`/stdin.csv and returns its path. UsageError when stdin
// is a terminal, DataError when it is empty or unreadable, IoError when the copy cannot be
// written (stdin_data.cpp).
[[nodiscard]] std::filesystem::path spool_stdin(const std::filesystem::path& dir);
// A data file as the readers take it: `path` itself when it is plain; stdin ('-') spooled, and
// a gzip or zstd file (data.compression, core/data/compressed.hpp) decompressed, into `spool`
// (made on first need; a private folder that goes with it). `what` names the file in messages.
// `index`: a decompressed file is also indexed as a CSV while it is written (data::decompress);
// left empty (no path) otherwise.
[[nodiscard]] std::filesystem::path readable_data(const std::filesystem::path& path,
                                                  config::Compression compression,
                                                  std::optional<files::TempDir>& spool,
                                                  const char* what,
                                                  data::CsvIndex* index = nullptr);

// After readable_data: data.format resolved (auto: the name checked against the first bytes,
// DataError on a mismatch) to csv or npy; an .npz's arrays (data.arrays) unpacked into `spool`
// as .npy files, which become data.path and data.labels; a spooled stdin holding an .npy renamed
// stdin.npy. `from_stdin`: data.path is stdin's copy, whose name says nothing. Returns the
// format found (npz for an archive, although data.format is npy after it).
config::DataFormat resolve_format(config::DataConfig& data, bool from_stdin,
                    std::optional<files::TempDir>& spool, const char* what);
// Bytes that must be a file after all (predict's .npy or .npz through a pipe or a decompressor)
// written into `spool` as `name`; IoError for a full disk. Returns the file's path.
[[nodiscard]] std::filesystem::path spool_bytes(data::ByteSource& in, const std::filesystem::path& name,
                                                std::optional<files::TempDir>& spool);

// Writes text to stdout in full (a closed pipe is not an error worth a stack of messages).
void print(std::string_view text);

}  // namespace dt::cli

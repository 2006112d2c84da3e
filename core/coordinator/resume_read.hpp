#pragma once
// What `run --resume` reads of a checkpoint once the file has decoded (checkpoint.hpp checks the
// bytes and the checksum): the manifest's checks against the config, the loss log, the loss
// window, optimizer states and the modes' own counts. No session here, so that
// tests/fuzz/fuzz_resume.cpp reaches every reader. A checksum only proves that the file is what
// was written, not that disttrain wrote it (a hand-edited or hand-made file, an older build): a
// key missing, of another type, or a number that is not what the key holds (a step of 1e300,
// -1, 2.5) is a DataError naming the checkpoint and the key, never a JSON library exception or
// a double converted to an integer out of range (undefined behaviour).

#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/result.hpp"
#include "core/models/optim.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dt::roles {

// Strict reads of one key of the manifest object `j` (`where`: the checkpoint, for the message).
[[nodiscard]] const nlohmann::json& manifest_key(const nlohmann::json& j, const char* key,
                                                 const std::string& where);
[[nodiscard]] std::uint64_t manifest_count(const nlohmann::json& j, const char* key,
                                           const std::string& where);
[[nodiscard]] std::vector<std::uint64_t> manifest_counts(const nlohmann::json& j, const char* key,
                                                         const std::string& where);
[[nodiscard]] double manifest_number(const nlohmann::json& j, const char* key,
                                     const std::string& where);
[[nodiscard]] std::vector<double> manifest_numbers(const nlohmann::json& j, const char* key,
                                                   const std::string& where);

// find_resume_point's checks of a found checkpoint: its format, then the keys it was written
// under (`fixed_now`, `soft_now`: key -> text, as resume.cpp computes them for the config now).
// ConfigError naming every fixed key that changed; returns a warning per soft key that did.
[[nodiscard]] std::vector<std::string> check_resume_manifest(const checkpoint::Checkpoint& ck,
                                                             const std::string& where,
                                                             const nlohmann::json& fixed_now,
                                                             const nlohmann::json& soft_now);

// What Checkpointer::restore gives the session before the mode restores its own state.
struct RestoredRun {
  std::vector<std::string> classes;
  std::vector<double> parameters;
  std::uint64_t samples = 0;
  std::uint64_t logged_steps = 0;
  std::vector<LogRow> log;
  nlohmann::json aggregation;
  nlohmann::json window;  // LossWindow::restore reads it
  double seconds = 0;
};
[[nodiscard]] RestoredRun read_restored(const checkpoint::Checkpoint& ck, const std::string& where);

// The loss log into a checkpoint (columns of raw doubles; resume_read.cpp says why).
void put_log(checkpoint::Checkpoint& out, const std::vector<LogRow>& log);

// Optimizer state into and out of a checkpoint, under `prefix` ("optimizer", "server.1.optimizer").
// `at`: when given, every slot is zero outside these keys (ascending; ArrayBuilder::add_at).
void put_optimizer(checkpoint::Checkpoint& out, const std::string& prefix,
                   const models::OptimizerState& state,
                   const std::vector<std::uint32_t>* at = nullptr);
[[nodiscard]] models::OptimizerState get_optimizer(const checkpoint::Checkpoint& in,
                                                   const std::string& prefix);

// parameters mode: the rounds done and each client's position in its data.
struct RoundsState {
  std::uint64_t round = 0;
  std::vector<std::uint64_t> positions;
};
[[nodiscard]] RoundsState read_rounds_state(const checkpoint::Checkpoint& ck);
// async mode: each worker's pushes server 0 had applied.
[[nodiscard]] std::vector<std::uint64_t> read_worker_steps(const checkpoint::Checkpoint& ck);

}  // namespace dt::roles

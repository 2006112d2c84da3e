// libFuzzer harness: what `run --resume` reads of a checkpoint once its bytes have decoded
// (fuzz_checkpoint's part), through core/coordinator/resume_read.hpp, the code the product runs:
// find_resume_point's checks of the manifest against the config (check_resume_manifest), what
// Checkpointer::restore gives the session (read_restored: classes, parameters, counts, the loss
// log as columns or as the JSON rows of earlier builds, the aggregation, the time), the loss
// window (LossWindow::restore), every optimizer state the manifest lists (get_optimizer, then
// set_state on an optimizer of the model's size, as each mode's restore_state does), the
// parameters mode's rounds and positions and the async mode's worker steps.
//
// A refusal is a dt::Error (exit 2 with the file named); a JSON library exception, a cast out of
// range (UBSan) or a read past an array is a finding.
//
// Input: a checkpoint's manifest (JSON text), a NUL byte, then the file's array section (the
// array count and the arrays, as checkpoint.hpp lays them out). The harness makes the file
// around them: the magic, the version, the manifest's length, and a valid trailer
// (checkpoint_bytes.hpp). So a mutation of the manifest is a hand-edited file whose lengths and
// checksum still hold, which is what reaches these readers (in a whole file, almost every
// change to the manifest breaks its length field first: fuzz_checkpoint's part).
// tests/fuzz/corpus/fuzz_resume/ holds the checkpoints of short runs of every mode in this form
// (see tests/fuzz/corpus/README.md).

#include "core/coordinator/loss_window.hpp"
#include "core/coordinator/resume_read.hpp"
#include "tests/fuzz/checkpoint_bytes.hpp"
#include "tests/fuzz/harness.hpp"

#include <algorithm>

namespace {

namespace roles = dt::roles;
using dt::fuzz::refusal_is_fine;
using nlohmann::json;

const std::string kWhere = "runs/x/checkpoint/step-000000000006.ckpt";

// The keys the config would give now: the file's own string values, so that a consistent file
// goes on past the check (and a changed one is refused by name).
json keys_now(const json& manifest, const char* section) {
  json now = json::object();
  if (const auto it = manifest.find(section); it != manifest.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (value.is_string()) now[key] = value;
    }
  }
  return now;
}

void optimizer(const dt::checkpoint::Checkpoint& ck, const std::string& prefix, std::size_t p) {
  auto state = roles::get_optimizer(ck, prefix);
  for (const auto type : {dt::config::OptimizerType::kSgd, dt::config::OptimizerType::kAdam}) {
    dt::config::OptimizerConfig c;
    c.type = type;
    c.momentum = state.slots.size() == 1 ? 0.9 : 0.0;
    refusal_is_fine([&] { dt::models::make_optimizer(c, p)->set_state(state); });
  }
}

void one(std::string_view bytes) {
  const auto ck = dt::checkpoint::decode(bytes, kWhere, dt::fuzz::kMaxSparseSize);
  const auto& m = ck.manifest;
  refusal_is_fine([&] {
    (void)roles::check_resume_manifest(ck, kWhere, keys_now(m, "fixed"), keys_now(m, "soft"));
  });
  std::size_t parameters = 0;
  refusal_is_fine([&] {
    const auto run = roles::read_restored(ck, kWhere);
    parameters = run.parameters.size();
    for (const auto& row : run.log) (void)row.worker_loss.size();
    // The window of a run of a few workers (what the session's ranks are).
    for (const std::size_t ranks : {std::size_t{1}, std::size_t{4}}) {
      roles::LossWindow window(ranks);
      refusal_is_fine([&] { window.restore(run.window, kWhere); });
    }
  });
  if (const auto it = m.find("optimizers"); it != m.end() && it->is_object()) {
    std::size_t seen = 0;
    for (const auto& [prefix, meta] : it->items()) {
      if (++seen > 16) break;  // a checkpoint lists one per server or client of a small run
      refusal_is_fine([&, &name = prefix] { optimizer(ck, name, parameters); });
    }
  }
  refusal_is_fine([&] { optimizer(ck, "optimizer", parameters); });
  refusal_is_fine([&] { (void)roles::read_rounds_state(ck); });
  refusal_is_fine([&] { (void)roles::read_worker_steps(ck); });
}

// The checkpoint file of an input (see above); no NUL: a manifest and no array.
std::string file_of(std::string_view input) {
  const auto nul = input.find('\0');
  const auto manifest = input.substr(0, nul);
  const std::string_view arrays =
      nul == std::string_view::npos ? std::string_view("\0\0\0\0\0\0\0\0", 8) : input.substr(nul + 1);
  std::string out("DTCKPT\r\n\x01\0\0\0\0\0\0\0", 16);
  const std::uint64_t n = manifest.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += manifest;
  out += arrays;
  return dt::fuzz::with_valid_trailer(out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  refusal_is_fine([&] { one(file_of(dt::fuzz::text_of(data, size))); });
  return 0;
}

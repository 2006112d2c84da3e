#pragma once
// A rerun into the same output.dir keeps the run before it once, as <output.dir>.prev, so a CI
// job can `disttrain compare runs/x.prev runs/x` with nothing set up (docs/outputs.md, "A rerun
// and runs/<name>.prev").
//
// The earlier run moves away whole, by one rename, when the new run starts (prepare_run_dir):
// the new run then writes into a folder of its own, as it always has, so its checkpoints,
// worker logs and a failed run's summary.json are where users, `--resume` and the tests look
// for them, and a run that fails, is interrupted or killed outright never touches .prev.
// Never a mix: runs/x holds one run's files, runs/x.prev the other's.

#include <filesystem>

namespace dt::output {

// Whether `dir` is a run folder that holds nothing but what runs and exports write (model.json,
// summary.json, loss.csv, loss.svg, config.resolved.yaml, timeline.json, model.<format>,
// checkpoint/, workers/, and write_atomic's leftover temporary files), so moving it whole moves
// nothing of the user's.
[[nodiscard]] bool is_whole_run_folder(const std::filesystem::path& dir);

// Before a fresh run (not --resume) writes into `dir`: when `dir` is such a run folder, replaces
// <dir>.prev by it (one rename) and returns true. A folder holding anything else (output.dir: .,
// a folder of the user's) stays, and the run replaces its own files in place as before, keeping
// no .prev. ConfigError (exit 2, before any worker starts) when <dir>.prev is in the way (not a
// run folder) or the rename fails.
bool keep_previous_run(const std::filesystem::path& dir);

}  // namespace dt::output

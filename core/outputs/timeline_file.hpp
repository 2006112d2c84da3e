#pragma once
// timeline.json (output.timeline): the run's recorded spans (core/coordinator/result.hpp
// RunResult::timeline) in Chrome's trace event format, the JSON object form that Perfetto
// (ui.perfetto.dev) and chrome://tracing open: {"traceEvents": [...], "displayTimeUnit": "ms"}.
// Each span is an "X" (complete) event, ts and dur in microseconds from the earliest span;
// "M" events name each process (worker <rank>, coordinator) and thread. docs/outputs.md has
// the layout.

#include "core/coordinator/result.hpp"

#include <filesystem>
#include <string>

namespace dt::output {

[[nodiscard]] std::string timeline_json(const roles::RunResult& result);
void write_timeline(const std::filesystem::path& dir, const roles::RunResult& result);

}  // namespace dt::output

#pragma once
// validate of a gzip or zstd CSV, checked as it is decompressed (issue 15): the decompressor on
// a thread of its own, and every row parsed and checked on the calling thread as its bytes come,
// with no copy of the data written, so that the whole costs about the slower of the two. The
// run's index (row starts, lines) is made on the way, and the plan from it; what validate then
// prints that depends on the plan (labels per rank) comes from one label a row, kept.
//
// Only where this gives exactly what the plain path gives (checking the decompressed copy as it
// checks any CSV): a CSV (not .npy, LIBSVM), no data.categorical, data.hash or data.sparse, no
// data.missing: mean (its statistics are summed piece by piece along the plan), not strategy
// by_label, dirichlet or files (they read the labels to plan), not stdin. Any error on the way
// (a bad row, corrupt data) gives up the streamed check for the plain path, which reports it:
// errors stay as they were, the first bad row first, at the cost of decompressing again.

#include "core/config/config.hpp"
#include "core/coordinator/plan.hpp"
#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dt::cli {

// Row counts per label of one loaded shard, before the class list is known (it needs the labels
// of every shard): raw label texts for categorical tasks, 0/1 counts for binary ones.
struct LabelTally {
  std::map<std::string, std::uint64_t> texts;
  std::uint64_t ones = 0;
  std::uint64_t rows = 0;

  void add(const data::Shard& shard, data::LabelKind kind) {
    rows += static_cast<std::uint64_t>(shard.y.size());
    if (kind == data::LabelKind::kCategorical) {
      for (const auto& t : shard.raw_labels) ++texts[t];
    } else if (kind == data::LabelKind::kBinary) {
      ones += static_cast<std::uint64_t>((shard.y.array() == 1.0).count());
    }
  }
  void merge(const LabelTally& other) {
    for (const auto& [text, n] : other.texts) texts[text] += n;
    ones += other.ones;
    rows += other.rows;
  }
  // {"class": rows, ...} in class order, every class listed (0 when absent).
  [[nodiscard]] nlohmann::ordered_json by_class(const std::vector<std::string>& classes,
                                                data::LabelKind kind) const {
    std::vector<std::uint64_t> counts(classes.size(), 0);
    if (kind == data::LabelKind::kBinary) {
      counts = {rows - ones, ones};
    } else {
      // Map each text to its class exactly as the run does ("02" is class 2).
      data::Shard mapping;
      for (const auto& [text, n] : texts) mapping.raw_labels.push_back(text);
      data::assign_classes(mapping, classes);
      std::size_t i = 0;
      for (const auto& [text, n] : texts) {
        counts[static_cast<std::size_t>(mapping.y(static_cast<Eigen::Index>(i++)))] += n;
      }
    }
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (std::size_t c = 0; c < classes.size(); ++c) j[classes[c]] = counts[c];
    return j;
  }
};

// A compressed CSV, checked whole.
struct StreamedData {
  data::CsvIndex index;               // as index_csv makes it of the decompressed file
  std::vector<std::uint32_t> labels;  // a row's label: binary 0/1, categorical an index in texts
  std::vector<std::string> texts;     // the categorical labels, in the order first seen
  // Each rank's tally (its plan.segments), then the held-out rows'.
  [[nodiscard]] std::vector<LabelTally> tallies(const roles::Plan& plan,
                                                data::LabelKind kind) const;
};

// The data checked as it is decompressed, with config.data.path (and data.format) set for
// make_plan(config, 1, &index); nullopt (config unchanged) where the plain path must check it
// (see above). InterruptedError after Ctrl-C.
[[nodiscard]] std::optional<StreamedData> check_while_decompressing(config::Config& config,
                                                                    data::LabelKind kind);

}  // namespace dt::cli

#pragma once
// Internal to core/data: storing a label cell as the task needs it, and a file reader at a row
// start, shared by the dense loaders (dataset.cpp) and the hashed-CSV loader (hashed_csv.cpp).

#include "core/data/csv_io.hpp"
#include "core/data/dataset.hpp"
#include "core/data/missing.hpp"
#include "base/error.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dt::data::detail {

constexpr const char* kBinaryHint =
    "logistic_regression and binary mlp need 0/1 labels (use softmax_regression for more classes)";

// Source column -> feature column, or -1 for the label and for columns the features do not use
// (predict reads a model's features, in the model's order, from a file that may have more).
// DataError naming `origin` for a feature that is no column.
[[nodiscard]] std::vector<std::ptrdiff_t> feature_targets(const SourceInfo& source,
                                                          const std::string& origin);

// The shard loaders' reader of a file (not a stream) at a row start: `own` made at the first
// call, moved by seek() at the next ones (defined in csv_reader.cpp).
RecordReader& reader_at(std::optional<RecordReader>& own, const std::filesystem::path& path,
                        std::uint64_t offset, std::uint64_t line, char delimiter);

// Stores one row's label as the task needs it (numeric labels are handled by the caller).
// `where` names the cell in messages: "data.csv:8:4" or "synthetic data row 17".
struct LabelSink {
  Shard& shard;
  LabelKind kind;
  const std::string& label;

  // A CSV label cell read by the general path (RecordReader::next_views), numeric ones too.
  void put_cell(Eigen::Index r, const FieldView& cell, const std::filesystem::path& path) {
    if (kind == LabelKind::kNumeric) {
      shard.y(r) = parse_label(cell.text(), cell.line, cell.column, path, label);
      return;
    }
    put(r, trim_spaces(cell.text()),
        [&] { return fmt::format("{}:{}:{}", path.string(), cell.line, cell.column); });
  }

  // `where` is called only to build an error message, so the happy path formats nothing.
  template <class Where>
  void put(Eigen::Index r, std::string_view text, const Where& where) {
    switch (kind) {
      case LabelKind::kNumeric:
        break;  // numeric labels are parsed by the caller, like features
      case LabelKind::kBinary: {
        if (text == "0" || text == "1") {
          shard.y(r) = text == "1" ? 1.0 : 0.0;
          return;
        }
        if (text.empty()) {
          fail<DataError>("{}: label '{}': empty cell; expected 0 or 1", where(), label);
        }
        double v = 0.0;
        const bool number = to_number(text, v);
        if (number && (v == 0.0 || v == 1.0)) {
          shard.y(r) = v == 1.0 ? 1.0 : 0.0;  // "-0" is class 0, stored as +0
          return;
        }
        fail<DataError>("{}: label '{}': {} is not 0 or 1; {}", where(), label,
                        number ? std::string(text) : quote_for_message(text), kBinaryHint);
      }
      case LabelKind::kCategorical:
        if (text.empty()) {
          fail<DataError>("{}: label '{}': empty cell; expected a class", where(), label);
        }
        // Class names travel between processes and into model.json: they must be text.
        if (!text::valid_utf8(text)) {
          fail<DataError>("{}: label '{}': the class name is not valid UTF-8; save the file as "
                          "UTF-8", where(), label);
        }
        shard.raw_labels.emplace_back(text);
        return;
    }
  }
};

}  // namespace dt::data::detail

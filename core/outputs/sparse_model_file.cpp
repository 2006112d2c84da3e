// model.json of a sparse model (sparse_model_file.hpp): the "sparse" object and the weights as
// nonzeros, written and read back.

#include "core/outputs/sparse_model_file.hpp"
#include "core/outputs/sparse_params.hpp"

#include "base/error.hpp"
#include "core/config/names.hpp"
#include "core/data/libsvm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_set>

namespace dt::output {
namespace {

using nlohmann::json;

// LIBSVM rows have no named columns: a sparse source with neither hashed nor numeric columns.
bool is_libsvm(const data::SparseSource& s) { return s.hashed.empty() && s.numeric.empty(); }

struct SparseReader {
  const std::filesystem::path& origin;

  [[noreturn]] void bad(const std::string& what) const {
    fail<DataError>("{}: sparse: {}; is this a model.json written by disttrain run?",
                    origin.string(), what);
  }
  const json& at(const json& j, const char* key) const {
    if (!j.contains(key)) bad(fmt::format("missing field '{}'", key));
    return j.at(key);
  }
  std::uint64_t whole(const json& j, const char* key, std::uint64_t max) const {
    const json& v = at(j, key);
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
      bad(fmt::format("field '{}' is {}, not a whole number from 0 to {}", key, v.dump(), max));
    }
    return v.get<std::uint64_t>();
  }
  std::vector<std::string> names(const json& j, const char* key) const {
    if (!j.contains(key)) return {};
    const json& v = j.at(key);
    if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); })) {
      bad(fmt::format("field '{}' is not a list of column names", key));
    }
    return v.get<std::vector<std::string>>();
  }
};

}  // namespace

nlohmann::ordered_json sparse_input_json(const data::SparseSource& sparse, config::Missing missing) {
  nlohmann::ordered_json j;
  if (is_libsvm(sparse)) {
    j["format"] = "libsvm";
    j["width"] = sparse.width;
    j["index_base"] = sparse.index_base;
    return j;
  }
  j["format"] = "csv";
  j["width"] = sparse.width;
  j["hash_bits"] = sparse.hash_bits;
  j["hashed"] = sparse.hashed;
  nlohmann::ordered_json crosses = nlohmann::ordered_json::array();
  for (const auto& [a, b] : sparse.crosses) crosses.push_back({a, b});
  j["crosses"] = crosses;
  j["numeric"] = sparse.numeric;
  j["missing"] = config::name_of(missing);
  return j;
}

void read_sparse_input(const nlohmann::json& j, const std::filesystem::path& origin,
                       const std::string& label, SavedModel& model) {
  const SparseReader r{origin};
  if (!j.is_object()) r.bad("not an object");
  data::SparseSource s;
  const json& format = r.at(j, "format");
  if (format != "libsvm" && format != "csv") {
    r.bad(fmt::format("format {} is not \"libsvm\" or \"csv\"", format.dump()));
  }
  s.width = r.whole(j, "width", kMaxSparseWidth);
  if (s.width == 0) r.bad("width is 0");
  if (format == "libsvm") {
    s.index_base = r.whole(j, "index_base", data::kMaxLibsvmIndex);
    model.sparse = std::move(s);
    return;
  }
  s.hash_bits = static_cast<int>(r.whole(j, "hash_bits", 30));
  s.hashed = r.names(j, "hashed");
  s.numeric = r.names(j, "numeric");
  if (j.contains("crosses")) {
    const json& list = j.at("crosses");
    if (!list.is_array()) r.bad("field 'crosses' is not a list of column pairs");
    for (const json& pair : list) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
        r.bad(fmt::format("cross {} is not a pair of column names", pair.dump()));
      }
      s.crosses.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
  }
  if (s.hashed.empty() && s.numeric.empty()) r.bad("a csv model lists no hashed nor numeric column");
  if (!s.hashed.empty() && s.hash_bits < 1) r.bad("hashed columns need hash_bits from 1 to 30");
  if (s.hashed.empty() && s.hash_bits != 0) r.bad("hash_bits without hashed columns");
  std::unordered_set<std::string> seen;
  for (const auto* list : {&s.hashed, &s.numeric}) {
    for (const auto& name : *list) {
      if (!seen.insert(name).second) r.bad(fmt::format("column '{}' is listed twice", name));
      if (name == label) r.bad(fmt::format("column '{}' is the label", name));
    }
  }
  for (const auto& [a, b] : s.crosses) {
    for (const auto* name : {&a, &b}) {
      if (std::find(s.hashed.begin(), s.hashed.end(), *name) == s.hashed.end()) {
        r.bad(fmt::format("cross of '{}', which is not a hashed column", *name));
      }
    }
  }
  const std::uint64_t buckets = s.hashed.empty() ? 0 : std::uint64_t{1} << s.hash_bits;
  if (s.width != buckets + s.numeric.size()) {
    r.bad(fmt::format("width {} is not the {} hashed keys and {} numeric columns ({})", s.width,
                      buckets, s.numeric.size(), buckets + s.numeric.size()));
  }
  const auto missing = r.at(j, "missing");
  using config::Missing;
  bool known = false;
  for (const Missing m : {Missing::kError, Missing::kZero, Missing::kMean}) {
    if (missing == config::name_of(m)) {
      model.normalization.missing = m;
      known = true;
    }
  }
  if (!known) r.bad(fmt::format("missing {} is not \"error\", \"zero\" or \"mean\"", missing.dump()));
  model.sparse = std::move(s);
}

void read_sparse_weights(const nlohmann::json& j, const models::ParamBlock& block,
                         const std::filesystem::path& origin, SavedModel& model) {
  if (!is_sparse_block(j)) {
    fail<DataError>("{}: parameter '{}' of a sparse model must be in sparse form (\"encoding\": "
                    "\"sparse\", \"index\", \"data\"); is this a model.json written by disttrain "
                    "run?", origin.string(), block.name);
  }
  auto entries = read_sparse_entries(j, block, origin);
  model.weight_index = std::move(entries.index);
  model.weight_values = std::move(entries.data);
}

std::vector<double> dense_params(const SavedModel& model) {
  const std::size_t outputs = model.params.size();  // the biases alone
  std::vector<double> full(model.sparse->width * outputs + outputs, 0.0);
  for (std::size_t n = 0; n < model.weight_index.size(); ++n) {
    full[model.weight_index[n]] = model.weight_values[n];
  }
  std::copy(model.params.begin(), model.params.end(), full.end() - static_cast<std::ptrdiff_t>(outputs));
  return full;
}

std::optional<std::string> sparse_difference(const data::SparseSource& model,
                                             const data::SparseSource& data) {
  const auto what = [](const data::SparseSource& s) {
    return is_libsvm(s) ? std::string("LIBSVM rows") : std::string("hashed CSV columns");
  };
  if (is_libsvm(model) != is_libsvm(data)) {
    return fmt::format("the model reads {}, this data is {}", what(model), what(data));
  }
  if (model.width != data.width) {
    return fmt::format("the model is {} keys wide, this data {}", model.width, data.width);
  }
  if (model.index_base != data.index_base) {
    return fmt::format("the model's LIBSVM indices start at {}, this data's at {}",
                       model.index_base, data.index_base);
  }
  if (model.hash_bits != data.hash_bits || model.hashed != data.hashed ||
      model.crosses != data.crosses) {
    return fmt::format("the model hashes [{}] into 2^{} keys (crosses: {}), this data [{}] into "
                       "2^{} (crosses: {})", fmt::join(model.hashed, ", "), model.hash_bits,
                       model.crosses.size(), fmt::join(data.hashed, ", "), data.hash_bits,
                       data.crosses.size());
  }
  if (model.numeric != data.numeric) {
    return fmt::format("the model's numeric columns are [{}], this data's [{}]",
                       fmt::join(model.numeric, ", "), fmt::join(data.numeric, ", "));
  }
  return std::nullopt;
}

}  // namespace dt::output

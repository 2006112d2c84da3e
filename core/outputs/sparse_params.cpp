#include "core/outputs/sparse_params.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::output {

namespace {

using nlohmann::json;

[[noreturn]] void bad_block(const std::filesystem::path& origin, const models::ParamBlock& block,
                            const std::string& what) {
  fail<DataError>("{}: parameter '{}': {}; is this a model.json written by disttrain run?",
                  origin.string(), block.name, what);
}

const json& array_field(const json& j, const char* key, const std::filesystem::path& origin,
                        const models::ParamBlock& block) {
  if (!j.is_object() || !j.contains(key)) bad_block(origin, block, fmt::format("missing field '{}'", key));
  const json& v = j.at(key);
  if (!v.is_array()) bad_block(origin, block, fmt::format("field '{}' is not a list", key));
  return v;
}

}  // namespace

nlohmann::ordered_json sparse_block_json(const models::ParamBlock& block,
                                         std::span<const double> params) {
  std::vector<std::uint64_t> index;
  std::vector<double> data;
  const auto values = params.subspan(block.offset, block.size);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0.0) continue;
    index.push_back(i);
    data.push_back(values[i]);
  }
  return {{"name", block.name},
          {"shape", block.shape},
          {"encoding", "sparse"},
          {"index", std::move(index)},
          {"data", std::move(data)}};
}

bool is_sparse_block(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  const auto it = j.find("encoding");
  return it != j.end() && *it == "sparse";
}

SparseEntries read_sparse_entries(const nlohmann::json& j, const models::ParamBlock& block,
                                  const std::filesystem::path& origin) {
  const json& index = array_field(j, "index", origin, block);
  const json& data = array_field(j, "data", origin, block);
  if (index.size() != data.size()) {
    bad_block(origin, block,
              fmt::format("'index' has {} entries but 'data' {}", index.size(), data.size()));
  }
  SparseEntries out;
  out.index.reserve(index.size());
  out.data.reserve(index.size());
  for (std::size_t n = 0; n < index.size(); ++n) {
    const json& i = index[n];
    // Read as a JSON value first: a negative, fractional or huge index is refused, never cast.
    // (Parsed text holds 4 as unsigned; a json built in code holds it as a signed integer.)
    const bool whole = i.is_number_unsigned() ||
                       (i.is_number_integer() && i.get<std::int64_t>() >= 0);
    if (!whole || i.get<std::uint64_t>() >= block.size) {
      bad_block(origin, block,
                fmt::format("index entry {} is {}, not a position below {}", n, i.dump(),
                            block.size));
    }
    const auto at = i.get<std::uint64_t>();
    if (n > 0 && at <= out.index.back()) {
      bad_block(origin, block,
                fmt::format("index entry {} is {}, not above the one before ({}): indices ascend",
                            n, at, out.index.back()));
    }
    const json& v = data[n];
    if (!v.is_number() || !std::isfinite(v.get<double>())) {
      bad_block(origin, block,
                fmt::format("value {} (at index {}) is {}, not a finite number", n, at, v.dump()));
    }
    out.index.push_back(at);
    out.data.push_back(v.get<double>());
  }
  return out;
}

void read_sparse_block(const nlohmann::json& j, const models::ParamBlock& block,
                       std::span<double> out, const std::filesystem::path& origin) {
  if (out.size() != block.size) {
    fail<TrainingError>("parameter '{}' is read into {} values but has {}", block.name,
                        out.size(), block.size);
  }
  const auto entries = read_sparse_entries(j, block, origin);
  std::fill(out.begin(), out.end(), 0.0);
  for (std::size_t n = 0; n < entries.index.size(); ++n) out[entries.index[n]] = entries.data[n];
}

}  // namespace dt::output

// compare_models (compare.hpp): two model.json files, tensor by tensor. A sparse block (its
// nonzeros only, sparse_params.hpp) is walked as its listed entries, never expanded to its
// width: a sparse model's weights block can hold 2^24 x K values.

#include "core/outputs/compare.hpp"

#include "core/outputs/sparse_params.hpp"

#include "base/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace dt::output {

bool equal_within(double a, double b, double tolerance) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;  // also infinities of one sign, and +0 against -0
  return std::abs(a - b) <= tolerance * std::max({1.0, std::abs(a), std::abs(b)});
}

namespace {

// One tensor of a model file: dense (every value) or sparse (ascending positions and values).
struct ModelTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::uint64_t size = 1;
  bool sparse = false;
  std::vector<std::uint64_t> index;  // sparse only
  std::vector<double> data;
};

struct ModelFile {
  nlohmann::json j;
  std::vector<ModelTensor> tensors;
};

[[noreturn]] void model_file_error(const std::filesystem::path& origin, std::string_view what) {
  fail<DataError>("{}: {}; this is not a model.json that disttrain wrote (damaged or edited): "
                  "run the training again to rewrite it",
                  origin.string(), what);
}

std::vector<double> model_numbers(const nlohmann::json& j, const std::filesystem::path& origin,
                                  const std::string& field) {
  if (!j.is_array()) model_file_error(origin, fmt::format("{} is not a list of numbers", field));
  std::vector<double> out;
  out.reserve(j.size());
  for (const auto& v : j) {
    if (!v.is_number()) model_file_error(origin, fmt::format("{} holds {}, not a number", field, v.dump()));
    out.push_back(v.get<double>());
  }
  return out;
}

ModelTensor model_tensor(const nlohmann::json& block, const std::filesystem::path& origin,
                         std::size_t position) {
  const std::string where = fmt::format("parameters[{}]", position);
  if (!block.is_object() || !block.contains("name") || !block["name"].is_string() ||
      !block.contains("shape") || !block["shape"].is_array()) {
    model_file_error(origin, fmt::format("{} needs a \"name\" and a \"shape\"", where));
  }
  ModelTensor t;
  t.name = block["name"].get<std::string>();
  for (const auto& d : block["shape"]) {
    if (!d.is_number_unsigned()) model_file_error(origin, fmt::format("{}.shape holds {}", where, d.dump()));
    t.shape.push_back(d.get<std::int64_t>());
    t.size *= d.get<std::uint64_t>();
  }
  if (is_sparse_block(block)) {
    models::ParamBlock pb{t.name, t.shape, 0, t.size, false};
    auto entries = read_sparse_entries(block, pb, origin);
    t.sparse = true;
    t.index = std::move(entries.index);
    t.data = std::move(entries.data);
    return t;
  }
  if (!block.contains("data")) model_file_error(origin, fmt::format("{} has no \"data\"", where));
  t.data = model_numbers(block["data"], origin, where + ".data");
  if (t.data.size() != t.size) {
    model_file_error(origin, fmt::format("{} ({}) holds {} values where its shape [{}] has {}", where,
                                         t.name, t.data.size(), fmt::join(t.shape, ", "), t.size));
  }
  return t;
}

ModelFile read_model_text(std::string_view text, const std::filesystem::path& origin) {
  ModelFile m;
  try {
    m.j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    model_file_error(origin, fmt::format("not JSON ({})", e.what()));
  }
  if (!m.j.is_object() || m.j.value("format", "") != "disttrain-model") {
    model_file_error(origin, "no \"format\": \"disttrain-model\"");
  }
  if (!m.j.contains("model") || !m.j["model"].is_object() || !m.j.contains("parameters") ||
      !m.j["parameters"].is_array()) {
    model_file_error(origin, "it needs a \"model\" object and a \"parameters\" list");
  }
  for (std::size_t i = 0; i < m.j["parameters"].size(); ++i) {
    m.tensors.push_back(model_tensor(m.j["parameters"][i], origin, i));
  }
  // The values predict applies before the model's: normalization and missing-value fills.
  const auto extra = [&](const char* object, const char* field) {
    if (!m.j.contains(object) || !m.j[object].is_object() || !m.j[object].contains(field)) return;
    ModelTensor t;
    t.name = fmt::format("{}.{}", object, field);
    t.data = model_numbers(m.j[object][field], origin, t.name);
    t.size = t.data.size();
    t.shape = {static_cast<std::int64_t>(t.size)};
    m.tensors.push_back(std::move(t));
  };
  extra("normalization", "shift");
  extra("normalization", "scale");
  extra("missing", "fill");
  return m;
}

std::vector<std::uint64_t> unravel(std::uint64_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::uint64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto n = static_cast<std::uint64_t>(std::max<std::int64_t>(shape[d], 1));
    index[d] = flat % n;
    flat /= n;
  }
  return index;
}

// Why two models cannot be compared value by value, or "" when they can.
std::string model_mismatch(const ModelFile& a, const ModelFile& b) {
  for (const char* key : {"type", "task", "hidden", "activation", "inputs", "outputs"}) {
    const auto ja = a.j["model"].value(key, nlohmann::json());
    const auto jb = b.j["model"].value(key, nlohmann::json());
    if (ja != jb) return fmt::format("the models differ in {}: {} against {}", key, ja.dump(), jb.dump());
  }
  for (const char* key : {"version", "features", "label", "classes", "categorical", "sparse"}) {
    const auto ja = a.j.value(key, nlohmann::json());
    const auto jb = b.j.value(key, nlohmann::json());
    if (ja != jb) return fmt::format("the models differ in {} (model.json's \"{}\")", key, key);
  }
  if (a.tensors.size() != b.tensors.size()) {
    return fmt::format("the models have {} and {} parameter tensors", a.tensors.size(), b.tensors.size());
  }
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& ta = a.tensors[i];
    const auto& tb = b.tensors[i];
    if (ta.name != tb.name || ta.shape != tb.shape) {
      return fmt::format("tensor {}: {} [{}] against {} [{}]", i, ta.name, fmt::join(ta.shape, ", "),
                         tb.name, fmt::join(tb.shape, ", "));
    }
  }
  return "";
}

// Records one pair of values at flat position `at` of tensor `t`.
void note_pair(TensorDifference& t, std::uint64_t at, double a, double b, double tolerance) {
  if (!equal_within(a, b, tolerance)) ++t.differing;
  if (a == b || (std::isnan(a) && std::isnan(b))) return;
  const double diff = std::isnan(a - b) ? INFINITY : std::abs(a - b);
  const double scale = std::max(std::abs(a), std::abs(b));
  const double rel = scale > 0 ? diff / scale : 0.0;
  if (diff > t.max_abs.diff) t.max_abs = {t.name, unravel(at, t.shape), a, b, diff};
  if (rel > t.max_rel.diff) t.max_rel = {t.name, unravel(at, t.shape), a, b, rel};
}

// A tensor's values as (position, value) in ascending positions: a dense one lists them all.
void walk_pairs(const ModelTensor& a, const ModelTensor& b, TensorDifference& t, double tolerance) {
  if (!a.sparse && !b.sparse) {
    for (std::uint64_t i = 0; i < a.size; ++i) note_pair(t, i, a.data[i], b.data[i], tolerance);
    return;
  }
  const auto position = [](const ModelTensor& m, std::size_t k) { return m.sparse ? m.index[k] : k; };
  std::size_t i = 0, k = 0;
  while (i < a.data.size() || k < b.data.size()) {
    const auto pa = i < a.data.size() ? position(a, i) : UINT64_MAX;
    const auto pb = k < b.data.size() ? position(b, k) : UINT64_MAX;
    const auto at = std::min(pa, pb);
    note_pair(t, at, pa == at ? a.data[i] : 0.0, pb == at ? b.data[k] : 0.0, tolerance);
    if (pa == at) ++i;
    if (pb == at) ++k;
  }
}

}  // namespace

ModelComparison compare_models(std::string_view a_text, std::string_view b_text, double tolerance,
                               const std::filesystem::path& origin_a,
                               const std::filesystem::path& origin_b) {
  const auto a = read_model_text(a_text, origin_a);
  const auto b = read_model_text(b_text, origin_b);
  ModelComparison c;
  c.reason = model_mismatch(a, b);
  if (!c.reason.empty()) return c;
  c.comparable = true;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    TensorDifference t;
    t.name = a.tensors[i].name;
    t.shape = a.tensors[i].shape;
    t.sparse = a.tensors[i].sparse || b.tensors[i].sparse;
    walk_pairs(a.tensors[i], b.tensors[i], t, tolerance);
    c.values += a.tensors[i].size;
    c.differing += t.differing;
    if (t.max_abs.diff > 0 && (!c.max_abs || t.max_abs.diff > c.max_abs->diff)) c.max_abs = t.max_abs;
    if (t.max_rel.diff > 0 && (!c.max_rel || t.max_rel.diff > c.max_rel->diff)) c.max_rel = t.max_rel;
    c.tensors.push_back(std::move(t));
  }
  c.equal = c.differing == 0;
  if (!c.equal) {
    c.reason = fmt::format("{} of {} parameter values differ beyond the tolerance", c.differing, c.values);
  }
  return c;
}

}  // namespace dt::output

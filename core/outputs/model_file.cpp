// Reading model.json back: every field checked, errors naming the file and the field.

#include "core/outputs/run_output.hpp"
#include "core/outputs/sparse_model_file.hpp"
#include "core/outputs/sparse_params.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

#include <climits>
#include <cmath>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

namespace dt::output {
namespace {

using nlohmann::json;

// A dense model of 100 million parameters is about 2 GiB of JSON; the bound keeps an endless or
// runaway file from filling memory before a field is read.
constexpr std::uint64_t kMaxModelBytes = std::uint64_t{4} << 30;

struct Reader {
  const std::filesystem::path& path;

  [[noreturn]] void bad(const std::string& what) const {
    fail<DataError>("{}: {}; is this a model.json written by disttrain run?", path.string(), what);
  }
  const json& at(const json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) bad(fmt::format("missing field '{}'", key));
    return j.at(key);
  }
  template <class T>
  T get(const json& j, const char* key) const {
    try {
      return at(j, key).get<T>();
    } catch (const json::exception&) {
      bad(fmt::format("field '{}' has the wrong type", key));
    }
  }
  // A whole number that fits an int. nlohmann's get<int> is a static_cast: a version of 1e38 was
  // undefined behaviour (found by tests/fuzz/fuzz_model_json), and 4294967297 read as 1.
  int whole(const json& v, const char* key) const {
    const bool fits = v.is_number_unsigned()
                          ? std::in_range<int>(v.get<std::uint64_t>())
                          : v.is_number_integer() && std::in_range<int>(v.get<std::int64_t>());
    if (fits) {
      return static_cast<int>(v.get<std::int64_t>());
    }
    bad(fmt::format("field '{}' is {}, not a whole number from {} to {}", key,
                    v.is_number() ? v.dump() : "not a number", INT_MIN, INT_MAX));
  }
  std::vector<int> whole_numbers(const json& j, const char* key) const {
    const json& list = at(j, key);
    if (!list.is_array()) bad(fmt::format("field '{}' has the wrong type", key));
    std::vector<int> out;
    for (const json& v : list) out.push_back(whole(v, key));
    return out;
  }
};

template <class E>
E enum_from(const Reader& r, const std::string& text, std::initializer_list<E> values,
            const char* field) {
  for (E v : values) {
    if (text == config::name_of(v)) return v;
  }
  r.bad(fmt::format("unknown {} '{}'", field, text));
}

// The first name that appears twice, if any.
std::optional<std::string> first_repeat(const std::vector<std::string>& names) {
  std::unordered_set<std::string_view> seen;
  for (const auto& n : names) {
    if (!seen.insert(n).second) return n;
  }
  return std::nullopt;
}

// data.categorical's encodings (run_output.cpp writes them; model.md documents them).
std::vector<data::Encoding> read_categorical(const Reader& r, const json& list,
                                             const std::vector<std::string>& features) {
  if (!list.is_array()) r.bad("field 'categorical' has the wrong type");
  std::vector<data::Encoding> out;
  for (const json& c : list) {
    data::Encoding e{r.get<std::string>(c, "column"), {}, 0};
    const auto encoding = r.get<std::string>(c, "encoding");
    if (encoding == "one_hot") {
      e.categories = r.get<std::vector<std::string>>(c, "categories");
    } else if (encoding == "hash") {
      const json& buckets = r.at(c, "buckets");
      if (!buckets.is_number_unsigned()) r.bad("field 'buckets' is not a whole number");
      e.buckets = buckets.get<std::uint64_t>();
      if (e.buckets == 0) r.bad("field 'buckets' is 0");
    } else {
      r.bad(fmt::format("unknown categorical encoding '{}' (one_hot or hash)", encoding));
    }
    out.push_back(std::move(e));
  }
  if (const auto problem = data::encoding_problem(out, features)) r.bad(*problem);
  return out;
}

}  // namespace

SavedModel read_model(const std::filesystem::path& path) {
  std::string text;
  try {
    text = files::read_all(path, kMaxModelBytes);
  } catch (const files::UnreadableFile& e) {
    fail<DataError>("cannot read model '{}': {}", path.string(), e.reason());
  }
  return parse_model(text, path);
}

SavedModel parse_model(std::string_view text, const std::filesystem::path& path) {
  const Reader r{path};
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) r.bad("not valid JSON");
  if (r.get<std::string>(j, "format") != "disttrain-model") r.bad("'format' is not disttrain-model");
  // Version 2: a sparse model (sparse_model_file.hpp), with "sparse" instead of "features".
  const int version = r.whole(r.at(j, "version"), "version");
  if (version != 1 && version != 2) {
    fail<DataError>("{}: model format version {} is not supported by this build (it reads 1 and "
                    "2)", path.string(), version);
  }
  const bool sparse = version == 2;
  SavedModel m;
  const json& model = r.at(j, "model");
  using config::ModelType;
  m.spec.config.type = enum_from(r, r.get<std::string>(model, "type"),
                                 {ModelType::kLinearRegression, ModelType::kLogisticRegression,
                                  ModelType::kSoftmaxRegression, ModelType::kMlp},
                                 "model type");
  using config::Task;
  m.spec.config.task = enum_from(r, r.get<std::string>(model, "task"),
                                 {Task::kRegression, Task::kBinary, Task::kMulticlass}, "task");
  if (m.spec.config.type == ModelType::kMlp) {
    m.spec.config.hidden = r.whole_numbers(model, "hidden");
    using config::Activation;
    m.spec.config.activation =
        enum_from(r, r.get<std::string>(model, "activation"),
                  {Activation::kRelu, Activation::kTanh, Activation::kSigmoid}, "activation");
    if (model.contains("dtype")) {
      using config::Dtype;
      m.spec.config.dtype = enum_from(r, r.get<std::string>(model, "dtype"),
                                      {Dtype::kFloat64, Dtype::kFloat32}, "dtype");
    }
  }
  m.spec.config.l2 = r.get<double>(model, "l2");
  m.label = r.get<std::string>(j, "label");
  if (sparse) {
    if (m.spec.config.type == ModelType::kMlp) r.bad("an mlp has no sparse form");
    if (j.contains("features")) r.bad("a sparse model (version 2) lists no features");
    read_sparse_input(r.at(j, "sparse"), path, m.label, m);
    m.spec.inputs = static_cast<int>(m.sparse->width);  // kMaxSparseWidth fits an int
  } else {
    m.features = r.get<std::vector<std::string>>(j, "features");
    m.spec.inputs = static_cast<int>(m.features.size());
  }
  if (j.contains("classes")) m.classes = r.get<std::vector<std::string>>(j, "classes");
  m.spec.classes = static_cast<int>(m.classes.size());

  // A sparse model is never normalized; its empty-cell policy is in "sparse".
  static const json kNone = {{"kind", "none"}, {"shift", json::array()}, {"scale", json::array()}};
  const json& norm = sparse ? kNone : r.at(j, "normalization");
  using config::Normalize;
  m.normalization.kind = enum_from(r, r.get<std::string>(norm, "kind"),
                                   {Normalize::kNone, Normalize::kStandard, Normalize::kMinmax},
                                   "normalization");
  m.normalization.shift = r.get<std::vector<double>>(norm, "shift");
  m.normalization.scale = r.get<std::vector<double>>(norm, "scale");
  if (m.normalization.shift.size() != m.features.size() ||
      m.normalization.scale.size() != m.features.size()) {
    r.bad("normalization has a different length than features");
  }
  for (std::size_t i = 0; i < m.features.size(); ++i) {
    // A zero scale divides by zero: predictions of inf or nan.
    if (!std::isfinite(m.normalization.shift[i]) || !std::isfinite(m.normalization.scale[i]) ||
        !(m.normalization.scale[i] > 0.0)) {
      r.bad(fmt::format("normalization of feature '{}' has shift {} and scale {}; the scale must be "
                        "a positive number",
                        m.features[i], m.normalization.shift[i], m.normalization.scale[i]));
    }
  }
  if (!sparse && j.contains("missing")) {
    const json& missing = r.at(j, "missing");
    using config::Missing;
    m.normalization.missing = enum_from(r, r.get<std::string>(missing, "policy"),
                                        {Missing::kMean, Missing::kZero}, "missing policy");
    m.normalization.fill = r.get<std::vector<double>>(missing, "fill");
    if (m.normalization.fill.size() != m.features.size()) {
      r.bad("missing.fill has a different length than features");
    }
    for (std::size_t i = 0; i < m.features.size(); ++i) {
      if (!std::isfinite(m.normalization.fill[i])) {
        r.bad(fmt::format("missing.fill of feature '{}' is {}; it must be a finite number",
                          m.features[i], m.normalization.fill[i]));
      }
    }
  }
  if (const auto twice = first_repeat(m.features)) {
    r.bad(fmt::format("feature '{}' is listed twice", *twice));
  }
  if (const auto twice = first_repeat(m.classes)) {
    r.bad(fmt::format("class '{}' is listed twice", *twice));
  }

  if (m.features.empty() && !sparse) r.bad("'features' is empty");
  if (j.contains("categorical")) m.categorical = read_categorical(r, r.at(j, "categorical"), m.features);
  const auto task = config::task_of(m.spec.config);
  if (task == Task::kBinary && m.classes.size() != 2) r.bad("a binary model needs 2 classes");
  if (task == Task::kMulticlass && m.classes.size() < 2) {
    r.bad("a multiclass model needs 2 or more classes");
  }
  // Far beyond any dense model this tool trains (a sparse model's width: kMaxSparseWidth).
  constexpr int kMaxWidth = 1 << 20;
  for (int h : m.spec.config.hidden) {
    if (h < 1 || h > kMaxWidth) r.bad(fmt::format("hidden layer size {} is out of range", h));
  }
  if (m.features.size() > static_cast<std::size_t>(kMaxWidth) ||
      m.classes.size() > static_cast<std::size_t>(kMaxWidth)) {
    r.bad("too many features or classes");
  }
  std::unique_ptr<models::Model> built;
  try {
    built = models::make_model(m.spec);
  } catch (const Error& e) {
    r.bad(e.what());
  }
  // Each value takes two characters of JSON at least ("0,"): sizes that declare more parameters
  // than the text can hold are refused before anything is allocated (hidden [1048576, 1048576]
  // in a 2 KB file asked for 8 TB; [30000, 30000] took 7 GB and 16 s to be refused).
  // A sparse model's weights are read as the nonzeros its file lists (the text bounds them,
  // whatever the width): only its biases are allocated here.
  const std::size_t skipped = sparse ? built->layout().front().size : 0;
  if (built->parameter_count() - skipped > text.size() / 2) {
    r.bad(fmt::format("its sizes make {} parameters, more than its {} bytes can hold",
                      built->parameter_count(), text.size()));
  }
  m.params.assign(built->parameter_count() - skipped, 0.0);
  const json& params = r.at(j, "parameters");
  if (!params.is_array() || params.size() != built->layout().size()) {
    r.bad(fmt::format("'parameters' should list {} blocks", built->layout().size()));
  }
  for (std::size_t b = 0; b < params.size(); ++b) {
    const auto& block = built->layout()[b];
    if (r.get<std::string>(params[b], "name") != block.name) {
      r.bad(fmt::format("parameter block {} should be '{}'", b, block.name));
    }
    // Compared as JSON values, so a negative, fractional or huge number is a mismatch like any
    // other (never converted, never multiplied).
    const json& shape = r.at(params[b], "shape");
    if (shape != json(block.shape)) {
      r.bad(fmt::format("parameter '{}' has shape {}; this model's needs {}", block.name,
                        shape.dump(), json(block.shape).dump()));
    }
    if (sparse && b == 0) {  // the weights
      read_sparse_weights(params[b], block, path, m);
      continue;
    }
    const auto at = m.params.begin() + static_cast<std::ptrdiff_t>(block.offset - skipped);
    if (is_sparse_block(params[b])) {
      read_sparse_block(params[b], block, {m.params.data() + (block.offset - skipped), block.size},
                        path);
      continue;
    }
    const auto data = r.get<std::vector<double>>(params[b], "data");
    if (data.size() != block.size) {
      r.bad(fmt::format("parameter '{}' has {} values, its shape needs {}", block.name,
                        data.size(), block.size));
    }
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (!std::isfinite(data[i])) {
        r.bad(fmt::format("parameter '{}' value {} is {}", block.name, i, data[i]));
      }
    }
    std::copy(data.begin(), data.end(), at);
  }
  return m;
}

}  // namespace dt::output

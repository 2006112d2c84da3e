// config: docs/config.md and the schema table cannot drift from the code.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/config/config.hpp"
#include "core/config/reader.hpp"
#include "core/config/schema.hpp"

using namespace dt::config;

namespace {

// Every key path in a to_yaml() document, with its node.
void collect(const YAML::Node& map, const std::string& prefix,
             std::vector<std::pair<std::string, YAML::Node>>& out) {
  for (const auto& entry : map) {
    const std::string path =
        prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar();
    if (entry.second.IsSequence() && entry.second.size() > 0 && entry.second[0].IsMap()) {
      for (const auto& item : entry.second) collect(item, path, out);  // faults: [{...}]
    } else if (path == "data.categorical") {
      out.emplace_back(path, entry.second);  // a map of column names, one key
    } else if (entry.second.IsMap() && !prefix.starts_with("expect")) {
      collect(entry.second, path, out);
    } else if (entry.second.IsMap()) {
      collect(entry.second, "expect.<metric>", out);
    } else {
      out.emplace_back(path, entry.second);
    }
  }
}

// to_yaml of configs that between them use every key: defaults, mlp + adam + blobs, adagrad,
// ftrl, the keys of each shard strategy and aggregation mode, and the NumPy keys.
std::vector<std::pair<std::string, YAML::Node>> emitted_keys() {
  std::vector<std::pair<std::string, YAML::Node>> out;
  for (const char* text :
       {"version: 1\ndata: {path: a.csv, label: y}\nexpect: {mse: {min: 0, max: 1}}\n",
        "version: 1\ndata: {path: a.csv, delimiter: tab, features: [a, 'b:c'], exclude: [d], "
        "categorical: {e: one_hot, f: {hash: 8}}, missing: mean}\n",
        "version: 1\nmodel: {type: mlp, init: m.json}\ndata: {synthetic: {kind: blobs}}\n"
        "training: {optimizer: {type: adam}}\n",
        "version: 1\ndata: {path: a.csv}\ntraining: {optimizer: {type: adagrad}}\n",
        "version: 1\ndata: {path: a.csv}\ntraining: {optimizer: {type: ftrl}}\n",
        "version: 1\ndata: {path: a.csv}\noutput: {timeline: true}\n",
        "version: 1\ndata: {path: a.csv}\naggregation: {topology: ring, compression: bf16}\n",
        "version: 1\ndata: {path: a.csv}\naggregation: {compression: {topk: {ratio: 0.1}}}\n",
        "version: 1\ndata: {path: a.csv}\noutput: {timeline: {steps: 50}}\n",
        "version: 1\ndata: {path: a.csv, validation: 0.1}\ntraining: {early_stopping: {}}\n",
        "version: 1\ndata: {path: a.csv}\ntraining: {optimizer: {type: adamw}, "
        "lr_schedule: {type: cosine, t_max: 9}, clip_norm: 1}\n",
        "version: 1\ndata: {path: a.csv}\ntraining: {optimizer: {type: rmsprop}, "
        "lr_schedule: {type: step, step_size: 5, warmup_steps: 2}}\n",
        "version: 1\ndata: {path: a.csv}\ntraining: {lr_schedule: {type: constant, "
        "warmup_steps: 2}}\n",
        "version: 1\nmodel: {type: softmax_regression}\ndata: {path: a.csv}\n"
        "shards: {strategy: by_label}\naggregation: {mode: async, async: {max_staleness: 2}}\n"
        "faults: [{server: 0, at_step: 3, action: hang}]\n",
        "version: 1\nshards: {strategy: files, files: [a.csv]}\n"
        "aggregation: {mode: parameters, parameters: {sync_every: {steps: 5}, "
        "merge: trimmed_mean}}\n",
        "version: 1\nmodel: {type: softmax_regression}\ndata: {path: a.csv}\n"
        "shards: {strategy: dirichlet}\naggregation: {mode: parameters}\n",
        "version: 1\ndata: {path: a.npz, format: npz, labels: y.npy}\n",
        "version: 1\ndata: {path: a.svm, format: libsvm}\n",
        "version: 1\ndata: {path: a.csv, sparse: true, hash: {bits: 8, columns: [a, b], "
        "crosses: [[a, b]]}}\n",
        "version: 1\ndata: {path: a.svm, index_base: 1, feature_count: 10, max_dense_gib: 2}\n",
        "version: 1\ndata: {path: a.csv}\nfaults: [{rank: 0, at_step: 3, action: kill}, {rank: 0, probability: 0.5, "
        "action: drop}]\n",
        "version: 1\ndata: {path: a.csv}\nshards: {count: 2}\nfault_tolerance: {elastic: {}}\n",
        "version: 1\ndata: {path: a.csv}\ntransport: {type: tcp, advertise: node7, security: curve, keys: {secret: a.key, "
        "authorized: b.pub, server: c.pub}}\n"}) {
    collect(YAML::Load(to_yaml(parse(text, "t.yaml", "/tmp"))), "", out);
  }
  return out;
}

bool same_value(const YAML::Node& a, const YAML::Node& b) {
  if (a.IsScalar() && b.IsScalar()) {
    const auto x = detail::parse_number(a.Scalar());
    const auto y = detail::parse_number(b.Scalar());
    if (x && y) return *x == *y;  // "1e-8" and "1e-08"
  }
  return YAML::Dump(a) == YAML::Dump(b);
}

}  // namespace

TEST_CASE("config docs: docs/config.md is reference_markdown()") {
  const auto path = std::filesystem::path(__FILE__).parent_path() / "../../docs/config.md";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path.string());
  std::stringstream text;
  text << in.rdbuf();
  const bool up_to_date = text.str() == reference_markdown();
  CHECK_MESSAGE(up_to_date,
                "docs/config.md is out of date: run `build/release/disttrain reference > "
                "docs/config.md`");
}

TEST_CASE("config docs: every key is in a documented section and renders as one table row") {
  const std::string markdown = reference_markdown();
  for (const schema::Key& key : schema::keys()) {
    CAPTURE(key.path);
    const std::string section =
        key.path.find('.') == std::string::npos ? "" : key.path.substr(0, key.path.find('.'));
    const bool documented =
        std::any_of(schema::sections().begin(), schema::sections().end(),
                    [&](const schema::SectionDoc& s) { return s.name == section; });
    CHECK(documented);
    for (const std::string* cell :
         {&key.type, &key.default_yaml, &key.default_note, &key.meaning}) {
      CHECK(cell->find('|') == std::string::npos);  // would split the table cell
      CHECK(cell->find('\n') == std::string::npos);
    }
    CHECK(key.default_yaml.empty() != key.default_note.empty());
    CHECK(markdown.find("| `" + key.path + "` |") != std::string::npos);
  }
}

TEST_CASE("config docs: the schema table and to_yaml name the same keys") {
  const auto emitted = emitted_keys();
  for (const auto& [path, node] : emitted) {
    CAPTURE(path);
    CHECK(std::any_of(schema::keys().begin(), schema::keys().end(),
                      [&](const schema::Key& k) { return k.path == path; }));
  }
  for (const schema::Key& key : schema::keys()) {
    CAPTURE(key.path);
    const bool written = std::any_of(emitted.begin(), emitted.end(),
                                     [&](const auto& e) { return e.first == key.path; });
    CHECK(written);
  }
}

TEST_CASE("config docs: the documented defaults are the parser's defaults") {
  const auto emitted = emitted_keys();
  for (const schema::Key& key : schema::keys()) {
    if (key.default_yaml.empty()) continue;  // "required", "number of cores", resolved paths
    CAPTURE(key.path);
    const YAML::Node documented = YAML::Load(key.default_yaml);
    // The first config writes the defaults; the second only the keys of mlp, adam and blobs.
    const bool matches = std::any_of(emitted.begin(), emitted.end(), [&](const auto& e) {
      return e.first == key.path && same_value(e.second, documented);
    });
    CHECK(matches);
  }
}

// Non-IID shard plans: by_label, dirichlet, the label pass they read, and the files strategy.

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "core/data/non_iid.hpp"
#include "base/error.hpp"
#include "base/random.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace {

using dt::data::LabelColumn;
using dt::data::LabelKind;
using dt::data::plan_by_label;
using dt::data::plan_dirichlet;
using dt::test::data_error;
using Rows = std::vector<std::uint64_t>;
using Plan = std::vector<Rows>;

// `rows` rows over `classes` classes, drawn from a seed (uneven class sizes, as real data has).
LabelColumn random_labels(std::uint64_t rows, std::uint32_t classes, std::uint64_t seed) {
  LabelColumn labels;
  for (std::uint32_t c = 0; c < classes; ++c) labels.classes.push_back(std::to_string(c));
  for (std::uint64_t i = 0; i < rows; ++i) {
    labels.ids.push_back(static_cast<std::uint32_t>(
        dt::random::hash(seed, dt::test::kTestStream, i) % classes));
  }
  return labels;
}

Rows all_rows(std::uint64_t n) {
  Rows rows(n);
  std::iota(rows.begin(), rows.end(), std::uint64_t{0});
  return rows;
}

// Every shard sorted, no row twice, the union exactly `training`.
void check_cover(const Plan& plan, const Rows& training) {
  Rows all;
  for (const auto& shard : plan) {
    CHECK(std::is_sorted(shard.begin(), shard.end()));
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(all == training);
}

// counts[w][c]: rows of class c in shard w.
std::vector<std::vector<std::uint64_t>> histogram(const Plan& plan, const LabelColumn& labels) {
  std::vector<std::vector<std::uint64_t>> counts(plan.size(),
                                                 std::vector<std::uint64_t>(labels.classes.size()));
  for (std::size_t w = 0; w < plan.size(); ++w) {
    for (const auto row : plan[w]) ++counts[w][labels.ids[row]];
  }
  return counts;
}

std::set<std::uint32_t> classes_of(const Rows& shard, const LabelColumn& labels) {
  std::set<std::uint32_t> out;
  for (const auto row : shard) out.insert(labels.ids[row]);
  return out;
}

// Mean over classes of the largest share of the class that one worker holds: 1/W for an even
// split of every class, 1 when each class sits on one worker.
double mean_top_share(const Plan& plan, const LabelColumn& labels) {
  const auto counts = histogram(plan, labels);
  double sum = 0.0;
  for (std::size_t c = 0; c < labels.classes.size(); ++c) {
    std::uint64_t total = 0;
    std::uint64_t top = 0;
    for (const auto& w : counts) {
      total += w[c];
      top = std::max(top, w[c]);
    }
    sum += static_cast<double>(top) / static_cast<double>(total);
  }
  return sum / static_cast<double>(labels.classes.size());
}

}  // namespace

TEST_CASE("by_label: each worker holds exactly labels_per_worker classes") {
  const auto labels = random_labels(2000, 4, 1);
  const Rows held = dt::data::validation_rows(2000, 0.1, 5);
  const Rows training = dt::data::training_rows(2000, held, 4);

  const auto plan = plan_by_label(training, labels, 4, 2, 7);  // 8 slots, each class twice
  REQUIRE(plan.size() == 4);
  check_cover(plan, training);
  for (const auto& shard : plan) CHECK(classes_of(shard, labels).size() == 2);

  // 6 workers x 2 = 12 slots over 4 classes: every class split three ways, evenly.
  const auto six = plan_by_label(training, labels, 6, 2, 7);
  check_cover(six, training);
  for (const auto& shard : six) CHECK(classes_of(shard, labels).size() == 2);
  const auto counts = histogram(six, labels);
  for (std::size_t c = 0; c < 4; ++c) {
    std::vector<std::uint64_t> pieces;
    for (const auto& w : counts) {
      if (w[c] > 0) pieces.push_back(w[c]);
    }
    CHECK(pieces.size() == 3);
    CHECK(*std::max_element(pieces.begin(), pieces.end()) -
              *std::min_element(pieces.begin(), pieces.end()) <=
          1);
  }

  // One label each with as many workers as classes: the classes are dealt out, one per worker.
  const auto one = plan_by_label(training, labels, 4, 1, 3);
  std::set<std::uint32_t> seen;
  for (const auto& shard : one) {
    const auto cs = classes_of(shard, labels);
    REQUIRE(cs.size() == 1);
    seen.insert(*cs.begin());
  }
  CHECK(seen.size() == 4);
}

TEST_CASE("by_label: seeded, and the seed matters") {
  const auto labels = random_labels(1000, 5, 2);
  const Rows training = all_rows(1000);
  const auto a = plan_by_label(training, labels, 5, 2, 11);
  CHECK(a == plan_by_label(training, labels, 5, 2, 11));
  CHECK(a != plan_by_label(training, labels, 5, 2, 12));
  // Different seeds deal different classes to a worker or different rows of a class.
  std::set<std::set<std::uint32_t>> assignments;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    assignments.insert(classes_of(plan_by_label(training, labels, 5, 2, seed)[0], labels));
  }
  CHECK(assignments.size() > 1);
}

TEST_CASE("by_label: impossible class counts are plan-time errors") {
  const auto labels = random_labels(300, 3, 1);
  const Rows training = all_rows(300);
  CHECK(data_error([&] { (void)plan_by_label(training, labels, 2, 4, 1); }) ==
        "shards.labels_per_worker is 4 but the data has only 3 classes ('0', '1', '2'); use at "
        "most 3");
  CHECK(data_error([&] { (void)plan_by_label(training, labels, 2, 1, 1); }) ==
        "shards: 2 workers x 1 labels_per_worker hold only 2 of the 3 classes, so the rows of the "
        "other classes would belong to no worker; raise shards.labels_per_worker to 2 or "
        "shards.count to 3");
  CHECK(plan_by_label(training, labels, 3, 1, 1).size() == 3);
}

TEST_CASE("largest_remainder: counts sum exactly, ties to the lower index") {
  using dt::data::largest_remainder;
  const std::vector<double> thirds{1.0 / 3, 1.0 / 3, 1.0 / 3};
  CHECK(largest_remainder(10, thirds) == Rows{4, 3, 3});
  CHECK(largest_remainder(2, thirds) == Rows{1, 1, 0});
  const std::vector<double> p{0.5, 0.25, 0.25};
  CHECK(largest_remainder(7, p) == Rows{3, 2, 2});
  CHECK(largest_remainder(0, p) == Rows{0, 0, 0});
  const std::vector<double> skew{0.001, 0.998, 0.001};
  CHECK(largest_remainder(5, skew) == Rows{0, 5, 0});
}

TEST_CASE("dirichlet_draw: proportions with the moments of Dir(alpha)") {
  // E[p_i] = 1/k and Var[p_i] = (k - 1) / (k^2 (k alpha + 1)); a wrong gamma sampler (shape or
  // boost) misses the variance by far more than the tolerance.
  constexpr std::size_t k = 4;
  constexpr int draws = 20000;
  for (const double alpha : {0.3, 1.0, 5.0}) {
    dt::random::Generator gen(3, dt::test::kTestStream, 0);
    double sum = 0.0;
    double sum2 = 0.0;
    for (int i = 0; i < draws; ++i) {
      const auto p = dt::data::dirichlet_draw(k, alpha, gen);
      REQUIRE(p.size() == k);
      CHECK(std::abs(std::accumulate(p.begin(), p.end(), 0.0) - 1.0) < 1e-12);
      sum += p[0];
      sum2 += p[0] * p[0];
    }
    const double mean = sum / draws;
    const double var = sum2 / draws - mean * mean;
    const double want = (k - 1.0) / (k * k * (k * alpha + 1.0));
    INFO("alpha " << alpha << " mean " << mean << " variance " << var << " want " << want);
    CHECK(std::abs(mean - 0.25) < 0.01);
    CHECK(std::abs(var / want - 1.0) < 0.06);
  }
  // Tiny alphas would underflow a direct U^(1/alpha): the log-space draw stays finite.
  dt::random::Generator gen(1, dt::test::kTestStream, 1);
  const auto p = dt::data::dirichlet_draw(5, 0.001, gen);
  for (const double v : p) CHECK(std::isfinite(v));
  CHECK(*std::max_element(p.begin(), p.end()) > 0.99);
  CHECK(data_error([&] { (void)dt::data::dirichlet_draw(3, 0.0, gen); }) ==
        "shards.alpha must be a positive number, not 0");
}

TEST_CASE("dirichlet: exact cover, seeded, skew follows alpha") {
  const auto labels = random_labels(5000, 10, 4);
  const Rows held = dt::data::validation_rows(5000, 0.2, 1);
  const Rows training = dt::data::training_rows(5000, held, 5);

  const auto skewed = plan_dirichlet(training, labels, 5, 0.05, 9);
  check_cover(skewed, training);
  CHECK(skewed == plan_dirichlet(training, labels, 5, 0.05, 9));
  CHECK(skewed != plan_dirichlet(training, labels, 5, 0.05, 10));
  // Each class's rows sum exactly to the class size (no row lost to rounding).
  const auto counts = histogram(skewed, labels);
  for (std::size_t c = 0; c < 10; ++c) {
    std::uint64_t total = 0;
    for (const auto& w : counts) total += w[c];
    std::uint64_t want = 0;
    for (const auto row : training) want += labels.ids[row] == c ? 1 : 0;
    CHECK(total == want);
  }

  // Small alpha: most of each class on one worker (an even split would give 0.2).
  CHECK(mean_top_share(skewed, labels) > 0.8);
  // Large alpha: every class split nearly evenly (a skewed split is far from 0.2 somewhere).
  const auto even = plan_dirichlet(training, labels, 5, 1000.0, 9);
  check_cover(even, training);
  for (const auto& w : histogram(even, labels)) {
    for (std::size_t c = 0; c < 10; ++c) {
      std::uint64_t total = 0;
      for (const auto& v : histogram(even, labels)) total += v[c];
      CHECK(std::abs(static_cast<double>(w[c]) / static_cast<double>(total) - 0.2) < 0.05);
    }
  }
}

TEST_CASE("read_labels: class ids as the run resolves them") {
  const dt::test::CsvFile names("x,species\n1,cat\n2,dog\n3,\"bird\"\n4, cat\n");
  dt::config::Config config;
  config.data.path = names.path;
  const auto source = dt::data::describe_source(config);
  const auto labels = dt::data::read_labels(config, source, LabelKind::kCategorical);
  CHECK(labels.classes == std::vector<std::string>{"bird", "cat", "dog"});
  CHECK(labels.ids == std::vector<std::uint32_t>{1, 2, 0, 1});

  const dt::test::CsvFile ints("x,y\n1,0\n2,3\n3,02\n");
  config.data.path = ints.path;
  const auto int_labels =
      dt::data::read_labels(config, dt::data::describe_source(config), LabelKind::kCategorical);
  CHECK(int_labels.classes == std::vector<std::string>{"0", "1", "2", "3"});
  CHECK(int_labels.ids == std::vector<std::uint32_t>{0, 3, 2});

  const dt::test::CsvFile binary("x,y\n1,1\n2,0\n3,1.0\n");
  config.data.path = binary.path;
  const auto bin = dt::data::read_labels(config, dt::data::describe_source(config), LabelKind::kBinary);
  CHECK(bin.classes == std::vector<std::string>{"0", "1"});
  CHECK(bin.ids == std::vector<std::uint32_t>{1, 0, 1});

  // Only the label column is read: a bad feature cell is left to the workers, a bad label is
  // the error load_shard gives.
  const dt::test::CsvFile bad("x,y\nabc,1\n2,7\n");
  config.data.path = bad.path;
  CHECK(data_error([&] {
          (void)dt::data::read_labels(config, dt::data::describe_source(config), LabelKind::kBinary);
        }) == bad.at(":3:3: label 'y': 7 is not 0 or 1; logistic_regression and binary mlp need "
                     "0/1 labels (use softmax_regression for more classes)"));
  CHECK(data_error([&] {
          (void)dt::data::read_labels(config, dt::data::describe_source(config), LabelKind::kNumeric);
        }).starts_with("the label column of a regression model has no classes"));
}

TEST_CASE("read_labels: synthetic labels equal the generated ones, in chunks") {
  dt::config::Config config;
  config.seed = 5;
  dt::config::SyntheticConfig spec;
  spec.kind = dt::config::SyntheticKind::kBlobs;
  spec.rows = 70000;  // more than one chunk
  spec.features = 2;
  spec.classes = 4;
  config.data.synthetic = spec;
  const auto source = dt::data::describe_source(config);
  const auto labels = dt::data::read_labels(config, source, LabelKind::kCategorical);
  CHECK(labels.classes == std::vector<std::string>{"0", "1", "2", "3"});
  REQUIRE(labels.ids.size() == 70000);
  dt::data::RowMatrix x(70000, 2);
  Eigen::VectorXd y(70000);
  dt::data::synthesize(spec, 5, 0, 70000, x, y);
  bool same = true;
  for (Eigen::Index i = 0; i < y.size(); ++i) same = same && labels.ids[static_cast<std::size_t>(i)] == y(i);
  CHECK(same);
}

TEST_CASE("describe_files: every file indexed, headers checked against the first") {
  dt::files::TempDir dir("dt-test-files");
  const auto write = [&](const std::string& name, const std::string& text) {
    const auto path = dir.path() / name;
    dt::files::write_atomic(path, text);
    return path;
  };
  const auto a = write("a.csv", "x0,x1,y\n1,2,0\n3,4,1\n");
  const auto b = write("b.csv", "x0,x1,y\n5,6,1\n");
  dt::config::Config config;
  config.shards.strategy = dt::config::ShardStrategy::kFiles;
  config.shards.count = 2;
  config.shards.files = {a, b};
  const auto parts = dt::data::describe_files(config);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].file == a);
  CHECK(parts[1].file == b);
  CHECK(parts[0].rows == 2);
  CHECK(parts[1].rows == 1);
  CHECK(parts[1].label == "y");
  CHECK(parts[1].features == std::vector<std::string>{"x0", "x1"});
  CHECK(dt::data::first_rows(parts) == Rows{0, 2});
  // A worker has no index: it loads its rows through the file path and the segment offsets.
  auto worker_source = parts[1];
  const auto segments = dt::data::to_segments({0}, worker_source.csv);
  worker_source.csv.reset();
  const auto shard = dt::data::load_shard(config, worker_source, segments, LabelKind::kBinary);
  CHECK(shard.x(0, 1) == 6.0);
  CHECK(shard.y(0) == 1.0);

  const auto other = write("c.csv", "x0,z1,y\n5,6,1\n");
  config.shards.files = {a, other};
  CHECK(data_error([&] { (void)dt::data::describe_files(config); }) ==
        fmt::format("{}:1: the header does not match {} (shards.files[0]): it lacks 'x1' and it "
                    "has 'z1' too; every file of shards.files needs the same columns in the same "
                    "order",
                    other.string(), a.string()));
  const auto no_label = write("d.csv", "x0,x1\n5,6\n");
  config.shards.files = {a, no_label};
  CHECK(data_error([&] { (void)dt::data::describe_files(config); }) ==
        fmt::format("{}:1: the header does not match {} (shards.files[0]): it lacks 'y' (2 "
                    "columns, not 3); every file of shards.files needs the same columns in the "
                    "same order",
                    no_label.string(), a.string()));
  const auto swapped = write("e.csv", "x1,x0,y\n5,6,1\n");
  config.shards.files = {a, swapped};
  CHECK(data_error([&] { (void)dt::data::describe_files(config); })
            .find("column 1 is 'x1' where the first file has 'x0' (same columns, another order)") !=
        std::string::npos);
  config.shards.files = {a, b, b};
  CHECK(data_error([&] { (void)dt::data::describe_files(config); }) ==
        "shards.count is 2 but shards.files lists 3 files; with strategy files each worker trains "
        "on one file");
  // The label named in the config must be in the files (the first file's message).
  config.shards.files = {a, b};
  config.data.label = "target";
  CHECK(data_error([&] { (void)dt::data::describe_files(config); })
            .starts_with(a.string() + ": no column 'target'"));
}

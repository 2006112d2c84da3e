// The merge rules of `parameters` mode on hand-built parameter sets whose results are exactly
// representable, so every check is ==, not approximately equal.

#include "core/modes/merge.hpp"

#include "harness.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

namespace merge = dt::modes::merge;
using merge::Candidate;
using Vec = std::vector<double>;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Candidates over parameter vectors that outlive them; ranks 0, 1, ... unless given.
struct Set {
  std::vector<Vec> params;
  std::vector<Candidate> candidates;

  explicit Set(std::vector<Vec> p) : params(std::move(p)) {
    for (std::size_t k = 0; k < params.size(); ++k) {
      candidates.push_back({.rank = static_cast<int>(k), .params = params[k]});
    }
  }
  Set& rows(std::vector<std::uint64_t> r) {
    for (std::size_t k = 0; k < r.size(); ++k) candidates[k].rows = r[k];
    return *this;
  }
  Set& losses(Vec l) {
    for (std::size_t k = 0; k < l.size(); ++k) candidates[k].validation_loss = l[k];
    return *this;
  }
  Set& qualities(Vec q) {
    for (std::size_t k = 0; k < q.size(); ++k) candidates[k].quality = q[k];
    return *this;
  }
  [[nodiscard]] Vec out() const { return Vec(params.at(0).size(), -7.0); }
};

}  // namespace

TEST_CASE("merge: weighted_average weighs by rows trained (FedAvg), uneven row counts") {
  Set s({{1, 2, -4}, {5, 6, 0}});
  s.rows({1, 3});
  auto out = s.out();
  const auto o = merge::weighted_average(s.candidates, out);
  CHECK(out == Vec{4, 5, -1});  // (1*theta0 + 3*theta1) / 4
  CHECK(o.weights == Vec{0.25, 0.75});
  CHECK_FALSE(o.fallback);
  CHECK_FALSE(o.chosen);
}

TEST_CASE("merge: weighted_average gives a worker with 0 rows weight 0; all 0 rows is the average") {
  Set s({{1, 2, -4}, {100, 100, 100}, {5, 6, 0}});
  s.rows({1, 0, 3});
  auto out = s.out();
  auto o = merge::weighted_average(s.candidates, out);
  CHECK(out == Vec{4, 5, -1});
  CHECK(o.weights == Vec{0.25, 0, 0.75});
  CHECK_FALSE(o.fallback);

  // A weight-0 model is left out entirely, even a huge one (0 * 1e308 * ... never enters a sum).
  Set h({{2, 2}, {1e308, -1e308}});
  h.rows({5, 0});
  auto out_h = h.out();
  (void)merge::weighted_average(h.candidates, out_h);
  CHECK(out_h == Vec{2, 2});

  s.rows({0, 0, 0});
  o = merge::weighted_average(s.candidates, out);
  CHECK(out == Vec{106.0 / 3, 36, 32});  // 106/3 is the same division the rule does
  CHECK(out[1] == 36);
  CHECK(o.fallback);
  CHECK(o.weights == Vec{1.0 / 3, 1.0 / 3, 1.0 / 3});
}

TEST_CASE("merge: average is the plain mean, summed in worker order") {
  Set s({{0, 3}, {3, 6}, {6, 0}});
  auto out = s.out();
  const auto o = merge::average(s.candidates, out);
  CHECK(out == Vec{3, 3});
  CHECK(o.weights.size() == 3);
  // The order is fixed: ((1e16 + 1) - 1e16) / 3 is 0 in doubles (1e16 + 1 rounds to 1e16),
  // where another order would give 1/3.
  Set order({{1e16}, {1}, {-1e16}});
  auto out2 = order.out();
  (void)merge::average(order.candidates, out2);
  CHECK(out2 == Vec{0});
  // One model is itself.
  Set one({{1.5, -2.25}});
  auto out3 = one.out();
  (void)merge::average(one.candidates, out3);
  CHECK(out3 == Vec{1.5, -2.25});
}

TEST_CASE("merge: median, coordinate-wise, odd and even K") {
  Set odd({{3, -1, 7}, {1, 5, 7}, {2, 5, 7}});
  auto out = odd.out();
  auto o = merge::median(odd.candidates, out);
  CHECK(out == Vec{2, 5, 7});
  CHECK(o.weights.empty());
  CHECK_FALSE(o.fallback);

  // Even K: the mean of the two middle values.
  Set even({{1, 1, -3}, {4, 1, 0.5}, {2, 1, -1}, {8, 2, 100}});
  out = even.out();
  (void)merge::median(even.candidates, out);
  CHECK(out == Vec{3, 1, -0.25});

  Set two({{1e308}, {1e308}});  // 0.5a + 0.5b, not (a + b) / 2, which would overflow
  out = two.out();
  (void)merge::median(two.candidates, out);
  CHECK(out == Vec{1e308});
}

TEST_CASE("merge: trimmed_count is floor(trim * K) from each end, clamped to keep the median") {
  CHECK(merge::trimmed_count(10, 0.1) == 1);
  CHECK(merge::trimmed_count(10, 0.3) == 3);  // 0.3 * 10 is 2.9999999999999996 in binary
  CHECK(merge::trimmed_count(10, 0.29) == 2);
  CHECK(merge::trimmed_count(4, 0.25) == 1);
  CHECK(merge::trimmed_count(4, 0.2) == 0);
  CHECK(merge::trimmed_count(3, 0.49) == 1);
  CHECK(merge::trimmed_count(2, 0.49) == 0);
  CHECK(merge::trimmed_count(1, 0.4) == 0);
  CHECK(merge::trimmed_count(5, 0.0) == 0);
  CHECK(merge::trimmed_count(0, 0.2) == 0);
  // trim 0.5 would cut everything: clamped so one (odd K) or two (even K) values remain.
  CHECK(merge::trimmed_count(4, 0.5) == 1);
  CHECK(merge::trimmed_count(5, 0.5) == 2);  // floor(2.5): one value left, no clamp needed
  CHECK(merge::trimmed_count(2, 0.5) == 0);
}

TEST_CASE("merge: trimmed_mean cuts from each end of every coordinate") {
  Set s({{10, 0}, {1, 4}, {2, 4}, {3, 4}, {-96, 8}});
  auto out = s.out();
  auto o = merge::trimmed_mean(s.candidates, 0.2, out);  // cut 1 each end
  CHECK(out == Vec{2, 4});
  CHECK_FALSE(o.fallback);

  o = merge::trimmed_mean(s.candidates, 0.1, out);  // floor(0.5) = 0: the plain mean
  CHECK(out == Vec{-16, 4});
  CHECK_FALSE(o.fallback);

  o = merge::trimmed_mean(s.candidates, 0.5, out);  // floor(2.5) = 2 leaves the median
  CHECK(out == Vec{2, 4});
  CHECK_FALSE(o.fallback);

  Set even({{1, 0}, {2, 10}, {4, 20}, {100, 30}});
  out = even.out();
  o = merge::trimmed_mean(even.candidates, 0.25, out);  // cut 1 each end, mean of the middle two
  CHECK(out == Vec{3, 15});
  CHECK_FALSE(o.fallback);
  o = merge::trimmed_mean(even.candidates, 0.5, out);  // 2 each end would leave nothing
  CHECK(out == Vec{3, 15});                             // so it is the median
  CHECK(o.fallback);
}

TEST_CASE("merge: best takes the lowest validation loss; ties go to the lowest rank") {
  Set s({{1, 1}, {2, 2}, {3, 3}});
  s.losses({0.5, 0.25, 0.25});
  auto out = s.out();
  auto o = merge::best(s.candidates, out);
  CHECK(out == Vec{2, 2});
  CHECK(o.chosen == 1);
  CHECK(o.weights == Vec{0, 1, 0});

  // Ties are broken by rank, not by position (sampled rounds pass a subset of ranks).
  s.candidates[0].rank = 5;
  s.candidates[1].rank = 4;
  s.candidates[2].rank = 2;
  o = merge::best(s.candidates, out);
  CHECK(o.chosen == 2);
  CHECK(out == Vec{3, 3});

  // NaN loses to any number; all NaN: the lowest rank.
  Set n({{1, 1}, {2, 2}, {3, 3}});
  n.losses({kNan, 0.75, kNan});
  out = n.out();
  o = merge::best(n.candidates, out);
  CHECK(o.chosen == 1);
  n.losses({kNan, kNan, kNan});
  o = merge::best(n.candidates, out);
  CHECK(o.chosen == 0);
  CHECK(out == Vec{1, 1});
  n.losses({kInf, kNan, 1e300});
  o = merge::best(n.candidates, out);
  CHECK(o.chosen == 2);
}

TEST_CASE("merge: validation_weighted weighs by quality; all 0 is the average") {
  Set s({{4, 0}, {8, 4}});
  s.qualities({0.25, 0.75});
  auto out = s.out();
  auto o = merge::validation_weighted(s.candidates, out);
  CHECK(out == Vec{7, 3});
  CHECK(o.weights == Vec{0.25, 0.75});
  CHECK_FALSE(o.fallback);

  // Qualities need not sum to 1 (regression ones sum to K - 1).
  s.qualities({1, 3});
  o = merge::validation_weighted(s.candidates, out);
  CHECK(out == Vec{7, 3});

  // NaN and negative qualities count as 0.
  Set t({{4, 0}, {8, 4}, {1000, 1000}, {-1000, 0}});
  t.qualities({0.25, 0.75, kNan, -1});
  out = t.out();
  o = merge::validation_weighted(t.candidates, out);
  CHECK(out == Vec{7, 3});
  CHECK(o.weights == Vec{0.25, 0.75, 0, 0});

  s.qualities({0, 0});  // every model useless: no reason to prefer one
  out = s.out();
  o = merge::validation_weighted(s.candidates, out);
  CHECK(out == Vec{6, 2});
  CHECK(o.fallback);
}

TEST_CASE("merge: qualities: accuracy, and 1 - share of the total absolute error") {
  CHECK(merge::accuracy_quality(3, 4) == 0.75);
  CHECK(merge::accuracy_quality(0, 0) == 0);
  CHECK(merge::regression_qualities(Vec{1, 3}) == Vec{0.75, 0.25});
  CHECK(merge::regression_qualities(Vec{2, 2, 2, 2}) == Vec{0.75, 0.75, 0.75, 0.75});
  CHECK(merge::regression_qualities(Vec{0, 4}) == Vec{1, 0});
  CHECK(merge::regression_qualities(Vec{0, 0, 0}) == Vec{1, 1, 1});  // all perfect: equal
  CHECK(merge::regression_qualities(Vec{kInf, 1, 3}) == Vec{0, 0.75, 0.25});
  CHECK(merge::regression_qualities(Vec{kNan, kInf}) == Vec{0, 0});
  CHECK(merge::regression_qualities(Vec{5}) == Vec{0});  // one model: the weights fall back
  CHECK(merge::regression_qualities(Vec{}).empty());
}

TEST_CASE("merge: a non-finite parameter fails every rule, naming the worker") {
  Set s({{1, 2}, {3, kNan}});
  s.rows({1, 1}).losses({0, 1}).qualities({1, 1});
  auto out = s.out();
  const std::string expected =
      "worker 1's model has a non-finite parameter (index 1 is nan): it diverged in its local "
      "steps";
  using dt::test::message_of;
  using dt::TrainingError;
  CHECK(message_of<TrainingError>([&] { (void)merge::weighted_average(s.candidates, out); }) == expected);
  CHECK(message_of<TrainingError>([&] { (void)merge::average(s.candidates, out); }) == expected);
  CHECK(message_of<TrainingError>([&] { (void)merge::median(s.candidates, out); }) == expected);
  CHECK(message_of<TrainingError>([&] { (void)merge::trimmed_mean(s.candidates, 0.1, out); }) == expected);
  // Even when the rule would not use that model: a diverged worker is a failed run.
  CHECK(message_of<TrainingError>([&] { (void)merge::best(s.candidates, out); }) == expected);
  CHECK(message_of<TrainingError>([&] { (void)merge::validation_weighted(s.candidates, out); }) == expected);

  Set inf(std::vector<Vec>{{-kInf}});
  out = inf.out();
  CHECK(message_of<TrainingError>([&] { (void)merge::average(inf.candidates, out); }) ==
        "worker 0's model has a non-finite parameter (index 0 is -inf): it diverged in its local "
        "steps");
}

TEST_CASE("merge: size mismatches and an empty round are errors") {
  using dt::test::message_of;
  using dt::TrainingError;
  Set s({{1, 2}, {3}});
  Vec out(2);
  CHECK(message_of<TrainingError>([&] { (void)merge::average(s.candidates, out); }) ==
        "merge: worker 1 returned 1 parameters, the model has 2");
  std::vector<Candidate> none;
  CHECK(message_of<TrainingError>([&] { (void)merge::median(none, out); }) ==
        "merge: no worker model to merge");
}

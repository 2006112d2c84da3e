// EarlyStopper (core/coordinator/early_stop.hpp): when patience runs out, which check is best,
// min_delta, metrics where higher is better, and the checkpoint state's round trip. The
// progress lines' figures (core/coordinator/progress.hpp).

#include "core/coordinator/early_stop.hpp"
#include "core/coordinator/progress.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <vector>

namespace {

using dt::roles::EarlyStopper;
using dt::roles::Metrics;

Metrics loss(double v) {
  Metrics m;
  m.loss = v;
  return m;
}

dt::config::EarlyStoppingConfig settings(const char* metric, int patience, double min_delta) {
  dt::config::EarlyStoppingConfig c;
  c.metric = metric;
  c.patience = patience;
  c.min_delta = min_delta;
  return c;
}

}  // namespace

TEST_CASE("early stopping: stops after patience checks without improvement, keeps the best") {
  EarlyStopper es(settings("val_loss", 2, 0.0));
  REQUIRE(es.enabled());
  const std::vector<double> losses{1.0, 0.8, 0.9, 0.7, 0.75, 0.7, 0.6};
  std::vector<double> params(2);
  std::uint64_t step = 0;
  for (const double v : losses) {
    step += 10;
    params = {v, static_cast<double>(step)};
    es.check(step, loss(v), params);
    if (es.stopped()) break;
  }
  // 0.7 at step 40 is the best; 0.75 and 0.7 (not below 0.7) are the two checks without
  // improvement: stopped at step 60, before 0.6 was seen.
  CHECK(es.stopped());
  CHECK(step == 60);
  const auto s = es.summary();
  CHECK(s["stopped_at"] == 60);
  CHECK(s["best_step"] == 40);
  CHECK(s["best_metric"] == 0.7);
  std::vector<double> out(2);
  es.restore_best(out);
  CHECK(out == std::vector<double>{0.7, 40.0});
}

TEST_CASE("early stopping: min_delta, higher-is-better metrics, missing values") {
  EarlyStopper es(settings("val_loss", 2, 0.1));
  const std::vector<double> p{0};
  es.check(1, loss(1.0), p);
  es.check(2, loss(0.95), p);  // better, but not by more than 0.1
  CHECK_FALSE(es.stopped());
  es.check(3, loss(0.85), p);  // 0.15 below the best (1.0): an improvement
  CHECK_FALSE(es.stopped());
  es.check(4, std::nullopt, p);  // no validation: not an improvement
  es.check(5, loss(0.8), p);
  CHECK(es.stopped());
  CHECK(es.summary()["best_step"] == 3);

  EarlyStopper acc(settings("val_acc", 1, 0.0));
  Metrics m;
  m.accuracy = 0.5;
  acc.check(1, m, p);
  m.accuracy = 0.6;
  acc.check(2, m, p);
  CHECK_FALSE(acc.stopped());
  m.accuracy = 0.55;
  acc.check(3, m, p);
  CHECK(acc.stopped());
  CHECK(acc.summary()["best_metric"] == 0.6);

  EarlyStopper off(std::nullopt);
  off.check(1, loss(1.0), p);
  CHECK_FALSE(off.enabled());
  CHECK(off.summary().is_null());
}

TEST_CASE("early stopping: the checkpoint state restores the same decisions") {
  EarlyStopper a(settings("val_loss", 3, 0.0));
  EarlyStopper b(settings("val_loss", 3, 0.0));
  a.check(5, loss(0.5), {1.0, 2.0});
  a.check(10, loss(0.6), {3.0, 4.0});
  b.restore(a.state(), a.best_params(), 2, "ck");
  for (EarlyStopper* e : {&a, &b}) {
    e->check(15, loss(0.55), {5.0, 6.0});
    e->check(20, loss(0.52), {7.0, 8.0});
  }
  CHECK(a.stopped());
  CHECK(b.stopped());
  CHECK(a.summary() == b.summary());
  std::vector<double> out(2);
  b.restore_best(out);
  CHECK(out == std::vector<double>{1.0, 2.0});

  EarlyStopper c(settings("val_loss", 3, 0.0));
  auto bad = a.state();
  bad["wait"] = "three";
  CHECK_THROWS_WITH_AS(c.restore(bad, {}, 2, "ck"),
                       "ck: the checkpoint's early_stopping state is damaged (a counter is "
                       "missing or not a count)",
                       dt::DataError);
  CHECK_THROWS_AS(c.restore(a.state(), {1.0}, 2, "ck"), dt::DataError);
}

TEST_CASE("progress: a row's figures and the clock") {
  dt::roles::LogRow row;
  row.train_loss = 0.068712;
  CHECK(dt::roles::progress::row_figures(row) == " loss=0.06871");
  row.validation_loss = 0.0665;
  row.validation_metric = 0.97;
  row.validation_log_loss = 0.0665;
  row.validation_auc = 0.99123;
  CHECK(dt::roles::progress::row_figures(row) ==
        " loss=0.06871 val_loss=0.0665 val_acc=0.97 val_auc=0.9912");
  row.validation_log_loss.reset();
  row.validation_auc.reset();
  CHECK(dt::roles::progress::row_figures(row) == " loss=0.06871 val_loss=0.0665 val_mse=0.97");
  CHECK(dt::roles::progress::clock_text(0) == "0:00");
  CHECK(dt::roles::progress::clock_text(75.4) == "1:15");
  CHECK(dt::roles::progress::clock_text(3725) == "1:02:05");
}

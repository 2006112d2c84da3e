// FTRL's interleaved state ((z, n) of a key in one record, OptimizerState::interleaved): the
// checkpoint's and the wire's bytes are those of one array a slot, an older (separate) state
// resumes into it with the same bits, and KeyMarks reads the records a key.

#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/resume_read.hpp"
#include "core/models/optim.hpp"
#include "core/modes/optimizer_wire.hpp"
#include "core/servers/server_state.hpp"
#include "base/error.hpp"
#include "transports/wire.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using dt::config::OptimizerConfig;
using dt::config::OptimizerType;

OptimizerConfig ftrl() {
  OptimizerConfig c;
  c.type = OptimizerType::kFtrl;
  c.lr = 0.5;
  c.beta = 1.0;
  c.l1 = 0.0;
  c.l2 = 0.0;
  return c;
}

// Wide enough for a checkpoint's sparse arrays (65,536 entries and more): add_at's path.
constexpr std::size_t kWidth = 70000;
const std::vector<std::uint64_t> kKeys = {3, 64, 65, 1000, 69999};

bool same_bits(std::span<const double> a, std::span<const double> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("optim layout: ftrl's (z, n) records checkpoint as the paper's separate z and n") {
  auto opt = dt::models::make_optimizer(ftrl(), kWidth);
  std::vector<double> w(kWidth, 0.0);
  // g = 1 at every key from w = 0: z = 1 - 2 * 0 = 1, n = 1 (the paper's first step).
  opt->step_indices(kKeys, std::vector<double>(kKeys.size(), 1.0), 1.0, w);
  const auto& state = opt->state();
  CHECK(state.interleaved == 2);
  REQUIRE(state.slot_count() == 2);
  // The bytes a separate z and n would write, in closed form.
  std::vector<double> z(kWidth, 0.0), n(kWidth, 0.0);
  std::vector<std::uint32_t> at;
  for (const auto k : kKeys) {
    z[k] = 1.0;
    n[k] = 1.0;
    at.push_back(static_cast<std::uint32_t>(k));
  }
  CHECK(same_bits(dt::models::slot_values(state, 0), z));
  CHECK(same_bits(dt::models::slot_values(state, 1), n));
  dt::models::OptimizerState separate;
  separate.steps = 1;
  separate.slots = {z, n};
  for (const bool marked : {false, true}) {
    CAPTURE(marked);
    dt::checkpoint::Checkpoint a, b;
    a.manifest = b.manifest = {{"step", 1}};
    dt::roles::put_optimizer(a, "optimizer", state, marked ? &at : nullptr);
    dt::roles::put_optimizer(b, "optimizer", separate, marked ? &at : nullptr);
    CHECK(dt::checkpoint::encode(a) == dt::checkpoint::encode(b));
    CHECK(a.arrays.size() + a.sparse.size() == 2);
  }
  // The wire (parameters mode, ring): the same frames as one array a slot.
  dt::protocol::Envelope e, f;
  dt::modes::put_optimizer(e, state);
  dt::modes::put_optimizer(f, separate);
  CHECK(e.fields == f.fields);
  REQUIRE(e.arrays.size() == 2);
  CHECK(e.arrays[0] == dt::wire::to_bytes(std::span<const double>(z)));
  CHECK(e.arrays[1] == dt::wire::to_bytes(std::span<const double>(n)));
}

TEST_CASE("optim layout: a separate state resumes into ftrl's records with the same bits") {
  auto straight = dt::models::make_optimizer(ftrl(), kWidth);
  auto first = dt::models::make_optimizer(ftrl(), kWidth);
  std::vector<double> w_straight(kWidth, 0.0), w_resumed(kWidth, 0.0);
  const std::vector<double> g1 = {0.5, -1.25, 2.0, 0.75, -0.3};
  const std::vector<double> g2 = {1.5, 0.25, -0.6, 0.1, 3.0};
  straight->step_indices(kKeys, g1, 1.0, w_straight);
  first->step_indices(kKeys, g1, 1.0, w_resumed);
  // An older checkpoint's state: one vector a slot.
  const auto old = dt::models::separate_slots(first->state());
  CHECK(old.interleaved == 0);
  REQUIRE(old.slots.size() == 2);
  auto second = dt::models::make_optimizer(ftrl(), kWidth);
  second->set_state(old);
  CHECK(second->state().interleaved == 2);
  straight->step_indices(kKeys, g2, 1.0, w_straight);
  second->step_indices(kKeys, g2, 1.0, w_resumed);
  CHECK(same_bits(w_straight, w_resumed));
  CHECK(second->state().steps == 2);
  CHECK(same_bits(straight->state().slots[0], second->state().slots[0]));
  // A state of the wrong width, in either layout, is refused.
  auto wrong = old;
  wrong.slots[1].pop_back();
  CHECK_THROWS_AS(second->set_state(wrong), dt::TrainingError);
  wrong = first->state();
  wrong.slots[0].pop_back();
  CHECK_THROWS_AS(second->set_state(wrong), dt::TrainingError);
}

TEST_CASE("optim layout: KeyMarks marks a key whose record has any nonzero value") {
  // Three keys' (z, n) records: only n nonzero at key 0, nothing at 1, only z at 2.
  const std::vector<double> records = {0.0, 2.0, 0.0, 0.0, -1.0, 0.0};
  const std::vector<double> weights = {0.0, 0.0, 0.0};
  const std::vector<std::span<const double>> vectors{weights, records};
  dt::roles::KeyMarks marks;
  marks.reset_from(vectors, 3);
  std::vector<std::uint32_t> keys;
  marks.list(keys);
  CHECK(keys == std::vector<std::uint32_t>{0, 2});
}

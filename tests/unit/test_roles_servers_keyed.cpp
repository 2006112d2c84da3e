// Async parameter servers on sparse rows (the keyed exchange, param_server_keyed.cpp): a keyed
// push is applied at once at its offsets with the dense async arithmetic, and every answer (to
// a pull, a push, a replacement's pull, a dropped duplicate) carries the values of the offsets
// asked for, with a lost worker's share riding on it as on a dense slice.

#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/resume_read.hpp"
#include "core/protocol/key_frames.hpp"
#include "core/servers/server_state.hpp"
#include "server_fakes.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

using dt::roles::ParameterServer;
using dt::roles::ServerOptions;

namespace {

constexpr std::chrono::milliseconds kKeyedWait{5000};

ServerOptions keyed_async_options() {
  ServerOptions o;
  o.range = {0, 5};
  o.workers = 2;
  o.asynchronous = true;
  o.optimizer.lr = 0.5;
  o.l2 = {{1, 2, 0.1}};
  o.job_id = kJob;
  o.worker_steps = {2, 2};
  o.staleness_lr = true;
  return o;
}

dt::wire::Bytes offsets(std::vector<std::uint32_t> keys) { return dt::protocol::encode_keys(keys); }

void send_keyed(FakeWorker& w, Envelope e) {
  e.rank = w.rank;
  e.fields["keyed"] = true;
  w.connection->send(dt::protocol::encode(std::move(e), kJob), deadline_in(kKeyedWait));
}

void keyed_pull(FakeWorker& w, std::uint64_t steps, std::vector<std::uint32_t> keys) {
  Envelope e{.type = Type::kPull};
  e.fields = {{"steps", steps}};
  e.arrays.push_back(offsets(std::move(keys)));
  send_keyed(w, std::move(e));
}

// The gradient sum `grad` at `keys`, asking for the values of `next` (none: the last step).
void keyed_push(FakeWorker& w, std::uint64_t step, std::uint64_t version, std::uint64_t rows,
                std::vector<std::uint32_t> keys, std::vector<double> grad,
                std::optional<std::vector<std::uint32_t>> next) {
  Envelope e{.type = Type::kPush, .step = step};
  e.fields = {{"rows", rows}, {"loss_sum", 1.0}, {"version", version}};
  e.arrays.push_back(offsets(std::move(keys)));
  e.arrays.push_back(dt::wire::to_bytes(std::span<const double>(grad)));
  if (next) e.arrays.push_back(offsets(std::move(*next)));
  send_keyed(w, std::move(e));
}

// The next keyed answer: {version, values}.
std::pair<std::uint64_t, std::vector<double>> keyed_values(FakeWorker& w) {
  const auto e = w.next();
  REQUIRE(e.type == Type::kSlice);
  REQUIRE(e.fields.contains("keyed"));
  const auto d = dt::protocol::doubles(e, 0);
  return {dt::protocol::count(e, "version"), {d.begin(), d.end()}};
}

// Whether the mapping that holds `data`'s first whole 2 MiB page (the part of a buffer
// memory::advise_huge_pages advises) has MADV_HUGEPAGE ("hg" in /proc/self/smaps' VmFlags);
// nullopt when this system has no transparent huge pages to advise.
std::optional<bool> advised_huge(const double* data) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) return std::nullopt;
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto at = (reinterpret_cast<std::uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;  // a mapping's first line: "begin-end perms ..."
    } else if (inside && line.starts_with("VmFlags:")) {
      return line.find(" hg") != std::string::npos;
    }
  }
  return false;
}

// One worker's 4 steps on 5 keys with adagrad (a state slot to copy too), no staleness_lr.
ServerOptions one_worker_options() {
  auto o = keyed_async_options();
  o.workers = 1;
  o.worker_steps = {4};
  o.staleness_lr = false;
  o.optimizer.type = dt::config::OptimizerType::kAdagrad;
  return o;
}

// Drives those 4 steps, each at its own keys; applied(step) runs once update step + 1 is.
void four_keyed_steps(ParameterServer& server, FakeWorker& w,
                      const std::function<void(std::uint64_t)>& applied) {
  keyed_pull(w, 4, {0, 1});
  (void)keyed_values(w);
  const std::vector<std::vector<std::uint32_t>> keys{{0, 1}, {2}, {1, 4}, {3}};
  for (std::uint64_t step = 0; step < 4; ++step) {
    std::optional<std::vector<std::uint32_t>> next;
    if (step + 1 < 4) next = keys[step + 1];
    keyed_push(w, step, step, 1, keys[step], std::vector<double>(keys[step].size(), 0.5 + step),
               next);
    if (next) (void)keyed_values(w);
    REQUIRE(server.wait_version(step + 1, kKeyedWait));
    applied(step);
  }
}

// One worker's steps, step s at keys[s] with a gradient of 1.5 + s at each; applied(step) runs
// once update step + 1 is.
void steps_at(ParameterServer& server, FakeWorker& w,
              const std::vector<std::vector<std::uint32_t>>& keys,
              const std::function<void(std::uint64_t)>& applied) {
  keyed_pull(w, keys.size(), keys[0]);
  (void)keyed_values(w);
  for (std::uint64_t step = 0; step < keys.size(); ++step) {
    std::optional<std::vector<std::uint32_t>> next;
    if (step + 1 < keys.size()) next = keys[step + 1];
    keyed_push(w, step, step, 1, keys[step], std::vector<double>(keys[step].size(), 1.5 + step),
               next);
    if (next) (void)keyed_values(w);
    REQUIRE(server.wait_version(step + 1, kKeyedWait));
    applied(step);
  }
}

}  // namespace

TEST_CASE("servers: an async server's copy for a replacement is its state from the start, on "
          "huge pages as its own vectors are (leave_copy writes it at random keys)") {
  auto transport = inproc();
  auto o = keyed_async_options();
  constexpr std::size_t kKeys = std::size_t{1} << 20;  // 8 MiB a vector: whole 2 MiB pages
  o.range = {0, kKeys};
  o.optimizer.type = dt::config::OptimizerType::kAdagrad;  // a state slot to copy too
  o.copy_every = 2;
  o.copy = std::make_shared<dt::roles::ServerCopy>();
  ParameterServer server(*transport, o, std::vector<double>(kKeys, 0.25));
  std::lock_guard lock(o.copy->mu);
  const auto& copy = o.copy->state;
  CHECK(copy.version == 0);
  REQUIRE(copy.slice.size() == kKeys);
  CHECK(copy.slice.front() == 0.25);
  CHECK(copy.slice.back() == 0.25);
  REQUIRE(copy.optimizer.slots.size() == 1);
  REQUIRE(copy.optimizer.slots[0].size() == kKeys);
  // A copy made by a vector's own copy (4 KiB pages) costs a TLB miss at each key it writes.
  if (const auto slice = advised_huge(copy.slice.data())) {
    CHECK(*slice);
    CHECK(advised_huge(copy.optimizer.slots[0].data()) == true);
  }
}

TEST_CASE("servers: an async keyed push steps only its offsets, with the dense push's bits "
          "(staleness_lr too), and the answer carries the values of the next step's offsets") {
  auto transport = inproc();
  const auto o = keyed_async_options();
  auto twin = o;
  twin.index = 1;  // its own endpoint on the transport
  const std::vector<double> start{1.0, 1.0, 1.0, 1.0, 1.0};
  ParameterServer keyed(*transport, o, start), dense(*transport, twin, start);
  FakeWorker k0(*transport, keyed.endpoint(), 0), k1(*transport, keyed.endpoint(), 1);
  FakeWorker d0(*transport, dense.endpoint(), 0), d1(*transport, dense.endpoint(), 1);
  keyed_pull(k0, 2, {0, 1});
  keyed_pull(k1, 2, {1, 4});
  CHECK(keyed_values(k0) == std::pair<std::uint64_t, std::vector<double>>{0, {1.0, 1.0}});
  CHECK(keyed_values(k1).second == std::vector<double>{1.0, 1.0});
  d0.pull(2);
  d1.pull(2);
  (void)d0.slice();
  (void)d1.slice();

  // Worker 0: gradient sum {2, 4} at keys {0, 1} over 2 rows. sgd, lr 0.5, L2 0.1 on key 1:
  // w0 = 1 - 0.5 * 1 = 0.5, w1 = 1 - 0.5 * (2 + 0.1 * 1) = -0.05.
  keyed_push(k0, 0, 0, 2, {0, 1}, {2.0, 4.0}, std::vector<std::uint32_t>{1, 3});
  const auto [v0, next0] = keyed_values(k0);
  CHECK(v0 == 1);
  REQUIRE(next0.size() == 2);
  CHECK(next0[0] == doctest::Approx(-0.05));
  CHECK(next0[1] == 1.0);
  d0.push(0, 0, 2, {2.0, 4.0, 0.0, 0.0, 0.0});
  (void)d0.slice();
  // Worker 1, from version 0 at version 1 (staleness 1: the step is halved): {1, -1} at keys
  // {1, 4}: w1 = -0.05 - 0.5 * (1 + 0.1 * -0.05) / 2 = -0.29875, w4 = 1 + 0.5 / 2 = 1.25.
  keyed_push(k1, 0, 0, 1, {1, 4}, {1.0, -1.0}, std::vector<std::uint32_t>{0});
  const auto [v1, next1] = keyed_values(k1);
  CHECK(v1 == 2);
  CHECK(next1 == std::vector<double>{0.5});
  d1.push(0, 0, 1, {0.0, 1.0, 0.0, 0.0, -1.0});
  (void)d1.slice();
  REQUIRE(keyed.wait_version(2, kKeyedWait));
  REQUIRE(dense.wait_version(2, kKeyedWait));
  std::vector<double> a(5), b(5);
  keyed.copy_slice(a);
  dense.copy_slice(b);
  CHECK(a == b);  // bit for bit
  CHECK(a[1] == doctest::Approx(-0.29875));
  CHECK(a[4] == doctest::Approx(1.25));
  CHECK(keyed.stats().staleness_of == std::vector<std::vector<std::uint64_t>>{{0}, {1}});

  // L2 is lazy: a push that does not touch key 1 leaves it (the dense push decays it).
  keyed_push(k0, 1, 2, 1, {0}, {0.0}, std::nullopt);
  d0.push(1, 2, 1, {0.0, 0.0, 0.0, 0.0, 0.0});
  REQUIRE(keyed.wait_version(3, kKeyedWait));
  REQUIRE(dense.wait_version(3, kKeyedWait));
  keyed.copy_slice(a);
  dense.copy_slice(b);
  CHECK(a[1] == doctest::Approx(-0.29875));
  CHECK(b[1] != a[1]);
  CHECK(k0.quiet(std::chrono::milliseconds(50)));  // its last step: no answer
  keyed.check();
  dense.check();
}

TEST_CASE("servers: async keyed answers carry a lost worker's share, a replacement's pull is "
          "answered with its keys' values, and its duplicate push with its next step's") {
  auto transport = inproc();
  auto o = keyed_async_options();
  o.workers = 3;
  o.worker_steps = {3, 2, 3};
  o.staleness_lr = false;
  ParameterServer server(*transport, o, {1.0, 1.0, 1.0, 1.0, 1.0});
  FakeWorker w0(*transport, server.endpoint(), 0), w2(*transport, server.endpoint(), 2);
  auto w1 = std::make_unique<FakeWorker>(*transport, server.endpoint(), 1);
  keyed_pull(w0, 3, {0});
  keyed_pull(*w1, 2, {2});
  keyed_pull(w2, 3, {4});
  (void)keyed_values(w0);
  (void)keyed_values(*w1);
  (void)keyed_values(w2);

  // Worker 2 lost (continue): worker 0's next answer carries the share, with its values.
  Envelope deal{.type = Type::kReassign};
  deal.fields = {{"lost_rank", 2}};
  deal.arrays.push_back(dt::wire::to_bytes(std::span<const double>(std::vector<double>{7.0})));
  CHECK(server.drop_worker_dealing(2, deal, kKeyedWait).to == std::vector<int>{0, 1});
  keyed_push(w0, 0, 0, 1, {0}, {2.0}, std::vector<std::uint32_t>{0, 3});
  const auto e = w0.next();
  CHECK(e.fields.contains("keyed"));
  CHECK(e.fields["reassign"]["lost_rank"] == 2);
  REQUIRE(e.arrays.size() == 2);
  CHECK(dt::protocol::doubles(e, 0).size() == 2);
  CHECK(dt::protocol::doubles(e, 0)[0] == 0.0);  // 1 - 0.5 * 2
  CHECK(e.arrays[1] == deal.arrays[0]);

  // Worker 1 pushes step 0 and dies; its replacement resumes at step 0 (another server may
  // lack that push): its pull is answered with its keys' values, its push of step 0 (applied
  // here) is dropped and answered with the values its step 1 asked for.
  keyed_push(*w1, 0, 1, 1, {2}, {2.0}, std::vector<std::uint32_t>{2});
  (void)w1->next();  // the share (worker 1 was dealt one too) and the values
  w1.reset();
  CHECK(server.replace_worker(1, kKeyedWait) == 1);
  FakeWorker again(*transport, server.endpoint(), 1);
  keyed_pull(again, 2, {2, 3});
  const auto [pv, pulled] = keyed_values(again);
  CHECK(pv == 2);
  CHECK(pulled == std::vector<double>{0.0, 1.0});  // key 2 stepped once, key 3 untouched
  keyed_push(again, 0, 2, 1, {2, 3}, {9.0, 9.0}, std::vector<std::uint32_t>{1});
  const auto [dv, dropped] = keyed_values(again);
  CHECK(dv == 2);  // not applied
  CHECK(dropped == std::vector<double>{1.0});
  keyed_push(again, 1, 2, 1, {1}, {2.0}, std::nullopt);
  REQUIRE(server.wait_version(3, kKeyedWait));
  std::vector<double> params(5);
  server.copy_slice(params);
  CHECK(params[1] == doctest::Approx(1.0 - 0.5 * (2.0 + 0.1)));
  CHECK(params[2] == 0.0);
  CHECK(params[3] == 1.0);
  server.check();
}

TEST_CASE("servers: a keyed async server writes its copy for a replacement in part (the offsets "
          "stepped since the last copy), and the copy is its whole state") {
  auto transport = inproc();
  auto o = one_worker_options();
  o.copy_every = 2;
  o.copy = std::make_shared<dt::roles::ServerCopy>();
  ParameterServer server(*transport, o, {1.0, 1.0, 1.0, 1.0, 1.0});
  FakeWorker w(*transport, server.endpoint(), 0);
  four_keyed_steps(server, w, [&](std::uint64_t step) {
    if ((step + 1) % 2 != 0) return;
    // The copy is written under the lock that publishes the version: the state at it.
    dt::roles::ServerState now;
    server.capture(now);
    std::lock_guard lock(o.copy->mu);
    CHECK(o.copy->state.version == step + 1);
    CHECK(o.copy->state.slice == now.slice);
    CHECK(o.copy->state.optimizer.slots == now.optimizer.slots);
    CHECK(o.copy->state.optimizer.steps == now.optimizer.steps);
  });
  server.check();  // (the server's lock before the copy's, as the server takes them)
  std::lock_guard lock(o.copy->mu);
  CHECK(o.copy->state.slice[3] != 1.0);  // stepped at update 4, copied in part
  CHECK(o.copy->state.slice[0] != 1.0);  // stepped at update 1, copied whole at 2
}

TEST_CASE("servers: an async server's states kept for checkpoints are each its state at their "
          "update, the later ones written into the buffers of one a checkpoint has read") {
  auto transport = inproc();
  auto o = one_worker_options();
  o.checkpoint_every = 1;
  ParameterServer server(*transport, o, {1.0, 1.0, 1.0, 1.0, 1.0});
  FakeWorker w(*transport, server.endpoint(), 0);
  const double* first = nullptr;
  four_keyed_steps(server, w, [&](std::uint64_t step) {
    dt::roles::ServerState now;
    server.capture(now);
    const double* kept_slice = nullptr;
    REQUIRE(server.read_state_at(step + 1, [&](std::span<const double> slice,
                                               const dt::models::OptimizerState& optimizer,
                                               const std::vector<std::uint64_t>& worker_steps,
                                               const dt::roles::KeyMarks* /*marks*/) {
      kept_slice = slice.data();
      CHECK(std::vector<double>(slice.begin(), slice.end()) == now.slice);
      CHECK(optimizer.slots == now.optimizer.slots);
      CHECK(optimizer.steps == now.optimizer.steps);
      CHECK(worker_steps == std::vector<std::uint64_t>{step + 1});
    }));
    if (step == 0) first = kept_slice;
    CHECK(kept_slice == first);  // one set of buffers, read and written again: no page faults
  });
  server.check();
}

TEST_CASE("servers: a keyed async server's states kept for checkpoints are written and read at "
          "its marks, which hold every key stepped and every key nonzero at the start") {
  // 2^17 keys: wide enough for a checkpoint's arrays to be sparse (64Ki entries or more). Keys
  // 7 and 100000 are nonzero at the start, 100000 is never stepped; the others are stepped
  // once or twice, far apart. A key missing from the marks keeps, in the kept state, its value
  // of an older update (the buffers are written again at the marks only), and is dropped from
  // the checkpoint read at the marks: either way the resume would not be this state.
  constexpr std::size_t kKeys = std::size_t{1} << 17;
  const std::vector<std::vector<std::uint32_t>> keys{
      {3, 70000}, {7, 131000}, {3, 5000}, {99999}, {131071}};
  for (const auto type : {dt::config::OptimizerType::kAdagrad, dt::config::OptimizerType::kFtrl}) {
    CAPTURE(static_cast<int>(type));
    auto transport = inproc();
    auto o = one_worker_options();
    o.range = {0, kKeys};
    o.l2 = {};
    o.worker_steps = {keys.size()};
    o.optimizer.type = type;
    o.sparse_rows = true;
    o.checkpoint_every = 1;
    std::vector<double> start(kKeys, 0.0);
    start[7] = 0.5;
    start[100000] = -2.0;
    ParameterServer server(*transport, o, start);
    FakeWorker w(*transport, server.endpoint(), 0);
    steps_at(server, w, keys, [&](std::uint64_t step) {
      dt::roles::ServerState now;
      server.capture(now);
      REQUIRE(server.read_state_at(step + 1, [&](std::span<const double> slice,
                                                 const dt::models::OptimizerState& optimizer,
                                                 const std::vector<std::uint64_t>&,
                                                 const dt::roles::KeyMarks* marks) {
        CHECK(std::vector<double>(slice.begin(), slice.end()) == now.slice);
        CHECK(optimizer.slots == now.optimizer.slots);
        REQUIRE(marks != nullptr);
        std::vector<std::uint32_t> marked;
        marks->list(marked);
        // The checkpoint's arrays read at the marks are those of a read of the width.
        dt::checkpoint::Checkpoint whole, at_marks;
        dt::checkpoint::put(whole, "parameters", slice);
        dt::checkpoint::ArrayBuilder params("parameters", slice.size());
        params.add_at(slice, marked);
        params.finish(at_marks);
        dt::roles::put_optimizer(whole, "optimizer", optimizer);
        dt::roles::put_optimizer(at_marks, "optimizer", optimizer, &marked);
        REQUIRE(whole.sparse.count("parameters") == 1);
        CHECK(at_marks.sparse.at("parameters").indices == whole.sparse.at("parameters").indices);
        CHECK(dt::checkpoint::encode(at_marks) == dt::checkpoint::encode(whole));
      }));
    });
    server.check();
  }
}

TEST_CASE("servers: a keyed async server writes a kept state at the keys stepped since the last "
          "one kept when a checkpoint has read that one, else at its marks") {
  // Each update steps its own keys, so a kept state written at too few keys holds an older
  // value at some key. Reads: 1 (the start's buffers, written at update 1's keys), then 2 only
  // once 3 is kept, so the buffers update 4 is written into hold update 2's state while the
  // keys stepped since the last kept state (3) lack update 3's: 4 needs the marks.
  constexpr std::size_t kKeys = std::size_t{1} << 17;
  const std::vector<std::vector<std::uint32_t>> keys{
      {3, 70000}, {7, 131000}, {5000}, {99999}, {3, 131071}};
  auto transport = inproc();
  auto o = one_worker_options();
  o.range = {0, kKeys};
  o.l2 = {};
  o.worker_steps = {keys.size()};
  o.sparse_rows = true;
  o.checkpoint_every = 1;
  ParameterServer server(*transport, o, std::vector<double>(kKeys, 0.0));
  FakeWorker w(*transport, server.endpoint(), 0);
  std::map<std::uint64_t, dt::roles::ServerState> now;  // the server's state after each update
  const auto read = [&](std::uint64_t version) {
    CAPTURE(version);
    REQUIRE(server.read_state_at(version, [&](std::span<const double> slice,
                                              const dt::models::OptimizerState& optimizer,
                                              const std::vector<std::uint64_t>&,
                                              const dt::roles::KeyMarks*) {
      CHECK(std::vector<double>(slice.begin(), slice.end()) == now[version].slice);
      CHECK(optimizer.slots == now[version].optimizer.slots);
    }));
  };
  const std::map<std::uint64_t, std::vector<std::uint64_t>> reads{{1, {1}}, {3, {2}}, {4, {4}},
                                                                   {5, {5}}};
  steps_at(server, w, keys, [&](std::uint64_t step) {
    server.capture(now[step + 1]);
    if (const auto it = reads.find(step + 1); it != reads.end()) {
      for (const auto version : it->second) read(version);
    }
  });
  server.check();
}

TEST_CASE("servers: an async server applies pushes and answers while a checkpoint reads a state "
          "it kept, and the state read is the one of its update") {
  // A checkpoint reads every marked key of a kept state: under the server's lock, the server
  // could apply no push (and answer no worker) until it was done.
  auto transport = inproc();
  auto o = one_worker_options();
  o.sparse_rows = true;
  o.checkpoint_every = 1;
  ParameterServer server(*transport, o, {1.0, 1.0, 1.0, 1.0, 1.0});
  FakeWorker w(*transport, server.endpoint(), 0);
  keyed_pull(w, 4, {0, 1});
  (void)keyed_values(w);
  keyed_push(w, 0, 0, 1, {0, 1}, {0.5, 0.5}, std::vector<std::uint32_t>{2});
  (void)keyed_values(w);
  REQUIRE(server.wait_version(1, kKeyedWait));
  dt::roles::ServerState first;
  server.capture(first);
  REQUIRE(server.read_state_at(1, [&](std::span<const double> slice,
                                      const dt::models::OptimizerState& optimizer,
                                      const std::vector<std::uint64_t>&,
                                      const dt::roles::KeyMarks*) {
    keyed_push(w, 1, 1, 1, {2}, {1.5}, std::vector<std::uint32_t>{1, 4});
    CHECK(keyed_values(w).first == 2);  // answered during the read (5 s, else the test fails)
    CHECK(std::vector<double>(slice.begin(), slice.end()) == first.slice);
    CHECK(optimizer.slots == first.optimizer.slots);
  }));
  dt::roles::ServerState second;
  server.capture(second);
  CHECK(second.slice[2] != first.slice[2]);
  REQUIRE(server.read_state_at(2, [&](std::span<const double> slice,
                                      const dt::models::OptimizerState& optimizer,
                                      const std::vector<std::uint64_t>&,
                                      const dt::roles::KeyMarks*) {
    CHECK(std::vector<double>(slice.begin(), slice.end()) == second.slice);
    CHECK(optimizer.slots == second.optimizer.slots);
  }));
  server.check();
}

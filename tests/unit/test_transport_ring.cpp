// Ring all-reduce over real sockets: N members as threads of one process (inproc, and ipc/tcp
// for the transport matrix), checked against a plain sum; every member must end with the same
// bits. Failure paths: a missing peer times out naming it, on_wait can end a wait, and stray or
// stale frames never count.

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/random.hpp"
#include "tests/unit/harness.hpp"
#include "transports/collectives/ring.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <numeric>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using dt::collectives::PeerLinks;
using dt::collectives::PeerOptions;
using dt::collectives::Ring;

constexpr std::uint64_t kRingJob = 0xAB12;

// Member m's value j: a pure function of (m, j), of mixed signs and magnitudes.
double value_of(std::uint32_t member, std::size_t j) {
  return dt::random::normal(17, 900, member, j) * std::exp2(static_cast<int>(j % 7) - 3);
}

// One PeerLinks per member on `transport`, endpoints exchanged.
std::vector<std::unique_ptr<PeerLinks>> make_links(dt::transport::Transport& transport,
                                                   std::uint32_t n, std::size_t chunk,
                                                   std::chrono::milliseconds timeout = 5000ms) {
  static int calls = 0;  // listener names are unique per transport
  ++calls;
  std::vector<std::unique_ptr<PeerLinks>> links;
  std::vector<std::string> endpoints;
  for (std::uint32_t r = 0; r < n; ++r) {
    PeerOptions options{.job_id = kRingJob, .rank = r, .timeout = timeout, .chunk_doubles = chunk};
    links.push_back(std::make_unique<PeerLinks>(
        transport, transport.listen(fmt::format("c{}-p{}", calls, r)), std::move(options)));
    endpoints.push_back(links.back()->endpoint());
  }
  for (auto& l : links) l->set_endpoints(endpoints);
  return links;
}

// Runs body(rank) on one thread per member; rethrows the first member's error.
template <class F>
void on_threads(std::uint32_t n, F body) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (std::uint32_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::vector<std::uint32_t> iota_ranks(std::uint32_t n) {
  std::vector<std::uint32_t> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0U);
  return ranks;
}

// All-reduces value_of over n members with `chunk`-value messages and checks the result.
void check_allreduce(dt::transport::Transport& transport, std::uint32_t n, std::size_t length,
                     std::size_t chunk) {
  CAPTURE(n);
  CAPTURE(length);
  CAPTURE(chunk);
  auto links = make_links(transport, n, chunk);
  std::vector<std::vector<double>> data(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    for (std::size_t j = 0; j < length; ++j) data[r].push_back(value_of(r, j));
  }
  on_threads(n, [&](std::uint32_t r) { links[r]->ring(iota_ranks(n)).allreduce_sum(data[r]); });
  for (std::size_t j = 0; j < length; ++j) {
    double expected = 0;
    for (std::uint32_t r = 0; r < n; ++r) expected += value_of(r, j);
    CHECK(std::abs(data[0][j] - expected) <= 1e-12 * std::max(1.0, std::abs(expected)));
  }
  for (std::uint32_t r = 1; r < n && length > 0; ++r) {
    // Bit-identical, not merely close: every member holds the one sum each segment got.
    CHECK(std::memcmp(data[r].data(), data[0].data(), length * sizeof(double)) == 0);
  }
  // Each member sends 2(N-1) segments: 2(N-1)/N of the vector, give or take a rounding.
  const auto& stats = links[0]->ring(iota_ranks(n)).stats();
  if (n > 1 && length >= n) {
    const double share = static_cast<double>(stats.values_sent) / static_cast<double>(length);
    CHECK(std::abs(share - 2.0 * (n - 1) / n) <= 2.0 * (n - 1) / static_cast<double>(length));
  }
  if (n == 1 || length == 0) CHECK(links[0]->stats().messages_sent == 0);
}

}  // namespace

TEST_CASE("ring: all-reduce equals a plain sum for N = 1..5 and awkward lengths") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  for (std::uint32_t n = 1; n <= 5; ++n) {
    for (std::size_t length : {std::size_t{0}, std::size_t{1}, std::size_t{n - 1},
                               std::size_t{n + 1}, std::size_t{1000}}) {
      for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, dt::collectives::kDefaultChunkDoubles}) {
        if (length == 1000 && chunk == 1 && n > 3) continue;  // 1000-message phases: slow, no new path
        check_allreduce(*transport, n, length, chunk);
      }
    }
  }
}

TEST_CASE_TEMPLATE("ring: all-reduce over every transport", K, DT_ALL_TRANSPORTS) {
  auto transport = dt::test::make_transport<K>(kRingJob);
  check_allreduce(*transport, 3, 1001, 64);
  check_allreduce(*transport, 4, 5, 2);
}

TEST_CASE("ring: closed form: member r contributing r + j sums to n(n-1)/2 + n*j exactly") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  constexpr std::uint32_t n = 4;
  auto links = make_links(*transport, n, 2);
  std::vector<std::vector<double>> data(n, std::vector<double>(7));
  for (std::uint32_t r = 0; r < n; ++r) {
    for (std::size_t j = 0; j < 7; ++j) data[r][j] = r + static_cast<double>(j);
  }
  // Three collectives in a row on one ring: sequence numbers keep them apart.
  on_threads(n, [&](std::uint32_t r) {
    auto& ring = links[r]->ring(iota_ranks(n));
    for (int k = 0; k < 3; ++k) ring.allreduce_sum(data[r]);
  });
  for (std::size_t j = 0; j < 7; ++j) {
    // After one all-reduce: 6 + 4j; each further one multiplies by 4.
    CHECK(data[2][j] == 16.0 * (6.0 + 4.0 * static_cast<double>(j)));
  }
}

TEST_CASE("ring: subgroups share one listener per member") {
  // Members 0..3 form rings {0,1} and {2,3} and the ring {3,1,0,2} (any order of ranks), used in
  // the order pair, whole, pair. A member's messages of one ring may arrive while it still waits
  // in another (member 3 may be done with {2,3} and sending to 1 while 1 waits in {0,1}): the
  // mailbox holds them.
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  auto links = make_links(*transport, 4, 1);
  std::vector<std::vector<double>> pair(4, std::vector<double>(5));
  std::vector<std::vector<double>> all(4, std::vector<double>(3));
  on_threads(4, [&](std::uint32_t r) {
    for (std::size_t j = 0; j < 5; ++j) pair[r][j] = 10.0 * r + static_cast<double>(j);
    for (std::size_t j = 0; j < 3; ++j) all[r][j] = static_cast<double>(r * j);
    const std::vector<std::uint32_t> mine = r < 2 ? std::vector<std::uint32_t>{0, 1}
                                                  : std::vector<std::uint32_t>{2, 3};
    links[r]->ring(mine).allreduce_sum(pair[r]);
    links[r]->ring({3, 1, 0, 2}).allreduce_sum(all[r]);
    links[r]->ring(mine).allreduce_sum(pair[r]);
  });
  for (std::size_t j = 0; j < 5; ++j) {
    CHECK(pair[0][j] == 2.0 * (10.0 + 2.0 * static_cast<double>(j)));
    CHECK(pair[3][j] == 2.0 * (50.0 + 2.0 * static_cast<double>(j)));
  }
  for (std::size_t j = 0; j < 3; ++j) CHECK(all[1][j] == 6.0 * static_cast<double>(j));
  CHECK(&links[0]->ring({0, 1}) == &links[0]->ring({0, 1}));  // cached
}

TEST_CASE("ring: a missing peer ends the wait with an error naming it") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  auto links = make_links(*transport, 3, 4, 300ms);  // rank 2 never takes part
  std::vector<double> v(10, 1.0);
  const auto message = dt::test::message_of<dt::TimeoutError>(
      [&] { links[0]->ring({0, 1, 2}).allreduce_sum(v); });
  CHECK(message == fmt::format("ring all-reduce (reduce-scatter): no message from rank 2 ({}) "
                               "within 300 ms (collective 0, phase 0, chunk 0)",
                               links[2]->endpoint()));
}

TEST_CASE("ring: on_wait ends a wait early") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  int calls = 0;
  PeerOptions options{.job_id = kRingJob, .rank = 0, .on_wait = [&calls] {
    if (++calls == 3) dt::fail<dt::InterruptedError>("cancelled");
  }};
  PeerLinks links(*transport, transport->listen("p0"), options);
  links.set_endpoints({links.endpoint(), "inproc://nobody"});
  std::vector<double> v(4, 1.0);
  CHECK(dt::test::message_of<dt::InterruptedError>([&] { links.ring({0, 1}).allreduce_sum(v); }) ==
        "cancelled");
}

TEST_CASE("ring: idle work runs while a member waits, a slice at a time, and changes no bit") {
  // Rank 1 comes 100 ms late; rank 0's idle work (1 ms a slice, never done by itself) must run
  // meanwhile and stop once the chunk is there: a wait that ignored it would run no slice, one
  // that ran it to the end would take 5 s.
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  auto links = make_links(*transport, 2, 3);
  int slices = 0;
  links[0]->set_idle_work([&slices] {
    std::this_thread::sleep_for(1ms);
    return ++slices < 5000;
  });
  constexpr std::size_t kLength = 10;
  std::vector<std::vector<double>> data(2);
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::size_t j = 0; j < kLength; ++j) data[r].push_back(static_cast<double>(r + j));
  }
  const auto start = std::chrono::steady_clock::now();
  on_threads(2, [&](std::uint32_t r) {
    if (r == 1) std::this_thread::sleep_for(100ms);
    links[r]->ring({0, 1}).allreduce_sum(data[r]);
  });
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(slices >= 20);
  CHECK(took < 2s);
  for (std::size_t j = 0; j < kLength; ++j) {
    CHECK(data[0][j] == static_cast<double>(1 + 2 * j));  // 0 + j + 1 + j
    CHECK(data[1][j] == data[0][j]);
  }
}

TEST_CASE("ring: bad member lists are refused") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  auto links = make_links(*transport, 3, 4);
  using dt::TransportError;
  CHECK(dt::test::message_of<TransportError>([&] { (void)links[0]->ring({1, 2}); }) ==
        "rank 0 cannot build a ring it is not a member of (1, 2)");
  CHECK(dt::test::message_of<TransportError>([&] { (void)links[0]->ring({0, 1, 0}); }) ==
        "ring member 0 is listed twice");
  CHECK(dt::test::message_of<TransportError>([&] { (void)links[0]->ring({0, 5}); }) ==
        "ring member 5 is not a rank of this job (ranks 0 to 2)");
  PeerLinks early(*transport, transport->listen("early"), {.job_id = kRingJob, .rank = 0});
  CHECK(dt::test::message_of<TransportError>([&] { (void)early.ring({0}); }) ==
        "peer links of rank 0: no peer endpoints yet (the coordinator sends them after every "
        "worker is ready)");
}

TEST_CASE("ring: members that disagree on the length fail loudly") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  auto links = make_links(*transport, 2, 100, 500ms);
  std::vector<std::string> errors(2);
  on_threads(2, [&](std::uint32_t r) {
    std::vector<double> v(r == 0 ? 10 : 12, 1.0);
    errors[r] = dt::test::message_of<dt::TransportError>(
        [&] { links[r]->ring({0, 1}).allreduce_sum(v); });
  });
  CHECK(errors[0].find("sent values [6, 12) of a 12-value vector, expected [5, 10) of 10 (do all "
                       "members reduce vectors of the same length?)") != std::string::npos);
}

TEST_CASE("ring: stale, foreign and stray frames are dropped, never summed") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kRingJob);
  auto links = make_links(*transport, 2, 2);
  const dt::collectives::ChunkKey stale{Ring::group_id({0, 1}), 1, 0, 0, 0};
  const std::vector<double> poison(2, 1e300);
  // A stranger under another identity, and a peer of another job, talk to member 0.
  auto stranger = transport->connect(links[0]->endpoint(), "x9");
  dt::wire::Message junk;
  junk.header = {.type = dt::collectives::kPeerChunkType, .job_id = kRingJob, .rank = 1};
  junk.payload = {dt::wire::Bytes(40), dt::wire::to_bytes(std::span(poison))};
  stranger->send(junk, dt::transport::deadline_in(1s));
  auto other_job = transport->connect(links[0]->endpoint(), "p5");
  junk.header.job_id = kRingJob + 1;
  other_job->send(junk, dt::transport::deadline_in(1s));

  std::vector<std::vector<double>> data(2, std::vector<double>(4, 1.0));
  on_threads(2, [&](std::uint32_t r) {
    auto& ring = links[r]->ring({0, 1});
    ring.allreduce_sum(data[r]);
    // Member 1 sends a chunk of collective 0 again, after it: a late frame.
    if (r == 1) links[1]->send_chunk(0, stale, {4, 0, 2}, poison);
    ring.allreduce_sum(data[r]);
  });
  CHECK(data[0] == std::vector<double>(4, 4.0));
  CHECK(data[1] == std::vector<double>(4, 4.0));
  CHECK(links[0]->stats().messages_dropped >= 1);
}

TEST_CASE("transport: ipc listeners go into ipc_dir when given, and it is left to its owner") {
  dt::files::TempDir owner("dt-test-ipcdir", std::filesystem::path("/tmp"));
  auto options = dt::test::options_for<dt::test::Ipc>(kRingJob);
  options.ipc_dir = owner.path();
  {
    auto transport = dt::transport::make_zmq_transport(options);
    auto listener = transport->listen("p3");
    CHECK(listener->endpoint() == "ipc://" + (owner.path() / "p3.sock").string());
    auto connection = transport->connect(listener->endpoint(), "p1");
    dt::wire::Message m;
    m.header = {.type = 99, .job_id = kRingJob, .rank = 1};
    connection->send(m, dt::transport::deadline_in(1s));
    const auto got = listener->receive(dt::transport::deadline_in(dt::test::kPatience));
    REQUIRE(got);
    CHECK(got->peer == "p1");
  }
  CHECK(std::filesystem::is_directory(owner.path()));  // the Transport does not remove it
  options.ipc_dir = owner.path() / std::string(120, 'x');
  auto transport = dt::transport::make_zmq_transport(options);
  CHECK(dt::test::message_of<dt::TransportError>([&] { (void)transport->listen("p0"); })
            .find("the socket path would exceed 100 bytes") != std::string::npos);
}

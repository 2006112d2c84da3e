// Re-forming a ring after a member is replaced (core/modes/ring_reform.hpp), on the peer links
// alone: the survivors abandon a collective that waits on the lost member (set_interrupt),
// retire its ring, take the replacement's endpoint (update_endpoints) and all-reduce over the
// ring of the next generation. Chunks of the abandoned collective never count.

#include "base/error.hpp"
#include "tests/unit/harness.hpp"
#include "transports/collectives/ring.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using dt::collectives::PeerLinks;
using dt::collectives::PeerOptions;
using dt::collectives::Ring;

constexpr std::uint64_t kReformJob = 0xCD34;

struct Abandoned {};  // as the ring mode's: not a dt::Error

std::unique_ptr<PeerLinks> member(dt::transport::Transport& transport, const std::string& name,
                                  std::uint32_t rank) {
  PeerOptions options{.job_id = kReformJob, .rank = rank, .timeout = 5000ms, .chunk_doubles = 2};
  return std::make_unique<PeerLinks>(transport, transport.listen(name), std::move(options));
}

}  // namespace

TEST_CASE("ring re-form: survivors abandon, take the replacement's endpoint, and sum again") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kReformJob);
  std::vector<std::unique_ptr<PeerLinks>> links;
  std::vector<std::string> endpoints;
  for (std::uint32_t r = 0; r < 3; ++r) {
    links.push_back(member(*transport, fmt::format("p{}", r), r));
    endpoints.push_back(links.back()->endpoint());
  }
  for (auto& l : links) l->set_endpoints(endpoints);
  const std::vector<std::uint32_t> all{0, 1, 2};
  const std::uint64_t old_group = links[1]->ring(all).id();

  // Rank 0 is lost: it never joins. Ranks 1 and 2 start the collective with poison and wait on
  // it until told to abandon (the coordinator's re-form message, here a flag).
  links[0].reset();
  std::atomic<bool> reform{false};
  std::vector<std::exception_ptr> errors(3);
  // One byte per rank, not std::vector<bool>: its bits share words, and two threads setting
  // their own flag at once race (ThreadSanitizer found it; a lost write failed the CHECK below).
  std::vector<char> abandoned(3, 0);
  std::vector<std::vector<double>> values(3, std::vector<double>(6, 1e300));
  std::vector<std::thread> threads;
  for (std::uint32_t r = 1; r < 3; ++r) {
    links[r]->set_interrupt([&reform] {
      if (reform.load()) throw Abandoned{};
    });
    threads.emplace_back([&, r] {
      try {
        links[r]->ring(all).allreduce_sum(values[r]);
      } catch (const Abandoned&) {
        abandoned[r] = true;
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  std::this_thread::sleep_for(150ms);
  reform = true;
  for (auto& t : threads) t.join();
  CHECK(abandoned[1]);
  CHECK(abandoned[2]);
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  // The replacement listens elsewhere; the survivors retire the old ring and learn its endpoint.
  links[0] = member(*transport, "p0-restart1", 0);
  endpoints[0] = links[0]->endpoint();
  links[0]->update_endpoints(endpoints, {0});
  for (std::uint32_t r = 1; r < 3; ++r) {
    links[r]->set_interrupt({});
    links[r]->retire(links[r]->ring(all));
    links[r]->update_endpoints(endpoints, {0});
  }
  // A late chunk of the abandoned collective arrives after the retire: dropped, never summed.
  const auto dropped_before = links[2]->stats().messages_dropped;
  const std::vector<double> poison(2, 1e300);
  links[1]->send_chunk(2, {old_group, 1, 0, 0, 0}, {6, 0, 2}, poison);

  // Generation 1 of the same members: a different group id, a fresh sequence on every member.
  CHECK(Ring::group_id(all, 1) != old_group);
  for (std::uint32_t r = 0; r < 3; ++r) values[r].assign(6, static_cast<double>(r + 1));
  threads.clear();
  for (std::uint32_t r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto& ring = links[r]->ring(all, 1);
        CHECK(ring.id() == Ring::group_id(all, 1));
        ring.allreduce_sum(values[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (std::uint32_t r = 0; r < 3; ++r) CHECK(values[r] == std::vector<double>(6, 6.0));
  CHECK(links[2]->stats().messages_dropped > dropped_before);
}

TEST_CASE("ring re-form: generation 0 is the plain ring; bad endpoint updates are refused") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kReformJob);
  auto links = member(*transport, "q0", 0);
  links->update_endpoints({links->endpoint(), "inproc://one"});  // none yet: sets them
  CHECK(&links->ring({0, 1}, 0) == &links->ring({0, 1}));
  CHECK(&links->ring({0, 1}, 3) != &links->ring({0, 1}));
  links->update_endpoints({links->endpoint(), "inproc://two"});  // a new endpoint for rank 1
  CHECK(links->describe(1) == "rank 1 (inproc://two)");
  // A worker joined in a new slot (elastic): the list grows, an empty slot between stays empty.
  links->update_endpoints({links->endpoint(), "inproc://two", "", "inproc://three"}, {3});
  CHECK(links->world_size() == 4);
  CHECK(links->describe(3) == "rank 3 (inproc://three)");
  CHECK(&links->ring({0, 1, 3}, 4) != &links->ring({0, 1}, 4));
  using dt::TransportError;
  CHECK(dt::test::message_of<TransportError>(
            [&] { links->update_endpoints({links->endpoint()}); }) ==
        "peer links: 1 endpoints for a job of 4 ranks");
  CHECK(dt::test::message_of<TransportError>(
            [&] {
              links->update_endpoints({"inproc://elsewhere", "inproc://two", "", "inproc://three"});
            }) ==
        "peer links: rank 0 was told another endpoint for itself (inproc://elsewhere)");
}

// The star coordinator's lent parameters (core/modes/lent_params.hpp): a request lends the
// parameters' buffer instead of a copy, the step goes out of place into the other buffer and the
// two swap, and the bytes a live request lends never change, whatever is stepped or written
// after it (a request may be sent again while it lives).

#include "core/modes/lent_params.hpp"
#include "core/protocol/protocol.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

namespace {

using dt::modes::LentParams;
using dt::protocol::Envelope;
using dt::protocol::Type;

constexpr std::uint64_t kJob = 0x1E47;

// A step's request as the session keeps it (its last_request_): encoded, shared.
std::shared_ptr<const dt::wire::Message> request(LentParams& lent, std::uint64_t step) {
  Envelope e{.type = Type::kStep, .step = step};
  e.fields["at"] = step;
  lent.lend(e);
  return std::make_shared<const dt::wire::Message>(dt::protocol::encode(std::move(e), kJob));
}

std::vector<double> sent(const dt::wire::Message& m) {
  const auto values = dt::wire::as_doubles(dt::wire::frame(m, 1));
  return {values.begin(), values.end()};
}

// One step as finish_step takes it: out of place into target(), every value + 1, then swap.
void step(LentParams& lent, const std::vector<double>& params) {
  const auto to = lent.target();
  REQUIRE(to.size() == params.size());
  CHECK(to.data() != params.data());
  for (std::size_t i = 0; i < to.size(); ++i) to[i] = params[i] + 1.0;
  lent.swap();
}

}  // namespace

TEST_CASE("lent params: a request lends the parameters' buffer, counted in its payload") {
  std::vector<double> params = {1.5, -2.0, 3.25};
  LentParams lent(params);
  const auto m = request(lent, 0);
  REQUIRE(m->payload.size() == 2);
  CHECK(m->payload[1].empty());  // no copy: the frame is a view
  REQUIRE(m->views.size() == 2);
  CHECK(m->views[0].empty());  // the fields frame is the message's own
  CHECK(static_cast<const void*>(m->views[1].data()) == params.data());
  CHECK(m->lease != nullptr);
  CHECK(m->header.payload_size == m->payload[0].size() + 3 * sizeof(double));
  CHECK(sent(*m) == params);
  const auto back = dt::protocol::decode(*m, kJob);  // a copy of what the transport sends
  CHECK(dt::protocol::doubles(back, 0, 3)[2] == 3.25);
}

TEST_CASE("lent params: a request's bytes stay as sent while the steps go on; buffers reused") {
  std::vector<double> params = {1.0, 2.0, 3.0};
  LentParams lent(params);
  auto first = request(lent, 0);
  const auto* first_buffer = params.data();
  step(lent, params);
  CHECK(params == std::vector<double>{2.0, 3.0, 4.0});  // the session's vector, new values
  CHECK(sent(*first) == std::vector<double>{1.0, 2.0, 3.0});  // the request's, unchanged
  // The next request replaces the first (as a broadcast replaces each rank's last request):
  // the first buffer is free again and is stepped into, no allocation.
  auto second = request(lent, 1);
  first.reset();
  CHECK(lent.target().data() == first_buffer);
  step(lent, params);
  CHECK(params == std::vector<double>{3.0, 4.0, 5.0});
  CHECK(params.data() == first_buffer);
  CHECK(sent(*second) == std::vector<double>{2.0, 3.0, 4.0});
  CHECK(lent.handed_over() == 0);
}

TEST_CASE("lent params: a buffer still lent is handed to its message, never stepped into") {
  std::vector<double> params = {1.0, 2.0, 3.0};
  std::shared_ptr<const dt::wire::Message> lost;  // a lost worker's last request, kept
  {
    LentParams lent(params);
    lost = request(lent, 0);
    step(lent, params);
    auto second = request(lent, 1);  // sent to the workers still alive
    step(lent, params);              // would step into the lost request's buffer
    CHECK(lent.handed_over() == 1);
    CHECK(sent(*lost) == std::vector<double>{1.0, 2.0, 3.0});
    CHECK(sent(*second) == std::vector<double>{2.0, 3.0, 4.0});
    CHECK(params == std::vector<double>{3.0, 4.0, 5.0});
    auto third = request(lent, 2);
    second.reset();
    step(lent, params);  // the second's buffer is free: reused
    CHECK(lent.handed_over() == 1);
    CHECK(params == std::vector<double>{4.0, 5.0, 6.0});
  }
  CHECK(sent(*lost) == std::vector<double>{1.0, 2.0, 3.0});  // outlives the lender
}

TEST_CASE("lent params: finish leaves the parameters writable in place, the requests intact") {
  std::vector<double> params = {1.0, 2.0};
  LentParams lent(params);
  auto last = request(lent, 0);
  const auto* lent_buffer = params.data();
  lent.finish();
  CHECK(params.data() != lent_buffer);  // a copy is the session's now
  CHECK(params == std::vector<double>{1.0, 2.0});
  params[0] = 9.0;  // e.g. early stopping restores its best parameters
  CHECK(sent(*last) == std::vector<double>{1.0, 2.0});
  CHECK(lent.handed_over() == 1);

  // Nothing lent any more: finish copies nothing.
  last.reset();
  const auto* own = params.data();
  lent.finish();
  CHECK(params.data() == own);
}

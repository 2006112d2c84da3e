// Where a run's CURVE keys come from (core/protocol/keys.hpp): files, then the environment, then
// keys made for the run; what local workers are handed; what is refused and how it is said.

#include "core/protocol/keys.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

namespace {

using dt::test::kMinimal;
using dt::test::parse_text;

// Sets (or, with nullptr, removes) an environment variable while it lives.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~EnvVar() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string key_error_of(const auto& f) {
  try {
    f();
  } catch (const dt::Error& e) {
    return e.message();
  }
  return "(no error)";
}

dt::config::Config curve(const std::string& transport) {
  return parse_text(std::string(kMinimal) + "shards: {count: 2}\ntransport: " + transport + "\n");
}

}  // namespace

TEST_CASE("roles keys: security none needs no keys and hands the workers none") {
  EnvVar secret(dt::roles::kSecretKeyEnv, nullptr);
  const auto keys = dt::roles::run_keys(parse_text(kMinimal));
  CHECK_FALSE(keys.coordinator.curve);
  CHECK(keys.child_environment.empty());
  CHECK(keys.peer.secret_key.empty());
}

TEST_CASE("roles keys: an all-local curve run makes its keys and hands the workers theirs") {
  EnvVar secret(dt::roles::kSecretKeyEnv, nullptr);
  EnvVar authorized(dt::roles::kAuthorizedKeysEnv, nullptr);
  const auto keys = dt::roles::run_keys(curve("{security: curve}"));
  REQUIRE(keys.coordinator.curve);
  CHECK(dt::transport::is_key(keys.coordinator.own.secret_key));
  REQUIRE(keys.coordinator.authorized.size() == 1);  // the local workers' key, no other
  REQUIRE(keys.child_environment.size() == 2);
  const std::string child_secret =
      keys.child_environment[0].substr(std::string(dt::roles::kSecretKeyEnv).size() + 1);
  CHECK(dt::transport::public_key_of(child_secret) == keys.coordinator.authorized[0]);
  CHECK(keys.child_environment[1] ==
        std::string(dt::roles::kServerKeyEnv) + "=" + keys.coordinator.own.public_key);
  CHECK(dt::transport::is_key(keys.peer.secret_key));
  CHECK(keys.peer.public_key != keys.coordinator.own.public_key);
}

TEST_CASE("roles keys: the environment gives the coordinator's pair and the admitted keys") {
  const auto mine = dt::transport::generate_key_pair();
  const auto a = dt::transport::generate_key_pair();
  const auto b = dt::transport::generate_key_pair();
  EnvVar secret(dt::roles::kSecretKeyEnv, mine.secret_key.c_str());
  const std::string list = a.public_key + "," + b.public_key;
  EnvVar authorized(dt::roles::kAuthorizedKeysEnv, list.c_str());
  const auto keys =
      dt::roles::run_keys(curve("{type: tcp, security: curve, remote_workers: 2}"));
  CHECK(keys.coordinator.own.public_key == mine.public_key);
  CHECK(keys.coordinator.authorized == std::vector<std::string>{a.public_key, b.public_key});
  CHECK(keys.child_environment.empty());  // every worker joins: no local ones
}

TEST_CASE("roles keys: workers that join need the coordinator's pair and admitted keys") {
  EnvVar secret(dt::roles::kSecretKeyEnv, nullptr);
  EnvVar authorized(dt::roles::kAuthorizedKeysEnv, nullptr);
  const auto remote = curve("{type: tcp, security: curve, remote_workers: 1}");
  CHECK(key_error_of([&] { (void)dt::roles::run_keys(remote); }) ==
        "transport.security curve with workers that join (transport.remote_workers 1): they "
        "need the coordinator's public key beforehand, so give its key pair: `disttrain keygen "
        "coordinator`, then transport.keys.secret: coordinator.key (or $DISTTRAIN_SECRET_KEY), "
        "and hand coordinator.pub to the workers");
  const auto mine = dt::transport::generate_key_pair();
  EnvVar with_secret(dt::roles::kSecretKeyEnv, mine.secret_key.c_str());
  CHECK(key_error_of([&] { (void)dt::roles::run_keys(remote); }).find(
            "but no client key is authorized, so none could join") != std::string::npos);
}

TEST_CASE("roles keys: a worker takes both halves or neither") {
  EnvVar secret(dt::roles::kSecretKeyEnv, nullptr);
  EnvVar server(dt::roles::kServerKeyEnv, nullptr);
  CHECK_FALSE(dt::roles::worker_keys({}, {}, false).curve);
  CHECK(key_error_of([] { (void)dt::roles::worker_keys({}, {}, true); }).starts_with(
      "transport.security is curve, so this worker needs its key pair"));
  const auto coordinator = dt::transport::generate_key_pair();
  const auto mine = dt::transport::generate_key_pair();
  {
    EnvVar only_server(dt::roles::kServerKeyEnv, coordinator.public_key.c_str());
    CHECK(key_error_of([] { (void)dt::roles::worker_keys({}, {}, false); }).ends_with(
        "this worker's key pair is missing"));
  }
  dt::files::TempDir dir("dt-keys-");
  dt::files::write_atomic(dir.path() / "w.key", dt::transport::key_pair_file_text(mine), 0600);
  dt::files::write_atomic(dir.path() / "c.pub",
                          dt::transport::public_key_file_text(coordinator, "c"));
  const auto keys = dt::roles::worker_keys(dir.path() / "w.key", dir.path() / "c.pub", true);
  CHECK(keys.curve);
  CHECK(keys.own.public_key == mine.public_key);
  CHECK(keys.server_key == coordinator.public_key);
  // Files win over the environment.
  EnvVar other(dt::roles::kServerKeyEnv, mine.public_key.c_str());
  CHECK(dt::roles::worker_keys(dir.path() / "w.key", dir.path() / "c.pub", true).server_key ==
        coordinator.public_key);
}

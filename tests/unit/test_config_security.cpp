// transport.security and its keys in the config: parsing, paths, to_yaml round trip. The key
// files' content is read when a run starts (core/protocol/keys.hpp), not here.

#include "core/config/config.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

namespace {

using dt::test::kMinimal;
using dt::test::parse_text;

}  // namespace

TEST_CASE("config security: none by default; curve allows any address and reads key paths") {
  const auto plain = parse_text(kMinimal);
  CHECK(plain.transport.security == dt::config::SecurityMode::kNone);
  CHECK(plain.transport.max_message_bytes == (std::uint64_t{1} << 32));
  CHECK(plain.transport.secret_key.empty());

  const auto c = parse_text(std::string(kMinimal) +
                            "transport:\n  type: tcp\n  address: 0.0.0.0:29500\n"
                            "  security: curve\n  max_message_bytes: 2000000\n"
                            "  keys: {secret: keys/c.key, authorized: /etc/w.pub, "
                            "server: c.pub}\n");
  CHECK(c.transport.security == dt::config::SecurityMode::kCurve);
  CHECK(c.transport.address == "0.0.0.0:29500");
  CHECK(c.transport.max_message_bytes == 2000000);
  CHECK(c.transport.secret_key == "/tmp/keys/c.key");  // against the config's folder
  CHECK(c.transport.authorized_keys == "/etc/w.pub");
  CHECK(c.transport.server_key == "/tmp/c.pub");

  // Workers receive to_yaml's text: it reads back the same, key paths and all.
  const auto again = dt::config::parse(dt::config::to_yaml(c), "<coordinator>", "/");
  CHECK(dt::config::to_yaml(again) == dt::config::to_yaml(c));
  CHECK(again.transport.secret_key == c.transport.secret_key);
  CHECK(dt::config::config_hash(again) == dt::config::config_hash(c));
  CHECK(dt::config::config_hash(c) != dt::config::config_hash(plain));
}

TEST_CASE("config security: curve over ipc is fine; key files need not exist to parse") {
  const auto c = parse_text(std::string(kMinimal) +
                            "transport: {security: curve, keys: {secret: /nowhere/x.key}}\n");
  CHECK(c.transport.type == dt::config::TransportType::kIpc);
  CHECK(c.transport.secret_key == "/nowhere/x.key");
}

TEST_CASE("config security: transport.advertise is a host for tcp, written back by to_yaml") {
  const auto c = parse_text(std::string(kMinimal) +
                            "transport: {type: tcp, address: '0.0.0.0:29500', security: curve, "
                            "advertise: node7.cluster}\n");
  CHECK(c.transport.advertise == "node7.cluster");
  const auto again = dt::config::parse(dt::config::to_yaml(c), "<coordinator>", "/");
  CHECK(again.transport.advertise == "node7.cluster");
  CHECK(parse_text(kMinimal).transport.advertise.empty());
  CHECK(parse_text(std::string(kMinimal) + "transport: {type: tcp, advertise: '[fd00::5]'}\n")
            .transport.advertise == "[fd00::5]");
}

TEST_CASE("config security: the config hash covers what ranks train, not where each one is") {
  const std::string base = std::string(kMinimal) +
                           "transport: {type: tcp, security: curve, address: '{}', keys: "
                           "{secret: {}}}\n";
  auto with = [&](const std::string& address, const std::string& key) {
    std::string text = base;
    text.replace(text.find("{}"), 2, address);
    text.replace(text.find("{}"), 2, key);
    return parse_text(text);
  };
  const auto coordinator = with("0.0.0.0:29500", "/etc/dt/coordinator.key");
  auto worker = with("127.0.0.1:0", "/home/w/worker.key");
  worker.transport.remote_workers = 3;
  worker.transport.advertise = "node2";
  worker.transport.join_timeout_ms = 1000;
  worker.output.dir = "/elsewhere/runs/x";
  CHECK(dt::config::config_hash(worker) == dt::config::config_hash(coordinator));
  // The same file in another folder on another host: its data path differs, not its data.
  std::string text = base;
  text.replace(text.find("{}"), 2, "0.0.0.0:29500");
  text.replace(text.find("{}"), 2, "c.key");
  const auto elsewhere = dt::config::parse(text, "test.yaml", "/srv/other");
  CHECK(elsewhere.data.path == "/srv/other/data.csv");
  CHECK(dt::config::config_hash(elsewhere) == dt::config::config_hash(coordinator));
  worker.training.epochs += 1;
  CHECK(dt::config::config_hash(worker) != dt::config::config_hash(coordinator));
}

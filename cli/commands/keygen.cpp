// disttrain keygen PREFIX: a CURVE key pair for transport.security: curve. PREFIX.key holds the
// pair (mode 600: the secret stays with its owner), PREFIX.pub the public half to hand out; the
// public key is also printed. Keys are read back from files or the environment, never argv.

#include "cli/commands.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/log.hpp"
#include "transports/security.hpp"

#include <filesystem>

namespace dt::cli {
namespace {

struct KeygenArgs {
  std::string prefix;
  bool force = false;
};

int keygen(const KeygenArgs& args) {
  namespace fs = std::filesystem;
  const fs::path secret = args.prefix + ".key";
  const fs::path pub = args.prefix + ".pub";
  const fs::path dir = fs::absolute(secret).parent_path();
  if (!fs::is_directory(dir)) {
    fail<UsageError>("keygen {}: folder {} does not exist; create it first", args.prefix,
                     dir.string());
  }
  for (const auto& path : {secret, pub}) {
    if (fs::exists(path) && !args.force) {
      fail<UsageError>("keygen {}: {} exists; it may be in use, so it is not replaced: choose "
                       "another PREFIX, or give --force to overwrite it",
                       args.prefix, path.string());
    }
  }
  const auto pair = transport::generate_key_pair();
  files::write_atomic(secret, transport::key_pair_file_text(pair), 0600);
  const std::string name = fs::path(args.prefix).filename().string();
  files::write_atomic(pub, transport::public_key_file_text(pair, name), 0644);
  log::info("wrote {} (keep it private) and {} (hand it out)", secret.string(), pub.string());
  print(pair.public_key + "\n");
  return 0;
}

}  // namespace

void add_keygen(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<KeygenArgs>();
  auto* cmd = app.add_subcommand(
      "keygen", "write a CURVE key pair for transport.security curve: PREFIX.key and PREFIX.pub");
  cmd->add_option("prefix", args->prefix,
                  "where to write: PREFIX.key (secret, mode 600) and PREFIX.pub (public)")
      ->required();
  cmd->add_flag("--force", args->force, "replace existing files");
  cmd->callback([&action, args] { action = [args] { return keygen(*args); }; });
}

}  // namespace dt::cli

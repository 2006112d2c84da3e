// core/coordinator/rendezvous: which process of a launched job this is.

#include "base/error.hpp"
#include "core/coordinator/rendezvous.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

namespace {

std::optional<dt::rendezvous::Launch> launch(const std::map<std::string, std::string>& vars) {
  return dt::rendezvous::from_environment([&](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    (void)launch(vars);
  } catch (const dt::UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("rendezvous: no launcher, or a world of one, is an ordinary run") {
  CHECK_FALSE(launch({}).has_value());
  CHECK_FALSE(launch({{"RANK", "0"}, {"WORLD_SIZE", "1"}}).has_value());
  CHECK_FALSE(launch({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}).has_value());  // sbatch shell
  CHECK_FALSE(launch({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"DISTTRAIN_LAUNCHER", "none"}}));
}

TEST_CASE("rendezvous: each launcher's variables, in order, with MASTER_ADDR/PORT") {
  auto l = launch({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "node1"},
                   {"MASTER_PORT", "1234"}, {"OMPI_COMM_WORLD_RANK", "0"},
                   {"OMPI_COMM_WORLD_SIZE", "8"}});
  REQUIRE(l);
  CHECK(l->rank == 2);  // torchrun's variables come first
  CHECK(l->size == 4);
  CHECK(l->address == "node1:1234");
  CHECK(l->source.starts_with("torchrun"));

  l = launch({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "5"}});
  REQUIRE(l);
  CHECK(l->rank == 3);
  CHECK(l->address == "127.0.0.1:29500");  // torchrun's default port
  CHECK(l->source.starts_with("Open MPI"));

  l = launch({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MASTER_ADDR", "::1"}});
  REQUIRE(l);
  CHECK(l->address == "[::1]:29500");

  l = launch({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "3"}, {"SLURM_NTASKS", "6"}});
  REQUIRE(l);
  CHECK(l->size == 3);  // the step's tasks, not the allocation's
}

TEST_CASE("rendezvous: unusable variables are named") {
  CHECK(error_of({{"RANK", "1"}}).find("RANK is set but WORLD_SIZE is not") != std::string::npos);
  CHECK(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK=x") != std::string::npos);
  CHECK(error_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}}).find("not below WORLD_SIZE=4") !=
        std::string::npos);
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "99999"}})
            .find("MASTER_PORT=99999") != std::string::npos);
}

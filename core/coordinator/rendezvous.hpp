#pragma once
// Which process of a launched job this is, from the variables the launchers already set, so
// that one command line (`mpirun -np 4 disttrain run config.yaml`, `srun -n 4 ...`, torchrun or
// a Kubernetes PyTorchJob) starts a whole run: rank 0 becomes the coordinator, ranks 1..N-1
// its workers 0..N-2. Read in this order, the first complete set wins:
//   RANK, WORLD_SIZE                        torchrun, Kubeflow PyTorchJob
//   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE   Open MPI's mpirun
//   PMI_RANK, PMI_SIZE                      MPICH / Intel MPI (Hydra), Slurm's PMI
//   SLURM_PROCID, SLURM_STEP_NUM_TASKS      srun (not a batch script's own shell, which has
//                                           no job step)
// The coordinator's address is MASTER_ADDR:MASTER_PORT under every launcher (default
// 127.0.0.1:29500, torchrun's), as PyTorch's recipes set it. DISTTRAIN_LAUNCHER=none turns
// all of this off.

#include <functional>
#include <optional>
#include <string>

namespace dt::rendezvous {

struct Launch {
  std::string source;   // "torchrun (RANK, WORLD_SIZE)": for messages
  int rank = 0;         // this process among `size`
  int size = 1;
  std::string address;  // host:port of the coordinator (rank 0)
};

// Looks a variable up (std::getenv in the program; a map in tests).
using Lookup = std::function<std::optional<std::string>(const char* name)>;

// nullopt when no launcher started this process (or started only one). UsageError naming the
// variable when one is set but unusable (not a number, rank >= size, half of a pair).
[[nodiscard]] std::optional<Launch> from_environment(const Lookup& env);
[[nodiscard]] std::optional<Launch> from_environment();  // the process's own environment

}  // namespace dt::rendezvous

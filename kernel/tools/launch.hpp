// launch.hpp — how `umlos run` finds its place in a multi-rank job
// (docs/distributed.md): from options or the torchrun/Slurm environment
// (RANK, WORLD_SIZE, UMLOS_RENDEZVOUS), and `umlos run --nproc N`, which
// starts N local ranks of itself and stops them all when one fails or on
// Ctrl-C.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ranks.hpp"

namespace umlos {

// The world of this process: the options given (rank < 0, size < 1,
// rendezvous "" mean not given) over the environment (RANK, WORLD_SIZE,
// UMLOS_RENDEZVOUS, UMLOS_RENDEZVOUS_PREFIX, UMLOS_LISTEN_HOST). A single
// process when neither says anything. INVALID_ARGUMENT for a malformed or
// inconsistent value, naming it.
WorldOptions resolve_world(int32_t rank, int32_t size, const std::string& rendezvous, int64_t timeout_ms);

// Starts `nproc` ranks of this executable with `run_args` (the arguments
// after `umlos run`, without --nproc), meeting in a fresh private
// rendezvous folder, and waits. When a rank fails or dies, the others get
// `grace_ms` to stop on their own (they notice the lost peer), then are
// terminated; SIGINT/SIGTERM to the launcher are passed on. Returns the
// job's exit status: 0, or that of the first rank to fail.
int launch_local(int nproc, const std::vector<std::string>& run_args, int64_t grace_ms);

// A private folder for a rank other than 0 (which writes the run folder):
// TMPDIR/umlos-rank<R>-XXXXXX, mode 0700.
std::string private_rank_folder(int32_t rank);

}  // namespace umlos

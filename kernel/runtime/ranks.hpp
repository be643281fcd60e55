// ranks.hpp — the kernel's side of a multi-rank job (spec 004 0.R, VI):
// joining the job through the active driver's collectives, the
// deterministic barrier after each iteration that also compares every
// rank's state_fp with rank 0's, and the notes ranks leave in the
// rendezvous folder so that a failure names the rank that caused it
// (docs/distributed.md).
#pragma once

#include <cstdint>
#include <string>

#include "manifest.hpp"
#include "sha256.hpp"

namespace umlos {

class Host;

struct WorldOptions {
  int32_t rank = 0;
  int32_t size = 1;
  // Ranks of the job on this machine (LOCAL_WORLD_SIZE, as torchrun names
  // it; `umlos run --nproc N` sets N): whether a rank may give the state
  // fingerprint a thread of its own or hashes it in pairs
  // (spare_core_per_rank), and the driver's share of the CPUs
  // (umlos_comm_config.local_size).
  int32_t local_size = 1;
  std::string rendezvous;   // "file:/DIR"
  std::string prefix;       // keys of this job in the rendezvous
  std::string listen_host;  // "" the host name's address
  int64_t timeout_ms = 30000;
  // Whether this process is a rank of a job and goes through the driver's
  // collectives: more than one rank, or one rank given a rendezvous (a job
  // started with --nproc 1, or by a launcher that sets UMLOS_RENDEZVOUS).
  // A plain `umlos run` is no job and needs no collectives.
  bool joins() const { return size > 1 || !rendezvous.empty(); }
};

// Joins the job (WorldOptions::joins) through the active driver, checks that every
// rank runs rank 0's manifest (RANK_DIVERGENCE naming both hashes), and
// records rank and size in the host.
void join_world(Host& host, const Manifest& manifest, const WorldOptions& world);

// The barrier after action dispatch: every rank's state_fp, gathered; a
// rank whose digest differs from rank 0's fails the job with
// RANK_DIVERGENCE naming both ranks and digests.
void check_ranks_agree(Host& host, const Digest& state_fp, int64_t t);

// Leaves a one-line note about `rank` ("rank 2 failed CODE: ...", or the
// launcher's "rank 1 died: killed by signal 9") in the rendezvous folder,
// written whole (temporary file, fsync, rename). Best effort; nothing for a
// single process or a rendezvous that is not a folder.
void note_rank_failure(const WorldOptions& world, int32_t rank, const std::string& line);

// The notes of the other ranks ("" when none), waiting up to `wait_ms` for
// one that is not itself a lost peer (COLLECTIVE_FAILURE): the rank that
// lost a peer learns which one it was and why.
std::string failed_ranks(const WorldOptions& world, int64_t wait_ms);

}  // namespace umlos

// crash_record.hpp — a failure record for a run whose process dies of a
// signal (a module's segmentation fault, abort(), illegal instruction…),
// where no exception can carry the failure to the procedure. While armed,
// a handler on an alternate stack writes RUN_DIR/failure.json naming the
// operator that was running and the iteration, using async-signal-safe
// calls only (open, write, fsync, renameat on the held run folder), then
// lets the signal end the process as it would have: the exit status the
// shell sees is 128 + the signal number, which the record states.
#pragma once

#include <cstdint>
#include <string>

namespace umlos::crash {

// Installs the handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT.
// `run_dir_fd`: the held run folder; `replay_token_hex`: the run's token.
void arm(int run_dir_fd, const std::string& replay_token_hex);
// Restores the previous handlers.
void disarm();

// The call now running (the operator's name, static storage) and t;
// in_module tells a crash inside a module (CONTRACT_VIOLATION) from one in
// the kernel's own code (INTERNAL).
void enter_call(const char* op_name, int64_t t);
void leave_call();

}  // namespace umlos::crash

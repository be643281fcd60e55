// tape.hpp — the run tape (spec 004 IV UML_OS.IO.WriteTape_v1): one
// fixed-width binary event per iteration in RUN_DIR/tape.bin, grouped in
// blocks of 512 events whose SHA-256 digests are chained into tape_digest.
//
// File layout (docs/checkpoint.md, "The tape"); every integer big-endian:
//   header, 16 bytes: "UMLTAPE1", u32 block_size (512), u32 event_size (64)
//   event,  64 bytes: "UTEV", u64 t, u8 action, u8 state, u8 flags,
//                     u8 0, f64 loss_total bits, state_fp[32], u32 0,
//                     u32 CRC-32 (zlib) of the event's first 60 bytes
// Event i (0-based) belongs to iteration t = i + 1.
// Digest chain: d_0 = SHA-256("UML_OS.IO.WriteTape_v1"),
//   d_k = SHA-256(d_{k-1} || block_k) for every complete block (512 events,
//   32768 bytes); tape_digest = d_K when no events are pending, else
//   SHA-256(d_K || pending event bytes).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "sha256.hpp"

namespace umlos {

inline constexpr uint64_t kTapeBlockSize = 512;     // events per block (WriteTape_v1 BLOCK_SIZE)
inline constexpr uint64_t kTapeMaxEvents = 500000;  // WriteTape_v1 max_events
inline constexpr uint64_t kTapeEventBytes = 64;
inline constexpr uint64_t kTapeHeaderBytes = 16;

struct TapeEvent {
  int64_t t = 0;
  uint8_t action = 0;                // index into (optimize, probe, switch, augment)
  uint8_t state = 0;                 // 0 = S_P, 1 = S_PROTO
  std::optional<double> loss_total;  // absent: flags bit 0 clear, bits 0
  Digest state_fp{};
};

// What a checkpoint keeps of a TapeWriter so a resumed run writes the same
// bytes and digest (kernel/runtime/proto/checkpoint.proto TapeState).
struct TapeState {
  uint64_t events = 0;
  Digest chain{};                // d_K over the complete blocks
  std::vector<uint8_t> pending;  // (events mod 512) * 64 bytes
  uint64_t file_bytes = 0;       // header + events * 64
};

// The encoded 64 bytes of one event.
std::vector<uint8_t> encode_tape_event(const TapeEvent& e);
// d_0 of the chain.
Digest tape_chain_start();

class TapeWriter {
 public:
  TapeWriter() = default;
  ~TapeWriter();
  TapeWriter(const TapeWriter&) = delete;
  TapeWriter& operator=(const TapeWriter&) = delete;

  // A new tape: creates `path` exclusively (ALREADY_EXISTS when anything,
  // a symbolic link included, is there) and writes the header.
  void open(const std::string& path);
  // The same for the file `name` of the folder open as `dir_fd` (a held
  // run folder); `label` names it in messages.
  void open(int dir_fd, const std::string& name, const std::string& label);
  // Continues a tape from a checkpoint: checks that `path` holds at least
  // state.file_bytes bytes whose blocks give state.chain and whose tail is
  // state.pending, then truncates it to state.file_bytes. CHECKPOINT_INVALID
  // (naming the file and the field) when they disagree.
  // The file is opened without following a link (NAMESPACE_VIOLATION).
  void resume(const std::string& path, const TapeState& state);
  void resume(int dir_fd, const std::string& name, const std::string& path, const TapeState& state);
  // Appends the event of iteration e.t (must be events() + 1, else
  // INVALID_ARGUMENT); TAPE_OVERFLOW past 500000 events. Bytes reach the
  // OS at each completed block, state() and close() (those two also fsync);
  // resume relies only on what a checkpoint's state() covered.
  void append(const TapeEvent& e);
  // The state for a checkpoint; fsyncs the file first.
  TapeState state();
  // tape_digest of the events written so far.
  Digest digest() const;
  // Flushes, fsyncs and closes; returns tape_digest. Idempotent.
  Digest close();

  uint64_t events() const { return events_; }
  bool is_open() const { return file_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  void write_bytes(const void* data, size_t n);
  void sync();
  std::string path_;
  FILE* file_ = nullptr;
  uint64_t events_ = 0;
  Digest chain_{};
  std::vector<uint8_t> pending_;
};

struct TapeContents {
  std::vector<TapeEvent> events;
  uint64_t blocks = 0;  // complete blocks
  Digest digest{};      // tape_digest
};

// Reads and validates a tape ("tape symbol validation", I.E): header magic,
// block and event sizes, length a whole number of events, every event's
// magic, CRC, reserved bytes, action (0..3), state (0..1), flags and
// t = index + 1; and the digest chain. Errors are DATA_LOSS naming the file,
// the event index and byte offset, the field, expected and actual.
TapeContents read_tape(const std::string& path);

}  // namespace umlos

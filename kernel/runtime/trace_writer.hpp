// trace_writer.hpp — RUN_DIR/trace.jsonl (spec 004 0.K), written by the
// procedure one whole record at a time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "run_folder.hpp"

namespace umlos {

// trace.jsonl, one JSON record per line. Every record goes out with one
// write at the end of the whole records; a write that fails part-way (a
// full disk) is cut back off, so the file never ends in part of a line and
// the failure record that follows starts a line of its own.
class TraceWriter {
 public:
  // A new trace: the file is created (never found, never a link).
  void open(const RunFolder& folder);
  // Resume: continue the trace (already cut back to the checkpoint's length).
  void open_append(const RunFolder& folder);
  // Bytes in the file, synced to disk (a checkpoint records it).
  uint64_t synced_bytes();
  void write(const nlohmann::json& record);
  void close();
  ~TraceWriter() { close(); }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t good_ = 0;  // bytes of whole records
};

}  // namespace umlos

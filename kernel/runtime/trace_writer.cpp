// trace_writer.cpp — whole records into trace.jsonl (trace_writer.hpp).
#include "trace_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"

namespace umlos {

using json = nlohmann::json;

void TraceWriter::open(const RunFolder& folder) {
  path_ = folder.file("trace.jsonl");
  fd_ = folder.create_file("trace.jsonl");
  good_ = 0;
}

void TraceWriter::open_append(const RunFolder& folder) {
  path_ = folder.file("trace.jsonl");
  fd_ = folder.open_file("trace.jsonl", O_WRONLY);
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  if (end < 0) throw Failure(UMLOS_IO_ERROR, "cannot seek in trace '" + path_ + "': " + std::strerror(errno));
  good_ = static_cast<uint64_t>(end);
}

uint64_t TraceWriter::synced_bytes() {
  if (fd_ < 0) return 0;
  if (::fsync(fd_) != 0) throw Failure(UMLOS_IO_ERROR, "syncing trace '" + path_ + "' failed: " + std::strerror(errno));
  return good_;
}

void TraceWriter::write(const json& record) {
  if (fd_ < 0) return;
  const std::string line = record.dump() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::pwrite(fd_, line.data() + done, line.size() - done, static_cast<off_t>(good_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      const bool cut = ::ftruncate(fd_, static_cast<off_t>(good_)) == 0;
      const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
      throw Failure(full ? UMLOS_RESOURCE_EXHAUSTED : UMLOS_IO_ERROR,
                    "writing trace '" + path_ + "' failed: " + std::strerror(err) + " (" +
                        (cut ? "the partial record was removed" : "a partial record may remain") + ")");
    }
    done += static_cast<size_t>(n);
  }
  good_ += line.size();
}

void TraceWriter::close() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace umlos

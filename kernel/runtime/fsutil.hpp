// fsutil.hpp — whole-file reads and crash-safe writes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace umlos {

// "a FIFO (named pipe)", "a socket", ...: what a file that is not a regular
// file is, for the refusals that name it (every reader and the module loader).
const char* file_type_name(mode_t mode);

// Size limits of the whole-file readers (docs/security.md lists every
// reader and its limit). A reader refuses a file above its limit before
// reading it, so a huge or endless input cannot exhaust memory.
inline constexpr uint64_t kDefaultReadLimit = uint64_t{1} << 30;    // 1 GiB
inline constexpr uint64_t kManifestReadLimit = uint64_t{16} << 20;  // 16 MiB
inline constexpr uint64_t kDefaultGunzipLimit = uint64_t{1} << 30;  // 1 GiB decompressed

// Reads a whole regular file of at most `limit` bytes. The file is opened
// non-blocking and checked with fstat before any read, so a FIFO, a device
// (/dev/zero) or a socket is refused at once instead of hanging or growing
// without end. Failures, each naming the file:
//   INVALID_ARGUMENT    not a regular file (names its type: FIFO, device, ...)
//   RESOURCE_EXHAUSTED  larger than `limit` (names the limit and the size)
//   PERMISSION_DENIED   EACCES / EPERM
//   IO_ERROR            any other OS error (missing file, a folder), with errno text
std::vector<uint8_t> read_file(const std::string& path, uint64_t limit = kDefaultReadLimit);
std::string read_text_file(const std::string& path, uint64_t limit = kDefaultReadLimit);

// Write to "<path>.tmp.<pid>" (created exclusively, never through a
// symbolic link), fsync it, rename over `path`, fsync the folder: readers
// see the old file or the whole new one, never a part.
void write_file_atomic(const std::string& path, const void* data, size_t size);
inline void write_file_atomic(const std::string& path, const std::string& s) {
  write_file_atomic(path, s.data(), s.size());
}
inline void write_file_atomic(const std::string& path, const std::vector<uint8_t>& b) {
  write_file_atomic(path, b.data(), b.size());
}
// The same inside the folder open as `dir_fd` (a run folder held by the
// run): `name` is one path component; `label` names the file in messages.
// The temporary "<name>.tmp.<pid>" is created with O_EXCL | O_NOFOLLOW, so
// nothing planted in the folder is written through.
void write_file_atomic_at(int dir_fd, const std::string& name, const std::string& label, const void* data, size_t size);

// The decompressed bytes of a gzip stream read from `path` (for messages):
// DATA_LOSS naming the file when the stream is corrupt or truncated,
// RESOURCE_EXHAUSTED when it decompresses to more than `limit` bytes (a
// gzip bomb is stopped at the limit, not after it filled memory).
std::string gunzip(const std::vector<uint8_t>& bytes, const std::string& path, uint64_t limit = kDefaultGunzipLimit);

}  // namespace umlos

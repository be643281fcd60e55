// fsutil.hpp — whole-file reads and crash-safe writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace umlos {

// Throws umlos::Failure(UMLOS_IO_ERROR) naming the file and errno text.
std::vector<uint8_t> read_file(const std::string& path);
std::string read_text_file(const std::string& path);

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
void write_file_atomic_at(int dir_fd, const std::string& name, const std::string& label, const void* data,
                          size_t size);

// The decompressed bytes of a gzip stream read from `path` (for messages):
// DATA_LOSS naming the file when the stream is corrupt or truncated.
std::string gunzip(const std::vector<uint8_t>& bytes, const std::string& path);

}  // namespace umlos

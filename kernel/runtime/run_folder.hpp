// run_folder.hpp — the folder of one run (trace, tape, checkpoints,
// manifest copies, failure record), held by the process that runs it.
//
// A run writes only into a folder it holds: created by it (or found empty),
// opened without following a symbolic link, and locked (flock on the
// folder's descriptor) for as long as the process lives, so a second
// `umlos run` or `umlos run --resume` of the same folder is refused while
// the first one runs. Every run file is opened relative to the held
// descriptor with O_NOFOLLOW; new files with O_EXCL. docs/checkpoint.md,
// "Who writes into a run folder".
#pragma once

#include <string>
#include <vector>

namespace umlos {

class RunFolder {
 public:
  RunFolder() = default;
  ~RunFolder();  // closing the descriptor releases the lock
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  // A new run: creates `path` (its parents as needed) and holds it.
  // Refused, touching nothing inside: NAMESPACE_VIOLATION when `path` is a
  // symbolic link or not a folder; FAILED_PRECONDITION when another process
  // holds it; ALREADY_EXISTS when it holds anything but the failure record
  // of a run that failed before its first iteration (that one is removed).
  void create(const std::string& path);

  // `umlos run --resume`: holds the existing folder `path`. NOT_FOUND when
  // it does not exist; NAMESPACE_VIOLATION when it, or any entry in it or
  // in its checkpoints/ folder, is a symbolic link or other non-regular
  // file; FAILED_PRECONDITION when another process holds it. Then removes
  // the temporary files an interrupted atomic write left behind
  // ("<name>.tmp.<digits>", in the folder and in checkpoints/).
  void take_existing(const std::string& path);

  bool held() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  // A new run file, created exclusively (O_EXCL | O_NOFOLLOW), write-only.
  int create_file(const std::string& name) const;
  // An existing run file for `flags` (O_RDWR, O_WRONLY | O_APPEND, ...),
  // never through a link, and only when it is a regular file.
  int open_file(const std::string& name, int flags) const;
  // Renames `from` to `to` inside the folder, never replacing an existing
  // `to` (false when it exists).
  bool rename_no_replace(const std::string& from, const std::string& to) const;
  bool has(const std::string& name) const;
  // Removes one entry (a file; never follows a link). Absent is fine.
  void remove_file(const std::string& name) const;
  // write_file_atomic_at inside the folder.
  void write_atomic(const std::string& name, const std::string& bytes) const;
  // Removes every entry (a new run that failed before its first iteration
  // leaves only its failure record).
  void clear() const;
  // The names of the stale temporary files removed by take_existing.
  const std::vector<std::string>& removed_temporaries() const { return removed_; }

 private:
  void open_and_lock(const std::string& path, bool fresh);
  void check_and_clean();
  int fd_ = -1;
  std::string path_;
  std::vector<std::string> removed_;
};

// "<name>.tmp.<digits>": the temporary name of write_file_atomic.
bool is_atomic_write_temporary(const std::string& name);

}  // namespace umlos

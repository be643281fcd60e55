// run_folder.cpp — creating, locking and checking a run folder; run files
// opened relative to its descriptor, never through a symbolic link.
#include "run_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "error.hpp"
#include "fsutil.hpp"

namespace umlos {
namespace fs = std::filesystem;

namespace {

std::string os_error(int err) { return std::strerror(err); }

// "a/b/" -> "a/b": a trailing slash would make the kernel follow a link
// in the last component despite O_NOFOLLOW.
std::string without_trailing_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

struct DirCloser {
  void operator()(DIR* d) const {
    if (d) ::closedir(d);
  }
};

// The names in the folder open as `fd` (without "." and ".."), read
// through a duplicate so `fd` stays usable.
std::vector<std::string> entries(int fd, const std::string& label) {
  const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) throw Failure(UMLOS_IO_ERROR, "cannot read run folder '" + label + "': " + os_error(errno));
  std::unique_ptr<DIR, DirCloser> dir(::fdopendir(dup));
  if (!dir) {
    const int err = errno;
    ::close(dup);
    throw Failure(UMLOS_IO_ERROR, "cannot read run folder '" + label + "': " + os_error(err));
  }
  ::rewinddir(dir.get());
  std::vector<std::string> out;
  errno = 0;
  while (dirent* e = ::readdir(dir.get())) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  return out;
}

// What the entry `name` of the folder `fd` is, without following a link.
mode_t kind_of(int fd, const std::string& name, const std::string& label) {
  struct stat st {};
  if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    throw Failure(UMLOS_IO_ERROR, "cannot stat '" + label + "/" + name + "': " + os_error(errno));
  }
  return st.st_mode & S_IFMT;
}

std::string kind_name(mode_t k) {
  switch (k) {
    case S_IFLNK:
      return "a symbolic link";
    case S_IFDIR:
      return "a folder";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    default:
      return "a regular file";
  }
}

[[noreturn]] void refuse_entry(const std::string& label, const std::string& name, mode_t k) {
  throw Failure(UMLOS_NAMESPACE_VIOLATION,
                "run folder '" + label + "': '" + name + "' is " + kind_name(k) +
                    "; a run folder holds only regular files (and the folder checkpoints/), and a run never "
                    "writes through a link: remove it");
}

}  // namespace

bool is_atomic_write_temporary(const std::string& name) {
  const auto at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0 || at + 5 >= name.size()) return false;
  for (size_t i = at + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

RunFolder::~RunFolder() {
  if (fd_ >= 0) ::close(fd_);
}

void RunFolder::open_and_lock(const std::string& path, bool fresh) {
  path_ = without_trailing_slashes(path);
  const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (err == ELOOP || (err == ENOTDIR && ::lstat(path_.c_str(), &st) == 0)) {
      const mode_t k = ::lstat(path_.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : S_IFLNK;
      throw Failure(UMLOS_NAMESPACE_VIOLATION, "run folder '" + path_ + "' is " + kind_name(k) +
                                                   ", not a folder; a run writes only into a real folder");
    }
    if (err == ENOENT) throw Failure(UMLOS_NOT_FOUND, "run folder '" + path_ + "' does not exist");
    throw Failure(UMLOS_IO_ERROR, "cannot open run folder '" + path_ + "': " + os_error(err));
  }
  fd_ = fd;
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw Failure(UMLOS_FAILED_PRECONDITION,
                    "run folder '" + path_ + "' is held by another running umlos process (" +
                        (fresh ? "a run of the same job" : "the run itself, or another resume") +
                        "); wait for it to end, then resume it with `umlos run --resume " + path_ + "`");
    }
    throw Failure(UMLOS_IO_ERROR, "cannot lock run folder '" + path_ + "': " + os_error(err));
  }
}

void RunFolder::create(const std::string& path) {
  const std::string p = without_trailing_slashes(path);
  std::error_code ec;
  const fs::path parent = fs::path(p).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) throw Failure(UMLOS_IO_ERROR, "cannot create the folders above run folder '" + p + "': " + ec.message());
  }
  if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) {
    throw Failure(UMLOS_IO_ERROR, "cannot create run folder '" + p + "': " + os_error(errno));
  }
  // Created now or found: either way it is checked only once held, so two
  // processes racing for one folder cannot both find it empty.
  open_and_lock(p, true);
  std::vector<std::string> names = entries(fd_, path_);
  // What a run that failed before its first iteration leaves: its failure
  // record only. Anything else is another run's work.
  const bool only_failure = names.size() == 1 && names[0] == "failure.json" && kind_of(fd_, names[0], path_) == S_IFREG;
  if (!names.empty() && !only_failure) {
    std::string shown;
    for (size_t i = 0; i < names.size() && i < 4; ++i) shown += (i ? ", " : "") + names[i];
    if (names.size() > 4) shown += ", ...";
    ::close(fd_);
    fd_ = -1;
    throw Failure(UMLOS_ALREADY_EXISTS,
                  "run folder '" + path_ + "' already holds a run (" + shown +
                      "); a run never writes into another run's folder: continue it with `umlos run --resume " + path_ +
                      "`, remove it, or give another folder with --run-dir");
  }
  if (only_failure) remove_file("failure.json");
}

void RunFolder::take_existing(const std::string& path) {
  open_and_lock(path, false);
  try {
    check_and_clean();
  } catch (...) {
    // A folder refused here is let go: not even a failure record goes in.
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

void RunFolder::check_and_clean() {
  for (const std::string& n : entries(fd_, path_)) {
    const mode_t k = kind_of(fd_, n, path_);
    if (n == "checkpoints" && k == S_IFDIR) {
      const int cfd = ::openat(fd_, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (cfd < 0) throw Failure(UMLOS_IO_ERROR, "cannot open '" + file(n) + "': " + os_error(errno));
      struct Close {
        int fd;
        ~Close() { ::close(fd); }
      } close_cfd{cfd};
      for (const std::string& c : entries(cfd, file(n))) {
        const mode_t ck = kind_of(cfd, c, file(n));
        if (ck != S_IFREG) refuse_entry(path_, n + "/" + c, ck);
        if (is_atomic_write_temporary(c)) {
          if (::unlinkat(cfd, c.c_str(), 0) != 0) {
            throw Failure(UMLOS_IO_ERROR, "cannot remove stale '" + file(n + "/" + c) + "': " + os_error(errno));
          }
          removed_.push_back(n + "/" + c);
        }
      }
      continue;
    }
    if (k != S_IFREG) refuse_entry(path_, n, k);
    if (is_atomic_write_temporary(n)) {
      remove_file(n);
      removed_.push_back(n);
    }
  }
}

int RunFolder::create_file(const std::string& name) const {
  const int fd = ::openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) {
      throw Failure(UMLOS_ALREADY_EXISTS, "cannot create '" + file(name) + "': it already exists (" +
                                              kind_name(kind_of(fd_, name, path_)) + "); a run never reuses a file");
    }
    throw Failure(UMLOS_IO_ERROR, "cannot create '" + file(name) + "': " + os_error(err));
  }
  return fd;
}

int RunFolder::open_file(const std::string& name, int flags) const {
  const int fd = ::openat(fd_, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) refuse_entry(path_, name, S_IFLNK);
    if (err == ENOENT) throw Failure(UMLOS_NOT_FOUND, "'" + file(name) + "' does not exist");
    throw Failure(UMLOS_IO_ERROR, "cannot open '" + file(name) + "': " + os_error(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse_entry(path_, name, st.st_mode & S_IFMT);
  }
  // O_NONBLOCK only kept a FIFO from hanging the open; a regular file
  // ignores it, but the descriptor goes back to blocking mode.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool RunFolder::has(const std::string& name) const {
  struct stat st {};
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

bool RunFolder::rename_no_replace(const std::string& from, const std::string& to) const {
  if (::renameat2(fd_, from.c_str(), fd_, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno == EEXIST) return false;
  throw Failure(UMLOS_IO_ERROR, "cannot rename '" + file(from) + "' to '" + to + "': " + os_error(errno));
}

void RunFolder::remove_file(const std::string& name) const {
  if (::unlinkat(fd_, name.c_str(), 0) != 0 && errno != ENOENT) {
    throw Failure(UMLOS_IO_ERROR, "cannot remove '" + file(name) + "': " + os_error(errno));
  }
}

void RunFolder::write_atomic(const std::string& name, const std::string& bytes) const {
  write_file_atomic_at(fd_, name, file(name), bytes.data(), bytes.size());
}

void RunFolder::clear() const {
  for (const std::string& n : entries(fd_, path_)) {
    std::error_code ec;
    if (kind_of(fd_, n, path_) == S_IFDIR) {
      // Only checkpoints/ can be a folder here, made by this run; remove_all
      // removes links inside it and never follows them.
      fs::remove_all(fs::path(path_) / n, ec);
    } else {
      ::unlinkat(fd_, n.c_str(), 0);
    }
  }
}

}  // namespace umlos

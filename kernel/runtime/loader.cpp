// loader.cpp — verified module loading. See loader.hpp and docs/abi.md.
//
// The races this closes. Hashing a file and then dlopen()ing it by path lets
// anyone who can write the file swap it in between. Hashing a mapping of the
// file and copying the same mapping is no better: unwritten private pages
// are the page cache, so an in-place writer changes the bytes between the
// two reads (the pin passes on the old bytes, the new ones load), and a file
// shrunk meanwhile turns the reads into SIGBUS. So the file is never mapped:
// it is read() into an anonymous memfd, the memfd is sealed against any
// change, the digest is computed from the sealed memfd, compared with the
// pin, and that memfd is what gets mapped (dlopen of /proc/self/fd/N).
// read_sealed_module() is the only way from a module file to bytes that may
// be trusted: loading, `umlos hash` and `umlos manifest pin` all use it.
#include "loader.hpp"

#include <cctype>

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/dll/shared_library.hpp>
#include <cstring>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "error.hpp"
#include "fsutil.hpp"

namespace umlos {
namespace {

// The last component of a path (the whole path without a slash).
std::string_view basename_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string errno_text(int err) { return std::strerror(err); }

struct OwnedFd {
  int fd = -1;
  explicit OwnedFd(int f) : fd(f) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
};

// What keeps a module mapped. Modules are never unloaded (unloading
// code whose static state may still be in use is unsafe): the handle is intentionally leaked at exit rather than
// dlclose()d mid-process. The memfd is closed as soon as the library is
// mapped: the mappings keep its pages, the descriptor is not needed.
struct ModuleHandle {
  boost::dll::shared_library library;
};

// The handles of the modules loaded so far (never unloaded) and of the one
// being loaded. A handle is unregistered when its load is refused, before
// the library is closed and its handle value can be reused.
class LiveHandle {
 public:
  LiveHandle(void* native, const std::string& path) : native_(native) {
    std::lock_guard<std::mutex> lock(mu());
    if (!handles().insert(native_).second) {
      native_ = nullptr;
      throw Failure(UMLOS_INTERNAL, "module '" + path +
                                        "': the dynamic loader returned a module loaded earlier instead of "
                                        "mapping the verified copy");
    }
  }
  LiveHandle(const LiveHandle&) = delete;
  LiveHandle& operator=(const LiveHandle&) = delete;
  ~LiveHandle() {
    if (native_ == nullptr) return;
    std::lock_guard<std::mutex> lock(mu());
    handles().erase(native_);
  }
  // The load succeeded: keep the module (and its handle's entry) forever.
  void keep(std::shared_ptr<ModuleHandle> handle) {
    std::lock_guard<std::mutex> lock(mu());
    kept().push_back(std::move(handle));
    native_ = nullptr;
  }

 private:
  // Leaked on purpose: loaded modules outlive static destruction.
  static std::mutex& mu() {
    static std::mutex* m = new std::mutex();
    return *m;
  }
  static std::set<void*>& handles() {
    static std::set<void*>* h = new std::set<void*>();
    return *h;
  }
  static std::vector<std::shared_ptr<ModuleHandle>>& kept() {
    static auto* k = new std::vector<std::shared_ptr<ModuleHandle>>();
    return *k;
  }
  void* native_;
};

[[noreturn]] void not_a_file(const std::string& path, const std::string& what) {
  throw Failure(UMLOS_MODULE_NOT_FOUND, "module '" + path + "': not a regular file (" + what +
                                            "); a module is a shared-library file (a symbolic link to one is fine)");
}

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw Failure(err == ENOSPC || err == ENOMEM ? UMLOS_RESOURCE_EXHAUSTED : UMLOS_IO_ERROR,
                    "module '" + path + "': copying into memory failed: " + errno_text(err));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Seals the memfd against any change. F_SEAL_WRITE answers EBUSY while a
// page of the memfd has a reference beyond its mappings, and this memfd
// has no mapping at all (it was filled with write()): such references are
// the kernel's own and short-lived (pages of the write still in another
// CPU's LRU batch; the kernel waits ~150 ms for them, and on a loaded
// machine that was not always enough: a sanitizer test run refused a
// module so). A few more tries, then the refusal stands.
void seal(int fd, const std::string& path) {
  constexpr int kTries = 5;
  for (int attempt = 1;; ++attempt) {
    if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0) return;
    const int err = errno;
    if ((err == EBUSY || err == EINTR) && attempt < kTries) {
      ::usleep(20000);
      continue;
    }
    throw Failure(UMLOS_MODULE_LOAD_FAILED, "module '" + path + "': sealing the memfd failed: " + errno_text(err) +
                                                (err == EBUSY ? " (after " + std::to_string(kTries) + " tries)" : ""));
  }
}

// The module's bytes, read once from `path` into a sealed memfd, and the
// SHA-256 of the sealed memfd's contents: no later change to the file can
// reach either. Symbolic links are followed (the pin covers the bytes, not
// the name). The file is opened non-blocking and its type checked on the
// descriptor before a byte is read, so a FIFO or a device fails at once.
struct SealedModule {
  OwnedFd memfd{-1};
  Digest digest{};
  uint64_t size = 0;
};

void read_sealed_module(const std::string& path, SealedModule& out) {
  OwnedFd file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.fd < 0) {
    const int err = errno;
    if (err == ENXIO) not_a_file(path, "a socket");  // open() of a socket file
    throw Failure(UMLOS_MODULE_NOT_FOUND, "module '" + path + "': cannot open: " + errno_text(err) +
                                              " (check the path in the manifest; relative paths are resolved "
                                              "against the manifest's folder)");
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) {
    const int err = errno;
    throw Failure(UMLOS_IO_ERROR, "module '" + path + "': cannot stat: " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) not_a_file(path, file_type_name(st.st_mode));
  auto too_large = [&](uint64_t bytes) {
    return Failure(UMLOS_MODULE_LOAD_FAILED, "module '" + path + "': " + std::to_string(bytes) +
                                                 " bytes is larger than the " + std::to_string(kMaxModuleFileBytes) +
                                                 "-byte (2 GiB) limit for a module file");
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxModuleFileBytes) throw too_large(static_cast<uint64_t>(st.st_size));

  // The memfd is named after the module's file ("umlos-module:libx.so"), so
  // /proc/PID/maps, perf and debuggers say which module a mapping holds.
  const std::string memfd_name = "umlos-module:" + std::string(basename_of(path)).substr(0, 200);
  out.memfd.fd = ::memfd_create(memfd_name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (out.memfd.fd < 0) {
    const int err = errno;
    throw Failure(err == EMFILE || err == ENFILE || err == ENOMEM ? UMLOS_RESOURCE_EXHAUSTED : UMLOS_MODULE_LOAD_FAILED,
                  "module '" + path + "': memfd_create failed: " + errno_text(err) +
                      " (verified loading needs Linux memfd with sealing)");
  }
  // read() until end of file, whatever the size was at fstat: a file that
  // changes meanwhile gives other bytes, which the pin then refuses.
  std::vector<char> buf(1u << 20);
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(file.fd, buf.data(), buf.size());
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw Failure(UMLOS_IO_ERROR, "module '" + path + "': cannot read: " + errno_text(err));
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > kMaxModuleFileBytes) throw too_large(total);
    write_all(out.memfd.fd, buf.data(), static_cast<size_t>(n), path);
  }
  seal(out.memfd.fd, path);
  // Hash what will be mapped: the sealed memfd, read back from its start.
  Sha256 hasher;
  uint64_t hashed = 0;
  for (;;) {
    const ssize_t n = ::pread(out.memfd.fd, buf.data(), buf.size(), static_cast<off_t>(hashed));
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw Failure(UMLOS_IO_ERROR, "module '" + path + "': reading the sealed copy failed: " + errno_text(err));
    }
    if (n == 0) break;
    hasher.update(buf.data(), static_cast<size_t>(n));
    hashed += static_cast<uint64_t>(n);
  }
  if (hashed != total) {
    throw Failure(UMLOS_INTERNAL, "module '" + path + "': the sealed copy holds " + std::to_string(hashed) +
                                      " bytes, " + std::to_string(total) + " were written");
  }
  out.digest = hasher.finish();
  out.size = total;
}

// The name dlopen() is given for a memfd. glibc hands back an already loaded
// object whose name equals the one asked for, and memfd numbers are reused
// once closed, so every load gets a name never used before: the counter k is
// spelled into the path as "./" (bit 1) and "/" (bit 0) components, which
// the kernel resolves to the same /proc/self/fd/N.
std::string unique_fd_path(int fd) {
  static std::atomic<uint64_t> loads{0};
  const uint64_t k = loads.fetch_add(1);
  std::string path = "/proc/self/fd/";
  if (k > 0) {
    int top = 63;
    while (((k >> top) & 1u) == 0) --top;
    for (int b = top; b >= 0; --b) path += ((k >> b) & 1u) ? "./" : "/";
  }
  return path + std::to_string(fd);
}

std::string abi_text(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

bool valid_fq_name(const char* name) {
  static const std::regex re("^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+_v[0-9]+$");
  return name != nullptr && std::regex_match(name, re);
}

[[noreturn]] void bad_descriptor(const std::string& path, const std::string& what) {
  throw Failure(UMLOS_MODULE_DESCRIPTOR_INVALID, "module '" + path + "': malformed descriptor: " + what +
                                                     " (the module must be rebuilt with a correct descriptor; "
                                                     "`umlos modules inspect` shows what it declares)");
}

void check_size(const std::string& path, const std::string& what, size_t actual, size_t minimum) {
  if (actual < minimum) {
    bad_descriptor(
        path, what + ".struct_size is " + std::to_string(actual) + ", expected at least " + std::to_string(minimum));
  }
}

void validate_value_decls(const std::string& path, const std::string& op, const char* which,
                          const umlos_value_decl* decls, uint32_t n) {
  if (n > 0 && decls == nullptr) {
    bad_descriptor(path,
                   "operator '" + op + "': " + which + " count is " + std::to_string(n) + " but the array is NULL");
  }
  std::set<std::string> seen;
  for (uint32_t i = 0; i < n; ++i) {
    const umlos_value_decl& d = decls[i];
    std::string where = "operator '" + op + "' " + which + "[" + std::to_string(i) + "]";
    if (d.name == nullptr || d.name[0] == '\0') bad_descriptor(path, where + ": name is NULL or empty");
    if (!seen.insert(d.name).second) bad_descriptor(path, where + ": duplicate name '" + d.name + "'");
    const char* star = std::strchr(d.name, '*');
    size_t len = std::strlen(d.name);
    if (star && !(star == d.name + len - 1 && len >= 3 && d.name[len - 2] == '.')) {
      bad_descriptor(path, where + ": name '" + d.name + "' may contain '*' only as a final \".*\" (a value family)");
    }
    if (d.dtype < UMLOS_DTYPE_ANY || d.dtype > UMLOS_DTYPE_U64) {
      bad_descriptor(path, where + ": dtype " + std::to_string(d.dtype) + " is not a umlos_dtype");
    }
    if (d.rank != UMLOS_RANK_ANY && d.rank > UMLOS_MAX_RANK) {
      bad_descriptor(path, where + ": rank " + std::to_string(d.rank) + " exceeds UMLOS_MAX_RANK (8)");
    }
  }
}

void validate_operator(const std::string& path, const umlos_operator_desc* op, uint32_t index) {
  std::string where = "operators[" + std::to_string(index) + "]";
  if (op == nullptr) bad_descriptor(path, where + " is NULL");
  check_size(path, where, op->struct_size, UMLOS_OPERATOR_DESC_SIZE_V1_0);
  if (!valid_fq_name(op->name)) {
    bad_descriptor(path, where + ".name is '" + std::string(op->name ? op->name : "(null)") +
                             "', expected a fully-qualified name like UML_OS.Model.Encode_v1");
  }
  std::string name = op->name;
  if (op->purity < UMLOS_PURE || op->purity > UMLOS_IO) {
    bad_descriptor(path, "operator '" + name + "': purity " + std::to_string(op->purity) +
                             " is not PURE(1), STATEFUL(2) or IO(3)");
  }
  if (op->rng_stream < UMLOS_STREAM_NONE || op->rng_stream > UMLOS_STREAM_MISC) {
    bad_descriptor(path, "operator '" + name + "': rng_stream " + std::to_string(op->rng_stream) +
                             " is not none/init/cluster/misc");
  }
  if ((op->rng_draws == 0) != (op->rng_stream == UMLOS_STREAM_NONE)) {
    bad_descriptor(path, "operator '" + name + "': declares " + std::to_string(op->rng_draws) + " draws from stream " +
                             std::to_string(op->rng_stream) +
                             "; spec 004 0.S wants 'exactly 0 draws from stream none' or K>0 "
                             "draws from init/cluster/misc");
  }
  if (op->run == nullptr) bad_descriptor(path, "operator '" + name + "': run is NULL");
  validate_value_decls(path, name, "inputs", op->inputs, op->n_inputs);
  validate_value_decls(path, name, "outputs", op->outputs, op->n_outputs);
  if (op->n_test_vectors > 0 && op->test_vectors == nullptr) {
    bad_descriptor(path, "operator '" + name + "': n_test_vectors is " + std::to_string(op->n_test_vectors) +
                             " but test_vectors is NULL");
  }
  for (uint32_t i = 0; i < op->n_test_vectors; ++i) {
    const umlos_test_vector& tv = op->test_vectors[i];
    check_size(path, "operator '" + name + "' test_vectors[" + std::to_string(i) + "]", tv.struct_size,
               UMLOS_TEST_VECTOR_SIZE_V1_0);
    if (tv.name == nullptr) {
      bad_descriptor(path, "operator '" + name + "' test_vectors[" + std::to_string(i) + "].name is NULL");
    }
    if ((tv.n_inputs > 0 && tv.inputs == nullptr) || (tv.n_expected > 0 && tv.expected == nullptr) ||
        (tv.n_config > 0 && tv.config == nullptr)) {
      bad_descriptor(path, "operator '" + name + "' test vector '" + tv.name + "': a non-zero count with a NULL array");
    }
  }
}

void validate_driver(const std::string& path, const umlos_driver_desc* d, uint32_t index) {
  std::string where = "drivers[" + std::to_string(index) + "]";
  if (d == nullptr) bad_descriptor(path, where + " is NULL");
  check_size(path, where, d->struct_size, UMLOS_DRIVER_DESC_SIZE_V1_0);
  if (d->name == nullptr || d->name[0] == '\0') bad_descriptor(path, where + ".name is NULL or empty");
  std::string name = d->name;
  const char* missing = nullptr;
  if (!d->create)
    missing = "create";
  else if (!d->destroy)
    missing = "destroy";
  else if (!d->buffer_alloc)
    missing = "buffer_alloc";
  else if (!d->buffer_free)
    missing = "buffer_free";
  else if (!d->buffer_write)
    missing = "buffer_write";
  else if (!d->buffer_read)
    missing = "buffer_read";
  else if (!d->dispatch)
    missing = "dispatch";
  if (missing) bad_descriptor(path, "driver '" + name + "': required function '" + missing + "' is NULL");
  if (d->n_primitives > 0 && d->primitives == nullptr) {
    bad_descriptor(path, "driver '" + name + "': n_primitives > 0 but primitives is NULL");
  }
  for (uint32_t i = 0; i < d->n_primitives; ++i) {
    if (d->primitives[i] == nullptr) {
      bad_descriptor(path, "driver '" + name + "': primitives[" + std::to_string(i) + "] is NULL");
    }
  }
}

void validate_strategy(const std::string& path, const umlos_tmmu_strategy_desc* s, uint32_t index) {
  std::string where = "strategies[" + std::to_string(index) + "]";
  if (s == nullptr) bad_descriptor(path, where + " is NULL");
  check_size(path, where, s->struct_size, UMLOS_TMMU_STRATEGY_DESC_SIZE_V1_0);
  if (!valid_fq_name(s->name)) {
    bad_descriptor(path, where + ".name is '" + std::string(s->name ? s->name : "(null)") +
                             "', expected a fully-qualified name like UML_OS.TMMU.PlanMemory_v2");
  }
  if (s->plan == nullptr) bad_descriptor(path, std::string("strategy '") + s->name + "': plan is NULL");
}

void validate_invariant(const std::string& path, const umlos_invariant_desc* v, uint32_t index) {
  std::string where = "invariants[" + std::to_string(index) + "]";
  if (v == nullptr) bad_descriptor(path, where + " is NULL");
  check_size(path, where, v->struct_size, UMLOS_INVARIANT_DESC_SIZE_V1_0);
  if (v->name == nullptr) bad_descriptor(path, where + ".name is NULL");
  if (v->check == nullptr) bad_descriptor(path, std::string("invariant '") + v->name + "': check is NULL");
  if (v->point != UMLOS_CHECK_AFTER_LOSS && v->point != UMLOS_CHECK_AFTER_ACTION &&
      v->point != UMLOS_CHECK_AFTER_RESTORE) {
    bad_descriptor(path, std::string("invariant '") + v->name + "': point " + std::to_string(v->point) +
                             " is not AFTER_LOSS(1), AFTER_ACTION(2) or AFTER_RESTORE(3)");
  }
}

void validate_primitive(const std::string& path, const umlos_primitive_desc* p, uint32_t index) {
  std::string where = "primitives[" + std::to_string(index) + "]";
  if (p == nullptr) bad_descriptor(path, where + " is NULL");
  check_size(path, where, p->struct_size, UMLOS_PRIMITIVE_DESC_SIZE_V1_6);
  if (p->name == nullptr || p->name[0] == '\0') bad_descriptor(path, where + ".name is NULL or empty");
  for (const char* c = p->name; *c; ++c)
    if (!std::isalnum(static_cast<unsigned char>(*c)) && *c != '_')
      bad_descriptor(path, where + ".name '" + p->name + "': only letters, digits and '_' (a primitive name)");
  if (p->run == nullptr) bad_descriptor(path, std::string("primitive '") + p->name + "': run is NULL");
  if (p->kind != UMLOS_PRIMITIVE_OPAQUE && p->kind != UMLOS_PRIMITIVE_ELEMENTWISE)
    bad_descriptor(path, std::string("primitive '") + p->name + "': kind " + std::to_string(p->kind) +
                             " is not OPAQUE(0) or ELEMENTWISE(1)");
}

void validate_module(const std::string& path, const umlos_module_desc* m) {
  check_size(path, "module descriptor", m->struct_size, UMLOS_MODULE_DESC_SIZE_V1_0);
  if (m->name == nullptr || m->name[0] == '\0') bad_descriptor(path, "name is NULL or empty");
  if ((m->n_operators && !m->operators) || (m->n_drivers && !m->drivers) || (m->n_strategies && !m->strategies) ||
      (m->n_invariants && !m->invariants)) {
    bad_descriptor(path, "a non-zero count (operators/drivers/strategies/invariants) with a NULL array");
  }
  for (uint32_t i = 0; i < m->n_operators; ++i) validate_operator(path, m->operators[i], i);
  for (uint32_t i = 0; i < m->n_drivers; ++i) validate_driver(path, m->drivers[i], i);
  for (uint32_t i = 0; i < m->n_strategies; ++i) validate_strategy(path, m->strategies[i], i);
  for (uint32_t i = 0; i < m->n_invariants; ++i) validate_invariant(path, m->invariants[i], i);
  // 1.6: a descriptor from an older SDK ends before these fields.
  if (m->struct_size >= UMLOS_MODULE_DESC_SIZE_V1_6) {
    if (m->n_primitives && !m->primitives) bad_descriptor(path, "n_primitives is non-zero with a NULL array");
    for (uint32_t i = 0; i < m->n_primitives; ++i) validate_primitive(path, m->primitives[i], i);
  }
}

}  // namespace

// Defined in services.cpp: the message a module gave services->error() while its
// entry ran (ctx == NULL), and a way to clear it.
std::string take_load_error_message(umlos_status* code);

Digest hash_module_file(const std::string& path) {
  SealedModule sealed;
  read_sealed_module(path, sealed);
  return sealed.digest;
}

LoadedModule load_module(const std::string& path, const std::optional<Digest>& expected,
                         const umlos_services* services) {
  LoadedModule out;
  out.path = path;
  auto handle = std::make_shared<ModuleHandle>();
  {
    SealedModule sealed;
    read_sealed_module(path, sealed);
    out.sha256 = sealed.digest;
    out.size_bytes = sealed.size;

    // The pin is checked before a single byte of the module is mapped or run.
    if (expected && *expected != out.sha256) {
      throw Failure(UMLOS_MODULE_HASH_MISMATCH,
                    "module '" + path + "': SHA-256 mismatch: the manifest pins " + to_hex(*expected) +
                        " but the file's digest is " + to_hex(out.sha256) +
                        " (the file changed after it was pinned; if the new file is trusted, "
                        "re-pin it with `umlos hash " +
                        path + "` or `umlos manifest pin`)");
    }

    const std::string fd_path = unique_fd_path(sealed.memfd.fd);
    try {
      handle->library.load(boost::dll::fs::path(fd_path),
                           boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
      throw Failure(UMLOS_MODULE_LOAD_FAILED,
                    "module '" + path + "': the dynamic loader refused it: " + e.what() +
                        " (is it a shared library for this platform, with all its dependencies "
                        "installed?)");
    }
  }  // the memfd is closed here: the library's mappings hold its pages

  // Invariant: a fresh name gives a fresh object. Were the dynamic loader
  // to hand back a module loaded before, its pin would not be this one's.
  // A module refused below is unloaded, so its handle leaves the registry.
  LiveHandle live(handle->library.native(), path);
  if (!handle->library.has(UMLOS_MODULE_ENTRY_SYMBOL)) {
    throw Failure(UMLOS_MODULE_ENTRY_MISSING,
                  "module '" + path +
                      "': exports no symbol '" UMLOS_MODULE_ENTRY_SYMBOL
                      "' (expected: const umlos_module_desc* " UMLOS_MODULE_ENTRY_SYMBOL
                      "(const umlos_services*); define it with UMLOS_DEFINE_MODULE_ENTRY and build "
                      "with umlos_add_module)");
  }
  umlos_module_entry_fn entry =
      &handle->library.get<const umlos_module_desc*(const umlos_services*)>(UMLOS_MODULE_ENTRY_SYMBOL);
  take_load_error_message(nullptr);
  const umlos_module_desc* desc = entry(services);
  if (desc == nullptr) {
    // The module's own code when it gave one (e.g. an SDK declaration error
    // is MODULE_DESCRIPTOR_INVALID), else MODULE_LOAD_FAILED.
    umlos_status code = UMLOS_OK;
    std::string why = take_load_error_message(&code);
    throw Failure(code != UMLOS_OK ? code : UMLOS_MODULE_LOAD_FAILED,
                  "module '" + path + "': its entry returned no descriptor" +
                      (why.empty() ? std::string(" and gave no reason") : ": " + why));
  }
  if (desc->struct_size < UMLOS_STRUCT_SIZE(umlos_module_desc, abi_minor)) {
    bad_descriptor(path, "struct_size " + std::to_string(desc->struct_size) + " is too small to hold the ABI version");
  }
  if (desc->abi_major != UMLOS_ABI_MAJOR) {
    throw Failure(UMLOS_MODULE_ABI_MISMATCH,
                  "module '" + path + "': built for UML_OS ABI " + abi_text(desc->abi_major, desc->abi_minor) +
                      ", but this kernel speaks ABI " + abi_text(UMLOS_ABI_MAJOR, UMLOS_ABI_MINOR) +
                      " (majors must be equal; rebuild the module against the UML_OS " +
                      std::to_string(UMLOS_ABI_MAJOR) + ".x SDK)");
  }
  validate_module(path, desc);
  out.desc = desc;
  out.negotiated_minor = std::min<uint32_t>(desc->abi_minor, UMLOS_ABI_MINOR);
  out.handle = std::shared_ptr<void>(handle, handle.get());
  // Never unload (see ModuleHandle): keep one reference forever.
  live.keep(handle);
  return out;
}

}  // namespace umlos

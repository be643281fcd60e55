// loader.cpp — verified module loading. See loader.hpp and docs/abi.md.
//
// The race this closes: hashing a file and then dlopen()ing it by path lets
// anyone who can write the file swap it in between. Instead the file is read
// once into an anonymous memfd while hashing, the memfd is sealed against
// any further change, the digest is compared with the pin, and the memfd
// itself is what gets mapped (dlopen of /proc/self/fd/N). The descriptor is
// kept open for the life of the process, so no later load can reuse the
// "/proc/self/fd/N" name and alias this module (glibc matches by name).
#include "loader.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <algorithm>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>

#include "error.hpp"

namespace umlos {
namespace {

constexpr uint64_t kMaxModuleBytes = 2ull << 30;  // 2 GiB: refuse absurd files

std::string errno_text() { return std::strerror(errno); }

struct OwnedFd {
  int fd = -1;
  explicit OwnedFd(int f) : fd(f) {}
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

// What keeps a module mapped: the library and the sealed memfd it came from.
struct ModuleHandle {
  boost::dll::shared_library library;
  int memfd = -1;
  // Modules are never unloaded (plugin-abi.md lesson 10): the handle is
  // intentionally leaked at exit rather than dlclose()d mid-process.
};

// Reads `path` once, hashing as it copies into a sealed memfd.
// Returns the memfd; `digest` and `size` receive the hash and length.
int copy_into_sealed_memfd(const std::string& path, Digest& digest, uint64_t& size) {
  OwnedFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.fd < 0) {
    throw Failure(UMLOS_MODULE_NOT_FOUND,
                  "module '" + path + "': cannot open: " + errno_text() +
                      " (check the path in the manifest; relative paths are resolved "
                      "against the manifest's folder)");
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw Failure(UMLOS_MODULE_NOT_FOUND,
                  "module '" + path + "': not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxModuleBytes) {
    throw Failure(UMLOS_MODULE_LOAD_FAILED,
                  "module '" + path + "': " + std::to_string(st.st_size) +
                      " bytes is larger than the 2 GiB limit");
  }
  std::string memfd_name = "umlos-module";
  OwnedFd mem(::memfd_create(memfd_name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (mem.fd < 0) {
    throw Failure(UMLOS_MODULE_LOAD_FAILED,
                  "module '" + path + "': memfd_create failed: " + errno_text() +
                      " (verified loading needs Linux memfd with sealing)");
  }
  // Map the file once; hash the mapping and copy it into the memfd from the
  // same pages (one read of the file, no intermediate buffer).
  const uint64_t total = static_cast<uint64_t>(st.st_size);
  Sha256 hasher;
  if (total > 0) {
    void* map = ::mmap(nullptr, total, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (map == MAP_FAILED) {
      throw Failure(UMLOS_IO_ERROR, "module '" + path + "': mmap failed: " + errno_text());
    }
    struct Unmap {
      void* p;
      uint64_t n;
      ~Unmap() { ::munmap(p, n); }
    } unmap{map, total};
    if (::ftruncate(mem.fd, static_cast<off_t>(total)) != 0) {
      throw Failure(UMLOS_IO_ERROR, "module '" + path + "': sizing the memfd failed: " + errno_text());
    }
    const char* p = static_cast<const char*>(map);
    uint64_t done = 0;
    while (done < total) {
      // Hash and copy in 4 MiB steps so both work on cache-warm pages.
      size_t step = static_cast<size_t>(std::min<uint64_t>(total - done, 4u << 20));
      hasher.update(p + done, step);
      size_t written = 0;
      while (written < step) {
        ssize_t w = ::pwrite(mem.fd, p + done + written, step - written, static_cast<off_t>(done + written));
        if (w < 0) {
          if (errno == EINTR) continue;
          throw Failure(UMLOS_IO_ERROR, "module '" + path + "': copying into memfd failed: " + errno_text());
        }
        written += static_cast<size_t>(w);
      }
      done += step;
    }
  }
  if (::fcntl(mem.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    throw Failure(UMLOS_MODULE_LOAD_FAILED,
                  "module '" + path + "': sealing the memfd failed: " + errno_text());
  }
  digest = hasher.finish();
  size = total;
  return mem.release();
}

std::string abi_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

bool valid_fq_name(const char* name) {
  static const std::regex re("^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+_v[0-9]+$");
  return name != nullptr && std::regex_match(name, re);
}

[[noreturn]] void bad_descriptor(const std::string& path, const std::string& what) {
  throw Failure(UMLOS_MODULE_DESCRIPTOR_INVALID,
                "module '" + path + "': malformed descriptor: " + what +
                    " (the module must be rebuilt with a correct descriptor; "
                    "`umlos modules inspect` shows what it declares)");
}

void check_size(const std::string& path, const std::string& what, size_t actual, size_t minimum) {
  if (actual < minimum) {
    bad_descriptor(path, what + ".struct_size is " + std::to_string(actual) +
                             ", expected at least " + std::to_string(minimum));
  }
}

void validate_value_decls(const std::string& path, const std::string& op,
                          const char* which, const umlos_value_decl* decls, uint32_t n) {
  if (n > 0 && decls == nullptr) {
    bad_descriptor(path, "operator '" + op + "': " + which + " count is " + std::to_string(n) +
                             " but the array is NULL");
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
    bad_descriptor(path, "operator '" + name + "': declares " + std::to_string(op->rng_draws) +
                             " draws from stream " + std::to_string(op->rng_stream) +
                             "; spec 004 0.S wants 'exactly 0 draws from stream none' or K>0 "
                             "draws from init/cluster/misc");
  }
  if (op->run == nullptr) bad_descriptor(path, "operator '" + name + "': run is NULL");
  validate_value_decls(path, name, "inputs", op->inputs, op->n_inputs);
  validate_value_decls(path, name, "outputs", op->outputs, op->n_outputs);
  if (op->n_test_vectors > 0 && op->test_vectors == nullptr) {
    bad_descriptor(path, "operator '" + name + "': n_test_vectors is " +
                             std::to_string(op->n_test_vectors) + " but test_vectors is NULL");
  }
  for (uint32_t i = 0; i < op->n_test_vectors; ++i) {
    const umlos_test_vector& tv = op->test_vectors[i];
    check_size(path, "operator '" + name + "' test_vectors[" + std::to_string(i) + "]",
               tv.struct_size, UMLOS_TEST_VECTOR_SIZE_V1_0);
    if (tv.name == nullptr) {
      bad_descriptor(path, "operator '" + name + "' test_vectors[" + std::to_string(i) + "].name is NULL");
    }
    if ((tv.n_inputs > 0 && tv.inputs == nullptr) || (tv.n_expected > 0 && tv.expected == nullptr) ||
        (tv.n_config > 0 && tv.config == nullptr)) {
      bad_descriptor(path, "operator '" + name + "' test vector '" + tv.name +
                               "': a non-zero count with a NULL array");
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
  if (!d->create) missing = "create";
  else if (!d->destroy) missing = "destroy";
  else if (!d->buffer_alloc) missing = "buffer_alloc";
  else if (!d->buffer_free) missing = "buffer_free";
  else if (!d->buffer_write) missing = "buffer_write";
  else if (!d->buffer_read) missing = "buffer_read";
  else if (!d->dispatch) missing = "dispatch";
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

void validate_module(const std::string& path, const umlos_module_desc* m) {
  check_size(path, "module descriptor", m->struct_size, UMLOS_MODULE_DESC_SIZE_V1_0);
  if (m->name == nullptr || m->name[0] == '\0') bad_descriptor(path, "name is NULL or empty");
  if ((m->n_operators && !m->operators) || (m->n_drivers && !m->drivers) ||
      (m->n_strategies && !m->strategies) || (m->n_invariants && !m->invariants)) {
    bad_descriptor(path, "a non-zero count (operators/drivers/strategies/invariants) with a NULL array");
  }
  for (uint32_t i = 0; i < m->n_operators; ++i) validate_operator(path, m->operators[i], i);
  for (uint32_t i = 0; i < m->n_drivers; ++i) validate_driver(path, m->drivers[i], i);
  for (uint32_t i = 0; i < m->n_strategies; ++i) validate_strategy(path, m->strategies[i], i);
  for (uint32_t i = 0; i < m->n_invariants; ++i) validate_invariant(path, m->invariants[i], i);
}

}  // namespace

// Defined in host.cpp: the message a module gave services->error() while its
// entry ran (ctx == NULL), and a way to clear it.
std::string take_load_error_message(umlos_status* code);

Digest hash_module_file(const std::string& path) {
  Digest d{};
  uint64_t size = 0;
  int fd = copy_into_sealed_memfd(path, d, size);
  ::close(fd);
  return d;
}

LoadedModule load_module(const std::string& path, const std::optional<Digest>& expected,
                         const umlos_services* services) {
  LoadedModule out;
  out.path = path;
  int memfd = copy_into_sealed_memfd(path, out.sha256, out.size_bytes);
  OwnedFd guard(memfd);

  // The pin is checked before a single byte of the module is mapped or run.
  if (expected && *expected != out.sha256) {
    throw Failure(UMLOS_MODULE_HASH_MISMATCH,
                  "module '" + path + "': SHA-256 mismatch: the manifest pins " + to_hex(*expected) +
                      " but the file's digest is " + to_hex(out.sha256) +
                      " (the file changed after it was pinned; if the new file is trusted, "
                      "re-pin it with `umlos hash " + path + "` or `umlos manifest pin`)");
  }

  auto handle = std::make_shared<ModuleHandle>();
  std::string fd_path = "/proc/self/fd/" + std::to_string(memfd);
  try {
    handle->library.load(boost::dll::fs::path(fd_path),
                         boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw Failure(UMLOS_MODULE_LOAD_FAILED,
                  "module '" + path + "': the dynamic loader refused it: " + e.what() +
                      " (is it a shared library for this platform, with all its dependencies "
                      "installed?)");
  }
  if (!handle->library.has(UMLOS_MODULE_ENTRY_SYMBOL)) {
    throw Failure(UMLOS_MODULE_ENTRY_MISSING,
                  "module '" + path + "': exports no symbol '" UMLOS_MODULE_ENTRY_SYMBOL
                  "' (expected: const umlos_module_desc* " UMLOS_MODULE_ENTRY_SYMBOL
                  "(const umlos_services*); define it with UMLOS_DEFINE_MODULE_ENTRY and build "
                  "with umlos_add_module)");
  }
  umlos_module_entry_fn entry =
      &handle->library.get<const umlos_module_desc*(const umlos_services*)>(UMLOS_MODULE_ENTRY_SYMBOL);
  handle->memfd = guard.release();

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
    bad_descriptor(path, "struct_size " + std::to_string(desc->struct_size) +
                             " is too small to hold the ABI version");
  }
  if (desc->abi_major != UMLOS_ABI_MAJOR) {
    throw Failure(UMLOS_MODULE_ABI_MISMATCH,
                  "module '" + path + "': built for UML_OS ABI " +
                      abi_text(desc->abi_major, desc->abi_minor) + ", but this kernel speaks ABI " +
                      abi_text(UMLOS_ABI_MAJOR, UMLOS_ABI_MINOR) +
                      " (majors must be equal; rebuild the module against the UML_OS " +
                      std::to_string(UMLOS_ABI_MAJOR) + ".x SDK)");
  }
  validate_module(path, desc);
  out.desc = desc;
  out.negotiated_minor = std::min<uint32_t>(desc->abi_minor, UMLOS_ABI_MINOR);
  out.handle = std::shared_ptr<void>(handle, handle.get());
  // Never unload (see ModuleHandle): keep one reference forever.
  static std::vector<std::shared_ptr<ModuleHandle>>* keep_alive =
      new std::vector<std::shared_ptr<ModuleHandle>>();
  keep_alive->push_back(handle);
  return out;
}

}  // namespace umlos

// Verified loading: every refusal the verified loader promises, against
// real module files (tests/modules/misbehaving.c builds one per defect).
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "error.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;

namespace {
umlos_status load_error(const std::string& path, const std::optional<Digest>& pin, std::string* message = nullptr) {
  Host host;
  try {
    host.load(path, pin);
  } catch (const Failure& f) {
    if (message) *message = f.what();
    return f.code();
  }
  return UMLOS_OK;
}
}  // namespace

TEST_CASE("A module loads when its file matches the pinned digest", "[loader]") {
  std::string path = module_path("umlos_core");
  Digest pin = hash_module_file(path);
  Host host;
  const LoadedModule& m = host.load(path, pin);
  CHECK(m.sha256 == pin);
  CHECK(std::string(m.desc->name) == "umlos_core");
  CHECK(host.find_operator("UML_OS.Demo.RandomWalkStep_v1") != nullptr);
}

TEST_CASE("Flipping one byte of a pinned module makes the kernel refuse it, naming both digests", "[loader][tamper]") {
  std::string dir = temp_dir("tamper");
  std::string copy = dir + "/libumlos_core.so";
  std::filesystem::copy_file(module_path("umlos_core"), copy);
  Digest pin = hash_module_file(copy);
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(4096);
    char c;
    f.read(&c, 1);
    c ^= 0x01;
    f.seekp(4096);
    f.write(&c, 1);
  }
  Digest actual = hash_module_file(copy);
  REQUIRE(actual != pin);
  std::string msg;
  CHECK(load_error(copy, pin, &msg) == UMLOS_MODULE_HASH_MISMATCH);
  CHECK_THAT(msg, Catch::Contains(to_hex(pin)) && Catch::Contains(to_hex(actual)) && Catch::Contains(copy));
}

TEST_CASE(
    "A module that refuses in its entry is not registered and its own code and reason are reported, a pin mismatch "
    "stops it before the entry runs",
    "[loader]") {
  std::string path = module_path("test_refuse");
  std::string msg;
  CHECK(load_error(path, std::nullopt, &msg) == UMLOS_UNAVAILABLE);
  CHECK_THAT(msg, Catch::Contains("no widget attached"));
  // With a wrong pin the entry never runs, so its reason never appears.
  Digest wrong{};
  CHECK(load_error(path, wrong, &msg) == UMLOS_MODULE_HASH_MISMATCH);
  CHECK_THAT(msg, !Catch::Contains("no widget attached"));
}

TEST_CASE("A missing or unreadable module file is refused with its path", "[loader]") {
  std::string msg;
  CHECK(load_error("/nonexistent/libnothing.so", std::nullopt, &msg) == UMLOS_MODULE_NOT_FOUND);
  CHECK_THAT(msg, Catch::Contains("/nonexistent/libnothing.so"));
  CHECK(load_error(temp_dir("dir"), std::nullopt, &msg) == UMLOS_MODULE_NOT_FOUND);
}

TEST_CASE("A file that is not a shared library is refused by the dynamic loader", "[loader]") {
  std::string path = temp_dir("notso") + "/libfake.so";
  write_text(path, "this is not an ELF file\n");
  std::string msg;
  CHECK(load_error(path, hash_module_file(path), &msg) == UMLOS_MODULE_LOAD_FAILED);
  CHECK_THAT(msg, Catch::Contains(path));
}

TEST_CASE("Another ABI major is refused with both version numbers", "[loader][abi]") {
  std::string msg;
  CHECK(load_error(module_path("test_abi_major"), std::nullopt, &msg) == UMLOS_MODULE_ABI_MISMATCH);
  CHECK_THAT(msg, Catch::Contains("2.3") && Catch::Contains("ABI 1." + std::to_string(UMLOS_ABI_MINOR)));
}

TEST_CASE("A module without the entry symbol is refused naming the symbol", "[loader][abi]") {
  std::string msg;
  CHECK(load_error(module_path("test_no_entry"), std::nullopt, &msg) == UMLOS_MODULE_ENTRY_MISSING);
  CHECK_THAT(msg, Catch::Contains("umlos_module_entry"));
}

TEST_CASE("Malformed descriptors are refused: a NULL operator name, a struct_size too small", "[loader][abi]") {
  std::string msg;
  CHECK(load_error(module_path("test_null_name"), std::nullopt, &msg) == UMLOS_MODULE_DESCRIPTOR_INVALID);
  CHECK_THAT(msg, Catch::Contains("operators[0].name"));
  CHECK(load_error(module_path("test_small_struct"), std::nullopt, &msg) == UMLOS_MODULE_DESCRIPTOR_INVALID);
  CHECK_THAT(msg, Catch::Contains("struct_size"));
}

TEST_CASE("Two modules offering the same operator are refused, naming both files, and the first stays usable",
          "[loader][registry]") {
  Host host;
  host.load(module_path("umlos_core"), std::nullopt);
  try {
    host.load(module_path("test_duplicate"), std::nullopt);
    FAIL("duplicate accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_DUPLICATE_OPERATOR);
    CHECK_THAT(std::string(f.what()), Catch::Contains("libumlos_core.so") && Catch::Contains("libtest_duplicate.so") &&
                                          Catch::Contains("UML_OS.Demo.RandomWalkStep_v1"));
  }
  CHECK(host.modules().size() == 1);
  CHECK(host.find_operator("UML_OS.Demo.RandomWalkStep_v1") != nullptr);
}

TEST_CASE("The same module file loaded by two hosts gives two independent, identical registrations", "[loader]") {
  Host a, b;
  const LoadedModule& ma = a.load(module_path("umlos_core"), std::nullopt);
  const LoadedModule& mb = b.load(module_path("umlos_core"), std::nullopt);
  CHECK(ma.sha256 == mb.sha256);
  CHECK(ma.desc != mb.desc);  // separate mappings of the sealed copies
}

// ---- Attacks on verified loading: a file rewritten, shrunk or swapped for
// something that is not a file while the kernel reads it.
namespace {

std::vector<uint8_t> bytes_of_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<size_t> offsets_of(const std::vector<uint8_t>& bytes, const std::string& needle) {
  std::vector<size_t> out;
  auto it = bytes.begin();
  while ((it = std::search(it, bytes.end(), needle.begin(), needle.end())) != bytes.end()) {
    out.push_back(static_cast<size_t>(it - bytes.begin()));
    ++it;
  }
  return out;
}

std::set<std::string> operator_names(const LoadedModule& m) {
  std::set<std::string> names;
  for (uint32_t i = 0; i < m.desc->n_operators; ++i) names.insert(m.desc->operators[i]->name);
  return names;
}

// Tallies of repeated loads of one pinned file while another thread changes it.
struct RaceTally {
  int pinned_bytes = 0;  // loaded, and what loaded is exactly the pinned file
  int refused = 0;       // MODULE_HASH_MISMATCH (or IO_ERROR)
  int forged = 0;        // anything else: the pin passed but other bytes loaded
  std::string first_forged;
};

RaceTally load_repeatedly(const std::string& path, const Digest& pin, const std::set<std::string>& pinned_names,
                          int loads) {
  RaceTally t;
  for (int i = 0; i < loads; ++i) {
    Host host;
    try {
      const LoadedModule& m = host.load(path, pin);
      const std::set<std::string> names = operator_names(m);
      if (m.sha256 == pin && names == pinned_names) {
        ++t.pinned_bytes;
      } else {
        std::string foreign;
        for (const std::string& n : names) {
          if (!pinned_names.count(n)) foreign += " " + n;
        }
        if (t.forged++ == 0) t.first_forged = "loaded under the pin, operators not in the pinned file:" + foreign;
      }
    } catch (const Failure& f) {
      if (f.code() == UMLOS_MODULE_HASH_MISMATCH || f.code() == UMLOS_IO_ERROR) {
        ++t.refused;
      } else if (t.forged++ == 0) {
        t.first_forged = f.what();
      }
    }
  }
  return t;
}

// Interrupts any blocking system call every `seconds` (SIGALRM without
// SA_RESTART), so a loader that blocks fails its test instead of hanging it.
class AlarmGuard {
 public:
  explicit AlarmGuard(long seconds) {
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    ::sigaction(SIGALRM, &sa, &old_);
    itimerval every{};
    every.it_interval.tv_sec = seconds;
    every.it_value.tv_sec = seconds;
    ::setitimer(ITIMER_REAL, &every, nullptr);
  }
  ~AlarmGuard() {
    itimerval off{};
    ::setitimer(ITIMER_REAL, &off, nullptr);
    ::sigaction(SIGALRM, &old_, nullptr);
  }

 private:
  struct sigaction old_ {};
};

size_t open_descriptors() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

}  // namespace

// 150 loads while `writer` changes the file, then the tally: every load
// either refused or the pinned bytes, never a forged module.
static void check_race(const std::string& copy, const Digest& pin, const std::set<std::string>& pinned_names,
                       std::atomic<bool>& stop, std::thread& writer) {
  const RaceTally t = load_repeatedly(copy, pin, pinned_names, 150);
  stop = true;
  writer.join();
  INFO("loaded the pinned bytes " << t.pinned_bytes << ", refused " << t.refused << ", forged " << t.forged << ": "
                                  << t.first_forged);
  CHECK(t.forged == 0);
  CHECK(t.pinned_bytes + t.refused == 150);
}

TEST_CASE("A pinned module rewritten in place while it loads is either refused or loads exactly the pinned bytes",
          "[loader][security]") {
  const std::string copy = temp_dir("race-rewrite") + "/libumlos_core.so";
  std::filesystem::copy_file(module_path("umlos_core"), copy);
  const Digest pin = hash_module_file(copy);
  std::set<std::string> pinned_names;
  {
    Host host;
    pinned_names = operator_names(host.load(copy, pin));
  }
  // The writer toggles the case of the first letter of an operator name:
  // the forged module still loads and validates, but names another operator.
  const std::vector<size_t> at = offsets_of(bytes_of_file(copy), "RandomWalkStep_v1");
  REQUIRE(!at.empty());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const int fd = ::open(copy.c_str(), O_WRONLY | O_CLOEXEC);
    while (!stop.load()) {
      for (size_t off : at) (void)!::pwrite(fd, "r", 1, static_cast<off_t>(off));
      for (size_t off : at) (void)!::pwrite(fd, "R", 1, static_cast<off_t>(off));
    }
    ::close(fd);
  });
  check_race(copy, pin, pinned_names, stop, writer);
}

TEST_CASE("A pinned module shrunk and regrown while it loads is refused or loads the pinned bytes, never a crash",
          "[loader][security]") {
  const std::string copy = temp_dir("race-shrink") + "/libumlos_core.so";
  std::filesystem::copy_file(module_path("umlos_core"), copy);
  const Digest pin = hash_module_file(copy);
  std::set<std::string> pinned_names;
  {
    Host host;
    pinned_names = operator_names(host.load(copy, pin));
  }
  const std::vector<uint8_t> bytes = bytes_of_file(copy);
  const size_t half = bytes.size() / 2;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const int fd = ::open(copy.c_str(), O_WRONLY | O_CLOEXEC);
    while (!stop.load()) {
      (void)!::ftruncate(fd, static_cast<off_t>(half));
      (void)!::pwrite(fd, bytes.data() + half, bytes.size() - half, static_cast<off_t>(half));
    }
    ::close(fd);
  });
  // A mapping of the file would take SIGBUS here and end the whole process.
  check_race(copy, pin, pinned_names, stop, writer);
}

TEST_CASE("A FIFO, a socket, a device or an oversized file as a module path is refused at once, naming the file",
          "[loader][security]") {
  const std::string dir = temp_dir("not-a-file");
  const std::string fifo = dir + "/libfifo.so";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string sock = dir + "/libsock.so";
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  // Sparse: one byte over the limit costs no disk.
  const std::string huge = dir + "/libhuge.so";
  {
    const int fd = ::open(huge.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(kMaxModuleFileBytes + 1)) == 0);
    ::close(fd);
  }
  AlarmGuard interrupt_every(2);
  const auto start = std::chrono::steady_clock::now();
  std::string msg;
  CHECK(load_error(fifo, std::nullopt, &msg) == UMLOS_MODULE_NOT_FOUND);
  CHECK_THAT(msg, Catch::Contains(fifo) && Catch::Contains("a FIFO"));
  CHECK(load_error(sock, std::nullopt, &msg) == UMLOS_MODULE_NOT_FOUND);
  CHECK_THAT(msg, Catch::Contains(sock) && Catch::Contains("not a regular file"));
  CHECK(load_error("/dev/zero", std::nullopt, &msg) == UMLOS_MODULE_NOT_FOUND);
  CHECK_THAT(msg, Catch::Contains("/dev/zero") && Catch::Contains("a character device"));
  CHECK(load_error(huge, std::nullopt, &msg) == UMLOS_MODULE_LOAD_FAILED);
  CHECK_THAT(msg, Catch::Contains(huge) && Catch::Contains(std::to_string(kMaxModuleFileBytes + 1)));
  // The same reader serves `umlos hash` and `umlos manifest pin`.
  try {
    hash_module_file(fifo);
    FAIL("a FIFO was hashed");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_MODULE_NOT_FOUND);
  }
  write_text(dir + "/m.yaml",
             "umlos_manifest: 1\nname: fifo\nmodules:\n  - {path: libfifo.so, sha256: unpinned}\n"
             "driver: {name: cpu_driver}\noperators: {}\n");
  try {
    pin_manifest(dir + "/m.yaml", dir + "/pinned.yaml");
    FAIL("a manifest naming a FIFO was pinned");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_MODULE_NOT_FOUND);
    CHECK_THAT(std::string(f.what()), Catch::Contains(fifo) && Catch::Contains("a FIFO"));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  ::close(s);
}

TEST_CASE("Loaded modules keep no descriptor open, and every load is still its own mapping", "[loader]") {
  const std::string path = module_path("umlos_core");
  const Digest pin = hash_module_file(path);
  {
    Host warm;
    warm.load(path, pin);
  }
  const size_t before = open_descriptors();
  std::set<const umlos_module_desc*> descs;
  for (int i = 0; i < 40; ++i) {
    Host host;
    descs.insert(host.load(path, pin).desc);
  }
  CHECK(open_descriptors() <= before);
  // The loader names each memfd uniquely, so a reused descriptor number
  // never hands back an earlier module.
  CHECK(descs.size() == 40);
}

// fuzz_support.hpp — what every libFuzzer target of tests/fuzz shares: a
// private scratch folder (parsers that read files are given real files), and
// the rule that decides what is a finding besides a sanitizer report, a
// crash, a hang or unbounded memory:
//   - a refusal with a named code (umlos::Failure, PolicyError, sdk::Error)
//     is the expected answer to bad input;
//   - INTERNAL (a bug of ours, docs/exit-codes.md) or any other escaped
//     exception (std::out_of_range, nlohmann's type_error, ...) is a finding:
//     the target aborts and libFuzzer keeps the input.
// UMLOS_FUZZ_LENIENT=1 accepts any escaped std::exception (only memory
// errors, UB, crashes, hangs and OOM are then findings).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

#include "error.hpp"

namespace umlos_fuzz {

inline bool lenient() {
  static const bool v = [] {
    const char* e = std::getenv("UMLOS_FUZZ_LENIENT");
    return e && *e && std::string(e) != "0";
  }();
  return v;
}

[[noreturn]] inline void finding(const char* what, const char* detail) {
  std::fprintf(stderr, "==umlos-fuzz== FINDING: %s: %s\n", what, detail);
  std::fflush(stderr);
  std::abort();
}

// Runs `f`; refusals with a named code are fine, INTERNAL or a foreign
// exception is a finding. `is_named_refusal(e)` recognises the target's own
// refusal types beyond umlos::Failure.
template <class F, class Named>
void guarded(F&& f, Named&& is_named_refusal) {
  try {
    f();
  } catch (const umlos::Failure& e) {
    if (e.code() == UMLOS_INTERNAL && !lenient()) finding("INTERNAL failure", e.what());
  } catch (const std::exception& e) {
    if (is_named_refusal(e)) return;
    if (lenient()) return;
    const std::string d = std::string(typeid(e).name()) + ": " + e.what();
    finding("escaped exception", d.c_str());
  }
}

template <class F>
void guarded(F&& f) {
  guarded(std::forward<F>(f), [](const std::exception&) { return false; });
}

// A folder of this process's own, removed at exit.
inline const std::string& scratch() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string t = std::string(base && *base ? base : "/tmp") + "/umlos-fuzz-XXXXXX";
    if (!::mkdtemp(t.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    static std::string keep = t;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return t;
  }();
  return dir;
}

// Writes `size` bytes to scratch()/name (replacing it); returns the path.
inline std::string put(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) finding("harness", ("cannot write " + path).c_str());
  return path;
}

inline std::string put(const std::string& name, const std::string& text) {
  return put(name, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

}  // namespace umlos_fuzz

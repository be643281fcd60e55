// temp_folder.hpp — a fresh folder under TMPDIR (mkdtemp), for the foundation
// tests that write files; each test's TempFolder removes it at scope exit.
#pragma once

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace umlos_test {

inline std::string make_temp_folder(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base ? base : "/tmp") + "/umlos-" + tag + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  REQUIRE(::mkdtemp(buf.data()) != nullptr);
  return buf.data();
}

}  // namespace umlos_test

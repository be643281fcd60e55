// Whole-file reads and atomic writes (kernel/runtime/fsutil.cpp).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "error.hpp"
#include "fsutil.hpp"
#include "temp_folder.hpp"

namespace {

// A fresh folder under TMPDIR, removed (with its files) at scope exit.
struct TempFolder {
  std::string path = umlos_test::make_temp_folder("fsutil");
  ~TempFolder() {
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") ::unlink((path + "/" + n).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") out.push_back(n);
      }
      ::closedir(d);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("An atomic write replaces the file and leaves no temporary behind", "[fsutil]") {
  TempFolder dir;
  const std::string file = dir.path + "/out.bin";
  std::vector<uint8_t> big(200000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 131 + 7);

  umlos::write_file_atomic(file, big);
  CHECK(umlos::read_file(file) == big);

  umlos::write_file_atomic(file, std::string("second version\n"));
  CHECK(umlos::read_text_file(file) == "second version\n");

  umlos::write_file_atomic(file, nullptr, 0);
  CHECK(umlos::read_file(file).empty());

  CHECK(dir.entries() == std::vector<std::string>{"out.bin"});
}

TEST_CASE("Reading a missing file names the file and the OS error", "[fsutil]") {
  TempFolder dir;
  const std::string missing = dir.path + "/no-such-file.yaml";
  try {
    umlos::read_file(missing);
    FAIL("read_file did not throw");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_IO_ERROR);
    const std::string msg = f.what();
    CHECK_THAT(msg, Catch::Contains(missing));
    CHECK_THAT(msg, Catch::Contains(std::strerror(ENOENT)));
  }
  try {
    umlos::read_file(dir.path);  // a folder is not a file
    FAIL("read_file of a folder did not throw");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_IO_ERROR);
    CHECK_THAT(std::string(f.what()), Catch::Contains(dir.path));
  }
}

TEST_CASE("Writing into a missing folder fails with the path in the message", "[fsutil]") {
  TempFolder dir;
  const std::string file = dir.path + "/missing-folder/out.txt";
  try {
    umlos::write_file_atomic(file, std::string("x"));
    FAIL("write_file_atomic did not throw");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_IO_ERROR);
    CHECK_THAT(std::string(f.what()), Catch::Contains(dir.path + "/missing-folder"));
  }
  CHECK(dir.entries().empty());
}

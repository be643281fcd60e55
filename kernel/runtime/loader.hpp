// loader.hpp — verified module loading (docs/abi.md "Loading").
//
// load_module() reads the file once into a sealed memfd while hashing it,
// compares the digest with the pin before any code of the module runs, and
// dlopens that same memfd (through Boost.DLL) so the bytes mapped are exactly
// the bytes hashed. It then resolves the one entry symbol, calls it with the
// kernel's service table, negotiates the ABI version and validates the
// descriptor. Modules are never unloaded (the handle lives until exit).
// Every refusal is a umlos::Failure naming the file, the symbol or field,
// the expected and the actual value, and what to do.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sha256.hpp"
#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_tmmu.h"

namespace umlos {

struct LoadedModule {
  std::string path;  // as given
  Digest sha256{};   // digest of the bytes that were mapped
  uint64_t size_bytes = 0;
  const umlos_module_desc* desc = nullptr;  // module-owned, static
  uint32_t negotiated_minor = 0;            // min(kernel minor, module minor)
  std::shared_ptr<void> handle;             // keeps the library mapped
};

// The largest module file the loader reads (2 GiB, docs/abi.md "Loading"):
// a larger one is refused with MODULE_LOAD_FAILED naming its size.
inline constexpr uint64_t kMaxModuleFileBytes = 2ull << 30;

// Loads `path`. When `expected` is given, a different digest is refused with
// UMLOS_MODULE_HASH_MISMATCH before the module's code runs.
LoadedModule load_module(const std::string& path, const std::optional<Digest>& expected,
                         const umlos_services* services);

// The digest of a file as load_module would compute it.
Digest hash_module_file(const std::string& path);

}  // namespace umlos

// cpu_reference.cpp — the reference driver's call machinery (Call, checks,
// attributes, registry, canonical sums), compiled into this module for the
// host-staged primitives. It is cpu_driver's own driver.cpp, included
// unchanged; only its module entry is switched off, since this module has
// its own (driver.cpp here). Everything stays inside this module (hidden
// visibility): nothing of cpu_driver is linked or loaded at run time.
#include "umlos_abi.h"
#undef UMLOS_DEFINE_MODULE_ENTRY
#define UMLOS_DEFINE_MODULE_ENTRY(impl) static_assert(sizeof(&impl) != 0, "");

#include "../../cpu_driver/src/driver.cpp"

// umlos/sdk.hpp — the UML_OS module SDK: a C++17, header-only layer over the
// C ABI (umlos_abi.h) so that a module is a few declarative lines plus the
// operator bodies:
//
//   #include <umlos/sdk.hpp>
//   namespace sdk = umlos::sdk;
//
//   static void scale(sdk::Context& c) {
//     const umlos_tensor* x = c.input("x");
//     std::vector<double> v = c.read<double>(x);
//     const double a = c.config<double>("scale", 2.0);
//     for (double& e : v) e *= a;
//     c.write(c.output("y", UMLOS_DTYPE_F64, c.shape(x)), v);
//   }
//
//   static sdk::Module describe() {
//     return sdk::Module("example_ops", "1.0.0")
//         .add(sdk::Operator("Example.Math.Scale_v1")
//                  .summary("y = scale * x").pure()
//                  .input("x", UMLOS_DTYPE_F64).output("y", UMLOS_DTYPE_F64)
//                  .run(scale)
//                  .test(sdk::TestVector("scale 3").config("scale", 3.0)
//                            .input<double>("x", {2}, {1, -2})
//                            .expect<double>("y", {2}, {3, -6})));
//   }
//   UMLOS_SDK_MODULE(describe)
//
// What the SDK guarantees, so that module authors need not think about it:
//  - No exception crosses the boundary. Every entry the SDK generates (the
//    module entry, operator and invariant bodies, strategy plans) runs inside
//    umlos::sdk::guard(): an umlos::sdk::Error becomes its own status code,
//    any other C++ exception becomes UMLOS_INTERNAL, each with its what()
//    handed to services->error() so the kernel can say what happened.
//  - Every descriptor the kernel sees (umlos_module_desc, umlos_operator_desc,
//    declarations, test vectors and every string they point to) lives in
//    storage owned by one sdk::Module object that the entry macro keeps in a
//    function-local static: built on the first call of umlos_module_entry,
//    never moved, modified or freed afterwards (modules are never unloaded),
//    so every address handed to the kernel is stable for the whole process,
//    as the ABI requires.
//  - It references no kernel symbol: everything goes through the service
//    table, so modules link with -z defs (umlos_add_module does).
//  - Service slots the running kernel does not provide (older minor, NULL
//    slot) are reported as UMLOS_UNIMPLEMENTED instead of being called.
//
// Ownership in one sentence per kind of pointer (docs/sdk.md has the table):
//  - umlos_tensor* from input()/output()/temp(): kernel-owned, borrowed,
//    valid until the operator call returns. Never store them.
//  - const umlos_services* (Context::services(), sdk::services()): kernel-
//    owned, valid for the whole process.
//  - umlos_ctx* (Context::raw()): kernel-owned, valid for the current call.
//  - Strings and values given to the builders (Operator, TestVector, Module)
//    are copied into the Module's storage; Attr objects passed to dispatch()
//    only borrow their key/string for that call.
//  - Vectors returned by read()/draw_host()/shape() are the caller's copies.
//
// Threading: a Context is used on the thread the kernel called the operator
// on; nothing here is shared between threads except the immutable Module.
#ifndef UMLOS_SDK_HPP_
#define UMLOS_SDK_HPP_

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "umlos/sdk.hpp needs C++17 (C modules include umlos_abi.h directly)"
#endif

#include "umlos/sdk/module.hpp"

// Defines the module's one exported symbol from a function
//   umlos::sdk::Module build();
// that declares what the module offers:   UMLOS_SDK_MODULE(build)
// Use it exactly once per module, at namespace scope.
#define UMLOS_SDK_MODULE(build_fn)                                                                               \
  extern "C" UMLOS_EXPORT const umlos_module_desc* umlos_module_entry(const umlos_services* services) noexcept { \
    return ::umlos::sdk::detail::module_entry(services, &build_fn);                                              \
  }

#endif  // UMLOS_SDK_HPP_

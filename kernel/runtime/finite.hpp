// finite.hpp — the finiteness check the kernel runs on every floating
// output of every operator call (spec 004 0.A/0.K: NaN and infinities abort
// critical paths unless the output is declared NONFINITE_OK).
#pragma once

#include <cstdint>

#include <string>

#include "tensor.hpp"

namespace umlos {

class Host;

// The index of the first NaN or infinity of an f32 or f64 tensor, or -1
// (also for any other dtype).
int64_t first_nonfinite(const HostTensor& h);
// The same over `count` elements of `dtype` at `data`, on the widest scan
// the CPU has, or on the one named (tests; where the CPU lacks AVX2 the
// baseline scan runs). Every scan gives the same answer.
enum class FiniteScan { best, baseline, avx2 };
int64_t first_nonfinite(int32_t dtype, const uint8_t* data, uint64_t count, FiniteScan scan = FiniteScan::best);

// Reads an f32 or f64 tensor back from the driver in cache-sized pieces and
// throws CONTRACT_VIOLATION naming `who`, the output `name`, the index and
// value of its first NaN or infinity.
void check_finite(const Host& host, const std::string& who, const std::string& name, const Tensor& t);

}  // namespace umlos

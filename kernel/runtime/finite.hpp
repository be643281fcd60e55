// finite.hpp — the finiteness check the kernel runs on every floating
// output of every operator call (spec 004 0.A/0.K: NaN and infinities abort
// critical paths unless the output is declared NONFINITE_OK).
#pragma once

#include <cstdint>

#include "tensor.hpp"

namespace umlos {

// The index of the first NaN or infinity of an f32 or f64 tensor, or -1
// (also for any other dtype).
int64_t first_nonfinite(const HostTensor& h);

}  // namespace umlos

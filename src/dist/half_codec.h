// dist-internal: fp32 <-> 16-bit float conversions of the fp16 and bf16 compressors and of the
// half-precision all-reduce (Communicator::allreduce_sum_half). Both round to nearest, ties to
// even, as IEEE 754 and the hardware converters do: fp16 (1 sign, 5 exponent, 10 mantissa
// bits; overflow beyond 65504 rounds to infinity, subnormals kept), bf16 (the top 16 bits of an
// fp32, rounded; fp32's range).
#pragma once

#include <cstdint>

namespace ts {

uint16_t fp16_from_float(float value);
float float_from_fp16(uint16_t half);
uint16_t bf16_from_float(float value);
float float_from_bf16(uint16_t half);

}  // namespace ts

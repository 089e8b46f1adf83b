// Wire formats for gradient compression: float32 values that travel between
// ranks as 16-bit bfloat16 or IEEE half values and are cast back on
// arrival. Parameters and optimizer state never leave float32; only the
// allreduce of a gradient bucket uses a narrower format, when the program
// asks for it (c_allreduce's `compression` attribute).
#pragma once

#include <cstdint>
#include <string>

#include "src/framework/float16.h"

namespace fluid {

enum class WireFormat { kNative, kBf16, kFp16 };

// "none" | "bf16" | "fp16"; an error names anything else.
WireFormat ParseWireFormat(const std::string& name);
const char* WireFormatName(WireFormat format);
// Bytes one float32 element takes on the wire.
int WireBytes(WireFormat format);

// float32 <-> 16 bits, as src/framework/float16.h converts (rounding to
// nearest, ties to even; NaN stays NaN; beyond fp16's range, infinity).
inline uint16_t FloatToBf16(float value) { return FloatToBf16Bits(value); }
inline float Bf16ToFloat(uint16_t bits) { return Bf16BitsToFloat(bits); }
inline uint16_t FloatToFp16(float value) { return FloatToFp16Bits(value); }
inline float Fp16ToFloat(uint16_t bits) { return Fp16BitsToFloat(bits); }

// Whole buffers in the 16-bit `format` (not kNative).
void EncodeWire(WireFormat format, const float* in, uint16_t* out,
                int64_t count);
void DecodeWire(WireFormat format, const uint16_t* in, float* out,
                int64_t count);

}  // namespace fluid

// Wire formats for gradient compression: float32 values that travel between
// ranks as 16-bit bfloat16 or IEEE half values and are cast back on
// arrival. Parameters and optimizer state never leave float32; only the
// allreduce of a gradient bucket uses a narrower format, when the program
// asks for it (c_allreduce's `compression` attribute).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace fluid {

namespace wire_internal {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Shifts `mantissa` right by `shift` (>= 1), rounding to nearest with ties
// to even on the bits shifted out.
inline uint32_t ShiftRoundEven(uint32_t mantissa, int shift) {
  if (shift > 31) return 0;
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u))) return kept + 1;
  return kept;
}

}  // namespace wire_internal

enum class WireFormat { kNative, kBf16, kFp16 };

// "none" | "bf16" | "fp16"; an error names anything else.
WireFormat ParseWireFormat(const std::string& name);
const char* WireFormatName(WireFormat format);
// Bytes one float32 element takes on the wire.
int WireBytes(WireFormat format);

// float32 -> 16 bits, rounding to nearest, ties to even. NaN stays NaN,
// values beyond the format's range become infinities (fp16: above 65504;
// bf16 has float32's range).
// (Inline: the compressed reduction calls them once per value.)
inline uint16_t FloatToBf16(float value) {
  const uint32_t u = wire_internal::Bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN, kept quiet
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // a carry into the exponent is the correct rounding up (to infinity at
  // the top of the range).
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

inline float Bf16ToFloat(uint16_t bits) {
  return wire_internal::FromBits(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t FloatToFp16(float value) {
  const uint32_t u = wire_internal::Bits(value);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x47800000u) return sign | 0x7c00u;  // >= 65536, or inf
  const int exponent = static_cast<int>(abs >> 23) - 127;
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;  // implicit 1
  if (exponent < -14) {
    // Subnormal half (or zero): value = m * 2^-24 with m < 1024.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    return sign | static_cast<uint16_t>(wire_internal::ShiftRoundEven(
                      mantissa, -exponent - 14 + 13));
  }
  // Normal: 10 mantissa bits; a carry out of the mantissa bumps the
  // exponent (up to infinity for values that round past 65504).
  const uint32_t half = (static_cast<uint32_t>(exponent + 15) << 10) +
                        wire_internal::ShiftRoundEven(mantissa, 13) - 0x400u;
  return sign | static_cast<uint16_t>(half);
}

inline float Fp16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f)
    return wire_internal::FromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return wire_internal::FromBits(sign | ((exponent + 112) << 23) |
                                   (mantissa << 13));
  }
  // Zero or subnormal: mantissa * 2^-24, exact in float32.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

// Whole buffers in the 16-bit `format` (not kNative).
void EncodeWire(WireFormat format, const float* in, uint16_t* out,
                int64_t count);
void DecodeWire(WireFormat format, const uint16_t* in, float* out,
                int64_t count);

}  // namespace fluid

// The 16-bit floating-point element types: bfloat16 (float32's 8-bit
// exponent, 7 mantissa bits) and float16 (IEEE 754 binary16: 5-bit
// exponent, 10 mantissa bits). Each is 16 bits of storage with explicit
// conversions to and from float; arithmetic is done by the kernels in
// float32 (or by a library's 16-bit instructions), never on these types.
//
// The conversions round to nearest, ties to even; NaN stays NaN; values
// beyond float16's range (above 65504 once rounded) become infinities.
// They are written once for the host compiler and nvcc (FLUID_HOSTDEVICE),
// so a CPU kernel and its CUDA twin convert bit for bit alike.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define FLUID_FP16_HD __host__ __device__ __forceinline__
#else
#define FLUID_FP16_HD inline
#endif

namespace fluid {

namespace fp16_internal {

FLUID_FP16_HD uint32_t Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

FLUID_FP16_HD float FromBits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// Shifts `mantissa` right by `shift` (>= 1), rounding to nearest with ties
// to even on the bits shifted out.
FLUID_FP16_HD uint32_t ShiftRoundEven(uint32_t mantissa, int shift) {
  if (shift > 31) return 0;
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u))) return kept + 1;
  return kept;
}

}  // namespace fp16_internal

FLUID_FP16_HD uint16_t FloatToBf16Bits(float value) {
  const uint32_t u = fp16_internal::Bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN, kept quiet
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // a carry into the exponent is the correct rounding up (to infinity at
  // the top of the range).
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

FLUID_FP16_HD float Bf16BitsToFloat(uint16_t bits) {
  return fp16_internal::FromBits(static_cast<uint32_t>(bits) << 16);
}

FLUID_FP16_HD uint16_t FloatToFp16Bits(float value) {
  const uint32_t u = fp16_internal::Bits(value);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x47800000u) return sign | 0x7c00u;  // >= 65536, or inf
  const int exponent = static_cast<int>(abs >> 23) - 127;
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;  // implicit 1
  if (exponent < -14) {
    // Subnormal half (or zero): value = m * 2^-24 with m < 1024.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    return sign | static_cast<uint16_t>(fp16_internal::ShiftRoundEven(
                      mantissa, -exponent - 14 + 13));
  }
  // Normal: 10 mantissa bits; a carry out of the mantissa bumps the
  // exponent (up to infinity for values that round past 65504).
  const uint32_t half = (static_cast<uint32_t>(exponent + 15) << 10) +
                        fp16_internal::ShiftRoundEven(mantissa, 13) - 0x400u;
  return sign | static_cast<uint16_t>(half);
}

FLUID_FP16_HD float Fp16BitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f)
    return fp16_internal::FromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return fp16_internal::FromBits(sign | ((exponent + 112) << 23) |
                                   (mantissa << 13));
  }
  // Zero or subnormal: mantissa * 2^-24, exact in float32.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

// bfloat16: static_cast to and from any arithmetic type goes through
// float (a double is rounded to float first: the double rounding can only
// matter for a double within 2^-24 relative of a bf16 tie).
struct bfloat16 {
  uint16_t x;

  bfloat16() = default;
  FLUID_FP16_HD explicit bfloat16(float f) : x(FloatToBf16Bits(f)) {}
  template <typename T>
  FLUID_FP16_HD explicit bfloat16(T v)
      : x(FloatToBf16Bits(static_cast<float>(v))) {}
  FLUID_FP16_HD explicit operator float() const { return Bf16BitsToFloat(x); }
  template <typename T>
  FLUID_FP16_HD explicit operator T() const {
    return static_cast<T>(Bf16BitsToFloat(x));
  }
  FLUID_FP16_HD static bfloat16 FromBits(uint16_t bits) {
    bfloat16 b;
    b.x = bits;
    return b;
  }
};

// float16 (IEEE binary16), converted as bfloat16 is.
struct float16 {
  uint16_t x;

  float16() = default;
  FLUID_FP16_HD explicit float16(float f) : x(FloatToFp16Bits(f)) {}
  template <typename T>
  FLUID_FP16_HD explicit float16(T v)
      : x(FloatToFp16Bits(static_cast<float>(v))) {}
  FLUID_FP16_HD explicit operator float() const { return Fp16BitsToFloat(x); }
  template <typename T>
  FLUID_FP16_HD explicit operator T() const {
    return static_cast<T>(Fp16BitsToFloat(x));
  }
  FLUID_FP16_HD static float16 FromBits(uint16_t bits) {
    float16 h;
    h.x = bits;
    return h;
  }
};

static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2,
              "16-bit element types must be 2 bytes");

// float from any element type (the identity for float), for kernels that
// compute in float32 whatever they store.
FLUID_FP16_HD float ToFloat(float v) { return v; }
FLUID_FP16_HD float ToFloat(bfloat16 v) { return Bf16BitsToFloat(v.x); }
FLUID_FP16_HD float ToFloat(float16 v) { return Fp16BitsToFloat(v.x); }

// T from a float (the identity for float).
template <typename T>
FLUID_FP16_HD T FromFloat(float v) {
  return static_cast<T>(v);
}
template <>
FLUID_FP16_HD bfloat16 FromFloat<bfloat16>(float v) {
  return bfloat16::FromBits(FloatToBf16Bits(v));
}
template <>
FLUID_FP16_HD float16 FromFloat<float16>(float v) {
  return float16::FromBits(FloatToFp16Bits(v));
}

// Whether T is one of the 16-bit float types.
template <typename T>
struct IsHalfType {
  static constexpr bool value = false;
};
template <>
struct IsHalfType<bfloat16> {
  static constexpr bool value = true;
};
template <>
struct IsHalfType<float16> {
  static constexpr bool value = true;
};

}  // namespace fluid

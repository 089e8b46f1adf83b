// The 16-bit wire formats of gradient compression against references
// written independently: the compiler's own _Float16 conversion for IEEE
// half, and a nearest-neighbour search in double precision for bfloat16.
#include "src/framework/wire_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "src/framework/enforce.h"

namespace fluid {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

uint16_t CompilerHalf(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, sizeof(u));
  return u;
}

// The bfloat16 nearest to finite `f`: of the two bfloat16 values around it
// (its bits truncated, and the next one up in magnitude) the closer in
// exact double arithmetic, the even one on a tie.
uint16_t NearestBf16(float f) {
  const uint16_t low = static_cast<uint16_t>(Bits(f) >> 16);
  const uint16_t high = static_cast<uint16_t>(low + 1);
  const double x = f;
  const double dl = std::fabs(x - static_cast<double>(FromBits(low << 16)));
  const double dh = std::fabs(static_cast<double>(FromBits(high << 16)) - x);
  if (dl < dh) return low;
  if (dh < dl) return high;
  return (low & 1) ? high : low;
}

// Floats that exercise every path: random bit patterns over the whole
// range, values near the edges of half's range, and exact ties.
std::vector<float> Samples() {
  std::vector<float> v = {0.0f,     -0.0f,    1.0f,     -1.0f,    0.1f,
                          65504.0f, 65519.0f, 65520.0f, 65536.0f, 1e30f,
                          6.1e-5f,  6.0e-8f,  2.98e-8f, 1e-40f,   -3.5f};
  v.push_back(std::ldexp(1.0f, -25));             // half way to 2^-24
  v.push_back(std::ldexp(3.0f, -26));             // 1.5 * 2^-25
  v.push_back(1.0f + std::ldexp(1.0f, -11));      // half tie, even
  v.push_back(1.0f + 3 * std::ldexp(1.0f, -11));  // half tie, odd
  v.push_back(1.0f + std::ldexp(1.0f, -8));       // bf16 tie, even
  v.push_back(1.0f + 3 * std::ldexp(1.0f, -8));   // bf16 tie, odd
  v.push_back(std::numeric_limits<float>::max());
  v.push_back(std::numeric_limits<float>::infinity());
  v.push_back(-std::numeric_limits<float>::infinity());
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    float f = FromBits(any(rng));
    if (!std::isnan(f)) v.push_back(f);
  }
  std::uniform_real_distribution<float> gradients(-4.0f, 4.0f);
  for (int i = 0; i < 100000; ++i) v.push_back(gradients(rng) * 1e-3f);
  return v;
}

TEST(WireFormat, HalfMatchesTheCompilersConversion) {
  for (float f : Samples()) {
    ASSERT_EQ(FloatToFp16(f), CompilerHalf(f)) << "value " << f;
  }
}

TEST(WireFormat, Bf16IsTheNearestValueTiesToEven) {
  for (float f : Samples()) {
    if (std::isinf(f) || std::fabs(f) > 3.38e38f) continue;  // no neighbour
    ASSERT_EQ(FloatToBf16(f), NearestBf16(f)) << "value " << f;
  }
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(FloatToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
}

TEST(WireFormat, EveryCodeSurvivesARoundTrip) {
  for (uint32_t code = 0; code <= 0xffff; ++code) {
    const uint16_t c = static_cast<uint16_t>(code);
    const float h = Fp16ToFloat(c);
    const float b = Bf16ToFloat(c);
    if (std::isnan(h)) {
      EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(h))));
    } else {
      ASSERT_EQ(FloatToFp16(h), c) << "half code " << code;
      _Float16 ref;
      std::memcpy(&ref, &c, sizeof(ref));
      ASSERT_EQ(h, static_cast<float>(ref)) << "half code " << code;
    }
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(b))));
    } else {
      ASSERT_EQ(FloatToBf16(b), c) << "bf16 code " << code;
    }
  }
}

TEST(WireFormat, NaNStaysNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(nan))));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(nan))));
  // A signalling NaN whose payload sits in the bits bf16 drops.
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(FromBits(0x7f800001u)))));
}

TEST(WireFormat, BuffersAndNames) {
  std::vector<float> in = {1.0f, -2.5f, 0.1f}, out(3);
  std::vector<uint16_t> wire(3);
  EncodeWire(WireFormat::kFp16, in.data(), wire.data(), 3);
  DecodeWire(WireFormat::kFp16, wire.data(), out.data(), 3);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
  EXPECT_NEAR(out[2], 0.1f, 1e-4f);
  EXPECT_EQ(ParseWireFormat("bf16"), WireFormat::kBf16);
  EXPECT_EQ(ParseWireFormat("none"), WireFormat::kNative);
  EXPECT_STREQ(WireFormatName(WireFormat::kFp16), "fp16");
  EXPECT_EQ(WireBytes(WireFormat::kBf16), 2);
  EXPECT_EQ(WireBytes(WireFormat::kNative), 4);
  try {
    ParseWireFormat("int8");
    FAIL() << "int8 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none, bf16 or fp16"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("int8"), std::string::npos);
  }
}

}  // namespace
}  // namespace fluid

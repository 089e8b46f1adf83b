// gelu and its gradient over float arrays, vectorised with Eigen's packets
// (the widest the build targets: 16 floats with AVX-512) for the float32 and
// the 16-bit CPU kernels. The float64 kernel keeps the per-element functor
// and libm's erf (activation_functors.h).
//
// The exact form needs Phi(x) = 1 - E(x) for x > 0 and E(x) for x <= 0,
// where E(x) = erfc(|x| / sqrt(2)) / 2. With z = |x| / sqrt(2) and
// t = 1 / (1 + z / 2), erfc(z) = t * exp(-z^2 + Q(t)); Q is a polynomial of
// degree 9 fitted (minimax, by Lawson-weighted least squares in float64;
// tools/fit_gelu_erfc.py) to log(erfc(z) / t) + z^2 on z in [0, 9.5], where
// it is within 4.3e-8: erfc's relative error is that before float32
// rounding, in the tail as near 0. Working from E keeps gelu's relative
// accuracy for negative x (x * (1 + erf) cancels there), and for x > 0
// gelu = x - x E is one fused multiply-add, rounded once. Past z = 9.5
// (x < -13.4) E is below float32's normal range and is taken as 0. The
// tanh form is x * sigmoid(2 u) = x / (1 + exp(-2 u)), the same function
// without tanh's cancellation in the negative tail, and likewise
// x - x e s for x > 0.
//
// Measured against long-double references at every multiple of 2^-12 in
// [-16, 16] (tests/ops/gelu_op_test.cc), both forms: gelu within 2.5e-7
// absolute (half a float32 unit near |x| = 5; the scalar float32 kernel
// it replaces is no closer) and, for x in [-12, 0), a relative 2e-5 (the
// rounding of the exponent grows with x^2); the gradient within 2e-7.
//
// Each element's result depends only on its inputs, not on where it falls
// in the array: the last partial packet is computed in a padded copy. So
// splitting the array over threads never changes a bit.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <cstring>

// GCC 12 reports its own AVX-512 intrinsics' undefined-register idiom
// (`__m512 __Y = __Y;`) as uninitialised once they are inlined here (GCC
// bug 105593); the values are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace fluid {
namespace ops {
namespace gelu_cpu {

namespace ei = Eigen::internal;
using Packet = ei::packet_traits<float>::type;
constexpr int kLanes = sizeof(Packet) / sizeof(float);

// E(x) = 0 for |x| / sqrt(2) at or past this.
constexpr float kZMax = 9.5f;

// Q(t) = sum kQ[i] t^i (see above).
constexpr float kQ[10] = {-1.2654269701538257f, 0.998205079561903f,
                          0.3903180326032489f,  0.017017431880826474f,
                          0.05296041465322915f, -0.17748526643539056f,
                          -0.5789137019492413f, 1.0687607346033146f,
                          -0.643538318066563f,  0.13810260585400613f};

inline Packet Set(float v) { return ei::pset1<Packet>(v); }

// erfc(z) / 2 for z >= 0 (0 past kZMax; NaN stays NaN only through x).
inline Packet HalfErfc(const Packet& z) {
  const Packet zc = ei::pmin(z, Set(kZMax));
  const Packet t = ei::pdiv(Set(1.0f), ei::pmadd(zc, Set(0.5f), Set(1.0f)));
  Packet q = Set(kQ[9]);
  for (int k = 8; k >= 0; --k) q = ei::pmadd(q, t, Set(kQ[k]));
  const Packet e = ei::pmul(ei::pmul(Set(0.5f), t),
                            ei::pexp(ei::pmadd(ei::pnegate(zc), zc, q)));
  return ei::pselect(ei::pcmp_lt(z, Set(kZMax)), e, ei::pzero(e));
}

// E(x) = erfc(|x| / sqrt(2)) / 2: Phi(x) is 1 - E(x) for x > 0, else E(x).
inline Packet TailMass(const Packet& x) {
  return HalfErfc(ei::pmul(ei::pabs(x), Set(0.70710678118654752440f)));
}

// For x > 0, lo + (1 - E) written as (lo - E) + 1, else lo + E: the large
// part added last, so the sum is rounded once.
inline Packet AddPhi(const Packet& x, const Packet& e, const Packet& lo) {
  return ei::pselect(ei::pcmp_lt(ei::pzero(x), x),
                     ei::padd(ei::psub(lo, e), Set(1.0f)), ei::padd(lo, e));
}

// phi(x), the standard normal density (0 where exp(-x^2 / 2) underflows).
inline Packet Pdf(const Packet& x) {
  const Packet h = ei::pmul(Set(-0.5f), ei::pmul(x, x));
  const Packet d = ei::pmul(Set(0.39894228040143267794f),
                            ei::pexp(ei::pmax(h, Set(-87.0f))));
  return ei::pselect(ei::pcmp_lt(h, Set(-87.0f)), ei::pzero(d), d);
}

// The tanh form's (1 + tanh(u)) / 2, u = sqrt(2 / pi) * (x + 0.044715 x^3),
// is sigmoid(2 u) = s = 1 / (1 + e) with e = exp(-2 u); and 1 - s = e s,
// without the cancellation of 1 - s. Where e would pass float32's range,
// s is taken as 0 (e is clamped to stay finite, so e s s is 0 there too).
struct TanhForm {
  Packet s, e;
};

inline TanhForm Sigmoid2U(const Packet& x) {
  const Packet x2 = ei::pmul(x, x);
  const Packet u = ei::pmul(ei::pmul(Set(0.79788456080286535588f), x),
                            ei::pmadd(x2, Set(0.044715f), Set(1.0f)));
  const Packet a = ei::pmul(Set(-2.0f), u);
  TanhForm f;
  f.e = ei::pexp(ei::pmin(a, Set(88.0f)));
  f.s = ei::pselect(ei::pcmp_lt(Set(88.0f), a), ei::pzero(a),
                    ei::pdiv(Set(1.0f), ei::padd(Set(1.0f), f.e)));
  return f;
}

// x * Phi(x): for x > 0, x - x E (one rounding, by a fused multiply-add),
// else x E. The tanh form likewise: x - x e s for x > 0, else x s.
template <bool kApproximate>
inline Packet Forward(const Packet& x) {
  const Packet positive = ei::pcmp_lt(ei::pzero(x), x);
  Packet r;
  if constexpr (kApproximate) {
    const TanhForm f = Sigmoid2U(x);
    r = ei::pselect(positive, ei::pmadd(ei::pnegate(x), ei::pmul(f.e, f.s), x),
                    ei::pmul(x, f.s));
  } else {
    const Packet e = TailMass(x);
    r = ei::pselect(positive, ei::pmadd(ei::pnegate(x), e, x), ei::pmul(x, e));
  }
  // Past 14 gelu(x) is x in float32 (both forms); x - x * 0 is NaN at +inf.
  return ei::pselect(ei::pcmp_lt(Set(14.0f), x), x, r);
}

// dOut * gelu'(x). Exact: Phi(x) + x phi(x) (AddPhi). Tanh form, with
// s = sigmoid(2u):
// s + 2 x s (1 - s) u'(x), u' = sqrt(2 / pi) (1 + 0.134145 x^2).
template <bool kApproximate>
inline Packet Backward(const Packet& x, const Packet& dout) {
  if (!kApproximate)
    return ei::pmul(dout, AddPhi(x, TailMass(x), ei::pmul(x, Pdf(x))));
  const TanhForm f = Sigmoid2U(x);
  const Packet du =
      ei::pmul(Set(0.79788456080286535588f),
               ei::pmadd(ei::pmul(x, x), Set(0.134145f), Set(1.0f)));
  const Packet slope = ei::pmul(
      ei::pmul(Set(2.0f), x), ei::pmul(ei::pmul(ei::pmul(f.s, f.s), f.e), du));
  // s + slope, for x > 0 as (slope - e s) + 1 (s = 1 - e s), rounded once.
  const Packet sum =
      ei::pselect(ei::pcmp_lt(ei::pzero(x), x),
                  ei::padd(ei::psub(slope, ei::pmul(f.e, f.s)), Set(1.0f)),
                  ei::padd(f.s, slope));
  return ei::pmul(dout, sum);
}

// fn(packet) over x[0, n) into out, the last partial packet in a padded copy.
template <typename Fn>
void Map(const float* x, float* out, int64_t n, Fn fn) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    ei::pstoreu(out + i, fn(ei::ploadu<Packet>(x + i)));
  if (i == n) return;
  float buf[kLanes] = {};
  std::memcpy(buf, x + i, sizeof(float) * (n - i));
  ei::pstoreu(buf, fn(ei::ploadu<Packet>(buf)));
  std::memcpy(out + i, buf, sizeof(float) * (n - i));
}

// fn(packet of a, packet of b) over [0, n) into out, as Map.
template <typename Fn>
void Map2(const float* a, const float* b, float* out, int64_t n, Fn fn) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    ei::pstoreu(out + i,
                fn(ei::ploadu<Packet>(a + i), ei::ploadu<Packet>(b + i)));
  if (i == n) return;
  float ba[kLanes] = {}, bb[kLanes] = {};
  std::memcpy(ba, a + i, sizeof(float) * (n - i));
  std::memcpy(bb, b + i, sizeof(float) * (n - i));
  ei::pstoreu(ba, fn(ei::ploadu<Packet>(ba), ei::ploadu<Packet>(bb)));
  std::memcpy(out + i, ba, sizeof(float) * (n - i));
}

}  // namespace gelu_cpu

// out[i] = gelu(x[i]), i < n (exact or tanh form). out may alias x.
inline void GeluFloats(const float* x, float* out, int64_t n,
                       bool approximate) {
  using gelu_cpu::Packet;
  if (approximate) {
    gelu_cpu::Map(x, out, n,
                  [](const Packet& v) { return gelu_cpu::Forward<true>(v); });
  } else {
    gelu_cpu::Map(x, out, n,
                  [](const Packet& v) { return gelu_cpu::Forward<false>(v); });
  }
}

// dx[i] = dout[i] * gelu'(x[i]), i < n. dx may alias x or dout.
inline void GeluGradFloats(const float* x, const float* dout, float* dx,
                           int64_t n, bool approximate) {
  using gelu_cpu::Packet;
  if (approximate) {
    gelu_cpu::Map2(x, dout, dx, n, [](const Packet& v, const Packet& g) {
      return gelu_cpu::Backward<true>(v, g);
    });
  } else {
    gelu_cpu::Map2(x, dout, dx, n, [](const Packet& v, const Packet& g) {
      return gelu_cpu::Backward<false>(v, g);
    });
  }
}

}  // namespace ops
}  // namespace fluid

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

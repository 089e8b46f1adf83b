#!/usr/bin/python3
"""Fits the polynomial Q of ops/gelu_cpu.h and prints its coefficients:

    erfc(z) = t * exp(-z^2 + Q(t)),  t = 1 / (1 + z / 2),  z in [0, 9.5]

Q, of degree 9, minimises the largest absolute error of the exponent, which
is erfc's relative error. The minimax fit is approached by Lawson's
iteration: weighted least squares over a dense grid, each weight scaled
by its point's error, in float64 against mpmath's erfc at 40 digits.

    /usr/bin/python3 tools/fit_gelu_erfc.py [--degree 9] [--zmax 9.5]
"""
import argparse

import mpmath
import numpy as np


def fit(degree, zmax, iterations=200):
    """(coefficients of Q, lowest first; the largest exponent error)."""
    mpmath.mp.dps = 40
    z = np.unique(np.concatenate([
        np.linspace(0, zmax, 4000),
        zmax / 2 * (1 - np.cos(np.linspace(0, np.pi, 2000)))]))
    t = 1 / (1 + 0.5 * z)
    target = np.array([
        float(mpmath.log(mpmath.erfc(mpmath.mpf(v)) * (1 + mpmath.mpf(v) / 2))
              + mpmath.mpf(v) ** 2) for v in z])
    basis = np.stack([t ** i for i in range(degree + 1)], 1)
    weights = np.ones_like(z)
    best = (np.inf, None)
    for _ in range(iterations):
        root = np.sqrt(weights)
        coef, *_ = np.linalg.lstsq(basis * root[:, None], target * root,
                                   rcond=None)
        err = np.abs(basis @ coef - target)
        if err.max() < best[0]:
            best = (err.max(), coef)
        weights = np.maximum(weights * err / np.sum(weights * err), 1e-300)
    return best[1], best[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--degree", type=int, default=9)
    ap.add_argument("--zmax", type=float, default=9.5)
    a = ap.parse_args()
    coef, err = fit(a.degree, a.zmax)
    print(f"largest error of the exponent: {err:.3g}")
    print("constexpr float kQ[{}] = {{{}}};".format(
        len(coef), ", ".join(f"{c!r}f" for c in coef)))


if __name__ == "__main__":
    main()

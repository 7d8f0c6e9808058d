#!/usr/bin/env python3
"""Gamma quantiles computed without the incomplete-gamma series or continued fraction that
Sources/AggregateSchema/GammaDistribution.swift uses: the CDF is the integral of the density after
the density integrated by composite Gauss–Legendre (20 points per panel, 400 panels, summed by
math.fsum); for a shape below 1, after the substitution t = u^(1/a), which makes the integrand
smooth (P(a, x) = ∫0^{x^a} exp(-u^(1/a)) du / Γ(a + 1)). The quantile by bisection to 1e-15
relative.
Prints the fixture of GammaDistributionTests (shape, p, quantile of the unit-scale gamma).

    scripts/venv-python scripts/gamma_quantiles.py
"""
import math

# Gauss–Legendre nodes and weights of order 20 by Newton on the Legendre polynomial.
def legendre(n):
    nodes, weights = [], []
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            dx = p1 / dp
            x -= dx
            if abs(dx) < 1e-16:
                break
        nodes.append(x)
        weights.append(2 / ((1 - x * x) * dp * dp))
    return nodes, weights

NODES, WEIGHTS = legendre(20)


def integrate(f, upper, panels=400):
    h = upper / panels
    terms = []
    for j in range(panels):
        mid = (j + 0.5) * h
        for node, weight in zip(NODES, WEIGHTS):
            terms.append(weight * h / 2 * f(mid + node * h / 2))
    return math.fsum(terms)


def cdf(a, x):
    if x <= 0:
        return 0.0
    if a < 1:
        # t = u^(1/a): the integrand exp(-u^(1/a)) is smooth where the density is not.
        return integrate(lambda u: math.exp(-(u ** (1 / a))), x**a) / math.gamma(a + 1)
    return integrate(lambda t: math.exp((a - 1) * math.log(t) - t - math.lgamma(a)), x)


def quantile(a, p):
    low, high = 0.0, max(1.0, a)
    while cdf(a, high) < p:
        high *= 2
    while high - low > 1e-15 * high:
        mid = (low + high) / 2
        if cdf(a, mid) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


if __name__ == "__main__":
    for a in (0.05, 0.5, 1.0, 2.5, 10.0, 40.0):
        for p in (0.05, 0.95):
            print(f"({a!r}, {p!r}, {quantile(a, p)!r}),")

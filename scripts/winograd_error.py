#!/usr/bin/python3
"""Rounding error of Winograd F(2x2, 3x3) and F(4x4, 3x3) in float32.

    /usr/bin/python3 scripts/winograd_error.py

For 3x3 stride-1 convolutions (padding 1, batch 2, inputs and weights
uniform in [-1, 1], a fixed seed) computes the output in float32 by im2col
and one product, by F(2x2, 3x3) (the transforms of gpu/kernels/winograd.cl)
and by F(4x4, 3x3) (Lavin and Gray's points 0, ±1, ±2), every transform
and product rounded to float32 (sums in numpy's order), and prints each
one's largest error against the float64 result in the measure of the
OpenCL tests' tolerance (gpu/opencl_test.go, assertClose):

    max |got - want| / (|want| + 1e-2 * max|want|)

which the backend keeps under 1e-4. docs/opencl.md quotes the table: F(2x2)
errs about as much as im2col in float32, F(4x4) exceeds 1e-4 several times
over, which is why the backend has no F(4x4) path.
"""
import numpy as np

# F(2x2, 3x3): Y = A^T [(G g G^T) * (B^T d B)] A.
BT2 = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float)
G2 = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]])
AT2 = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float)
# F(4x4, 3x3), points 0, 1, -1, 2, -2 and infinity.
BT4 = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float)
G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
AT4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float)


def measure(got, want):
    """The OpenCL tests' error measure (assertClose) of got against want."""
    scale = np.abs(want).max()
    return (np.abs(got - want) / (np.abs(want) + 1e-2 * scale)).max()


def im2col(x, w, pad, dtype):
    """The convolution as one product of the filters and x's column matrix."""
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(dtype), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - 2, wd + 2 * pad - 2
    cols = np.stack([xp[:, :, r:r + oh, s:s + ow] for r in range(3) for s in range(3)], axis=2)
    cols = cols.reshape(n, c * 9, oh * ow)
    wm = w.reshape(w.shape[0], -1).astype(dtype)
    return np.einsum('kr,nrp->nkp', wm, cols).astype(dtype).reshape(n, w.shape[0], oh, ow)


def winograd(x, w, pad, m, bt, g, at):
    """F(m x m, 3x3) with every step rounded to float32."""
    f = np.float32
    bt, g, at = bt.astype(f), g.astype(f), at.astype(f)
    n, c, h, wd = x.shape
    a = m + 2
    oh, ow = h + 2 * pad - 2, wd + 2 * pad - 2
    th, tw = -(-oh // m), -(-ow // m)
    xp = np.zeros((n, c, th * m + 2, tw * m + 2), f)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    u = np.einsum('ij,kcjl,ml->kcim', g, w.astype(f), g).astype(f)
    d = np.stack([np.stack([xp[:, :, i * m:i * m + a, j * m:j * m + a] for j in range(tw)], 2)
                  for i in range(th)], 2)
    v = np.einsum('ij,nctujl,ml->nctuim', bt, d, bt).astype(f)
    prod = np.einsum('kcim,nctuim->nktuim', u, v).astype(f)
    y = np.einsum('ij,nktujl,ml->nktuim', at, prod, at).astype(f)
    y = y.transpose(0, 1, 2, 4, 3, 5).reshape(n, w.shape[0], th * m, tw * m)
    return y[:, :, :oh, :ow]


def main():
    rng = np.random.default_rng(1)
    print("in→out channels, plane: error of im2col, F(2x2), F(4x4) in float32 (tolerance 1e-4)")
    for c, k, side in [(7, 9, 13), (131, 70, 13), (192, 384, 13), (384, 256, 13), (256, 256, 14), (64, 64, 56)]:
        x = rng.uniform(-1, 1, (2, c, side, side)).astype(np.float32)
        w = rng.uniform(-1, 1, (k, c, 3, 3)).astype(np.float32)
        want = im2col(x, w, 1, np.float64)
        print(f"{c:4d}→{k:<4d} {side}x{side}: {measure(im2col(x, w, 1, np.float32), want):8.2g}"
              f" {measure(winograd(x, w, 1, 2, BT2, G2, AT2), want):8.2g}"
              f" {measure(winograd(x, w, 1, 4, BT4, G4, AT4), want):8.2g}")


if __name__ == "__main__":
    main()

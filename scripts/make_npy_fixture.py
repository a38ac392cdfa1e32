#!/usr/bin/python3
"""Write the .npy fixtures that data/npy_test.go reads.

Run from the repository root with the system Python that has numpy:

    /usr/bin/python3 scripts/make_npy_fixture.py

Every array is a function of its index so the Go test can rebuild the
expected values without Python: value[i] = (i - 7.5) / 4 in C order.

The resize goldens (resize_*.npy) come from scripts/make_image_fixtures.py.
"""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "testdata")


def ramp(shape, dtype="<f4"):
    n = int(np.prod(shape))
    return ((np.arange(n, dtype=np.float64) - 7.5) / 4).astype(dtype).reshape(shape)


def main():
    os.makedirs(OUT, exist_ok=True)
    # Version 1.0, as np.save writes it.
    np.save(os.path.join(OUT, "f32_2x3x4_v1.npy"), ramp((2, 3, 4)))
    # Version 2.0 (uint32 header length), forced.
    with open(os.path.join(OUT, "f32_5_v2.npy"), "wb") as f:
        np.lib.format.write_array(f, ramp((5,)), version=(2, 0))
    # A 0-d array (shape ()).
    np.save(os.path.join(OUT, "f32_scalar_v1.npy"), np.array(2.5, dtype="<f4"))
    # Cases ReadNPY must refuse.
    np.save(os.path.join(OUT, "f64_2x3.npy"), ramp((2, 3), "<f8"))
    np.save(os.path.join(OUT, "f32_big_endian.npy"), ramp((2, 3), ">f4"))
    np.save(os.path.join(OUT, "f32_fortran.npy"), np.asfortranarray(ramp((2, 3))))
    print("wrote fixtures to", os.path.normpath(OUT), "with numpy", np.__version__)


if __name__ == "__main__":
    main()

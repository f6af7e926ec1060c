#!/usr/bin/python3
"""Makes the reference JPEG of tests/image/jpeg_test.cpp and PIL's decode of it.

    /usr/bin/python3 tests/data/jpeg/make_reference.py   (Pillow 9.4, Debian's python3-pil)

reference.jpg: a 96 x 64 picture (gradients, a disc, stripes, deterministic noise) saved by
PIL at quality 90 with 4:2:0 chroma subsampling. reference_pil.ppm: PIL's decode of that file,
a binary PPM (P6), which pinbench's decode is compared with. Both are committed: the test does
not need Python. Running this again rewrites them; the test's golden checksum then changes only
if PIL's encoder made different bytes.
"""
import os

from PIL import Image

WIDTH, HEIGHT = 96, 64
here = os.path.dirname(os.path.abspath(__file__))

state = 12345


def noise():
    """A small LCG, so that the picture does not depend on Python's random module."""
    global state
    state = (state * 1103515245 + 12345) % 2**31
    return (state >> 16) % 9 - 4


pixels = []
for y in range(HEIGHT):
    for x in range(WIDTH):
        r = 40 + 2 * x
        g = 30 + 3 * y
        b = 200 - x - y
        if (x - 60) ** 2 + (y - 30) ** 2 < 18 ** 2:  # a disc with a hard edge
            r, g, b = 230, 200, 40
        if 8 <= x < 32 and (y // 4) % 2 == 0:  # stripes
            r, g, b = 20, 20, 20
        pixels.append(tuple(max(0, min(255, v + noise())) for v in (r, g, b)))

image = Image.new("RGB", (WIDTH, HEIGHT))
image.putdata(pixels)
jpeg_path = os.path.join(here, "reference.jpg")
image.save(jpeg_path, "JPEG", quality=90, subsampling=2)  # 2: 4:2:0

with Image.open(jpeg_path) as decoded:
    decoded.convert("RGB").save(os.path.join(here, "reference_pil.ppm"), "PPM")

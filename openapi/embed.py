#!/usr/bin/env python3
"""Embeds a text file as a C byte array: embed.py IN OUT.c SYMBOL."""
import sys

src, out, sym = sys.argv[1:4]
data = open(src, "rb").read()
with open(out, "w") as f:
    f.write(f"/* Generated from {src.split('/')[-1]} by openapi/embed.py. Do not edit. */\n")
    f.write("#include <stddef.h>\n\n")
    f.write(f"const char {sym}[] = {{\n")
    for i in range(0, len(data), 16):
        f.write("\t" + ", ".join(str(b if b < 128 else b - 256) for b in data[i:i + 16]) + ",\n")
    f.write("\t0\n};\n")
    f.write(f"const size_t {sym}_len = {len(data)};\n")

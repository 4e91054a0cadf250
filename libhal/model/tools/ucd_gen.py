#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ucd_gen.py - regenerates the Unicode category tables of tokenizer.c.

The BPE pre-tokenizers need \\p{L} (letters: Lu Ll Lt Lm Lo), \\p{N}
(numbers: Nd Nl No) and \\p{P} (punctuation: Pc Pd Ps Pe Pi Pf Po) as
llama.cpp's unicode.cpp classifies code points. This script derives them
from the Unicode Character Database that Python's unicodedata module
carries (Debian's python3) and rewrites the block between the
"BEGIN ucd_gen.py" and "END ucd_gen.py" markers of tokenizer.c:

    python3 libhal/model/tools/ucd_gen.py libhal/model/tokenizer.c
"""
import sys
import unicodedata

CLASSES = (
    ("mm_ucd_letter", ("Lu", "Ll", "Lt", "Lm", "Lo")),
    ("mm_ucd_number", ("Nd", "Nl", "No")),
    ("mm_ucd_punct", ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po")),
)


def ranges(cats):
    out = []
    for cp in range(0x80, 0x110000):
        if unicodedata.category(chr(cp)) not in cats:
            continue
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def block():
    lines = ["/* BEGIN ucd_gen.py: generated from Unicode %s, do not edit */"
             % unicodedata.unidata_version,
             "struct mm_ucd_range {", "\tuint32_t lo, hi;", "};", ""]
    for name, cats in CLASSES:
        r = ranges(cats)
        lines.append("/* %s above U+007F */" % " ".join(cats))
        lines.append("static const struct mm_ucd_range %s[%d] = {"
                     % (name, len(r)))
        for i in range(0, len(r), 3):
            lines.append("\t" + " ".join("{ 0x%05x, 0x%05x }," % (a, b)
                                          for a, b in r[i:i + 3]))
        lines.append("};")
        lines.append("")
    lines.append("/* END ucd_gen.py */")
    return "\n".join(lines)


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    a = text.index("/* BEGIN ucd_gen.py")
    b = text.index("/* END ucd_gen.py */") + len("/* END ucd_gen.py */")
    text = text[:a] + block() + text[b:]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()

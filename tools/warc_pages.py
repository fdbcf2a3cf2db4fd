#!/usr/bin/env python3
"""Query pages for tools/bench_scale.sh: N HTML pages spread evenly over a WARC file's response
records, written as OUT/q-NNNNN.html; every other page is an edited recrawl (every 80th word
of its text between tags dropped), the others are exact copies.

    tools/warc_pages.py BATCH.warc OUT N
"""
import os
import re
import sys


def records(path):
    """Yields the HTML payload of each response record (HTTP headers removed)."""
    with open(path, "rb") as f:
        while True:
            line = f.readline()
            if not line:
                return
            if not line.startswith(b"WARC/"):
                continue
            headers = {}
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode("utf-8", "replace").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = f.read(int(headers.get("content-length", "0")))
            if headers.get("warc-type") == "response":
                _, _, html = body.partition(b"\r\n\r\n")
                yield html


def edit(html):
    """Drops every 80th word of the text between tags."""
    n = [0]

    def text(m):
        words = m.group(0).split(" ")
        kept = []
        for w in words:
            n[0] += 1
            if w.strip() and n[0] % 80 == 0:
                continue
            kept.append(w)
        return " ".join(kept)

    return re.sub(r"(?<=>)[^<]+(?=<)", text, html)


def main():
    path, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    pages = list(records(path))
    if not pages:
        sys.exit(f"warc_pages.py: no response records in {path}")
    os.makedirs(out, exist_ok=True)
    step = max(1, len(pages) // n)
    for i, html in enumerate(pages[::step][:n]):
        page = html.decode("utf-8", "replace")
        if i % 2:
            page = edit(page)
        with open(os.path.join(out, "q-%05d.html" % i), "w", encoding="utf-8") as f:
            f.write(page)


if __name__ == "__main__":
    main()

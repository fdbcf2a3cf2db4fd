#!/usr/bin/env python3
# usage: tools/nightly_batch.py NEW.warc OLD.warc OUT.warc NEW_COUNT RECRAWL_COUNT
# Fixed nightly batch: NEW fresh records of the last batch + RECRAWL edited recrawls (same URI,
# ~5% of the words of <p> text changed) of records of batch-01 (indexed at every size).
import random, re, sys
new_src, old_src, out, NEW, RECRAWL = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def records(path):
    with open(path, 'rb') as f:
        while True:
            line = f.readline()
            if not line: return
            if line.strip() != b'WARC/1.0': continue
            head = [line]
            while True:
                l = f.readline(); head.append(l)
                if l in (b'\r\n', b'\n'): break
            n = int(re.search(rb'Content-Length: (\d+)', b''.join(head)).group(1))
            body = f.read(n)
            yield head, body
def emit(o, head, body):
    h = re.sub(rb'Content-Length: \d+', b'Content-Length: %d' % len(body), b''.join(head))
    o.write(h); o.write(body); o.write(b'\r\n\r\n')
rng = random.Random(7)
with open(out, 'wb') as o:
    k = 0
    for head, body in records(new_src):
        if b'WARC-Type: response' not in b''.join(head): continue
        emit(o, head, body); k += 1
        if k == NEW: break
    k = 0
    for head, body in records(old_src):
        if b'WARC-Type: response' not in b''.join(head): continue
        if rng.random() > 0.1: continue
        def edit(m):
            words = m.group(1).split(b' ')
            for i in range(len(words)):
                if rng.random() < 0.05: words[i] = b'recrawl%d' % rng.randrange(10**6)
            return b'<p>' + b' '.join(words) + b'</p>'
        hdr, _, html = body.partition(b'\r\n\r\n')
        if not html: hdr, _, html = body.partition(b'\n\n')
        html = re.sub(rb'<p>([^<]*)</p>', edit, html)
        http = re.sub(rb'Content-Length: \d+', b'Content-Length: %d' % len(html), hdr)
        emit(o, head, http + b'\r\n\r\n' + html); k += 1
        if k == RECRAWL: break

#!/usr/bin/env python3
"""Names the functions in `perf` samples of a stripped Go binary such as terraform.

Terraform's release binaries are stripped, so perf shows bare addresses; Go keeps its own
function table (.gopclntab, Go 1.20+ layout) in every binary, which this reads. Prints the top
functions by samples of the terraform process, self time or inclusive (anywhere on the stack).

    perf record -F 4000 -g -o tf.data -- terraform -chdir=DIR apply -auto-approve
    perf script -i tf.data -F comm,ip,sym,dso | scripts/lib/gosym.py "$(command -v terraform)" --incl 40

usage: gosym.py BINARY [--self|--incl] [TOP]
"""

import bisect
import collections
import struct
import subprocess
import sys

# Where a non-PIE Go executable is mapped; perf prints addresses relative to the mapping.
GO_IMAGE_BASE = 0x400000


def function_table(binary):
    sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    for line in sections.splitlines():
        if ".gopclntab" in line:
            fields = line.split("]")[1].split()
            offset, size = int(fields[3], 16), int(fields[4], 16)
            break
    else:
        sys.exit(f"{binary} has no .gopclntab section (not a Go binary?)")
    with open(binary, "rb") as f:
        f.seek(offset)
        data = f.read(size)
    (magic,) = struct.unpack_from("<I", data, 0)
    if magic not in (0xFFFFFFF1, 0xFFFFFFF0):
        sys.exit(f"unknown .gopclntab layout {magic:#x} (this reads Go 1.18+)")
    nfunc, _nfiles, text_start, funcname_off, _cu, _filetab, _pctab, pcln_off = struct.unpack_from("<QQQQQQQQ", data, 8)
    table = []
    for i in range(nfunc):
        entry_off, func_off = struct.unpack_from("<II", data, pcln_off + 8 * i)
        _, name_off = struct.unpack_from("<Ii", data, pcln_off + func_off)
        start = funcname_off + name_off
        table.append((text_start + entry_off, data[start:data.index(b"\0", start)].decode(errors="replace")))
    table.sort()
    return [t[0] for t in table], [t[1] for t in table]


def main():
    binary = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "--self"
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    starts, names = function_table(binary)

    def name_of(address):
        i = bisect.bisect_right(starts, address) - 1
        return names[i] if i >= 0 else hex(address)

    own, anywhere = collections.Counter(), collections.Counter()
    samples = 0
    stack, comm = [], None

    def flush():
        nonlocal samples
        if comm == "terraform" and stack:
            samples += 1
            own[stack[0]] += 1
            for frame in set(stack):
                anywhere[frame] += 1

    for line in sys.stdin:
        if not line.strip():
            flush()
            stack, comm = [], None
        elif not line[0].isspace():
            comm = line.split()[0]
        else:
            fields = line.split()
            if fields[-1].endswith("/terraform)") or "[unknown]" in line:
                stack.append(name_of(int(fields[0], 16) + GO_IMAGE_BASE))
            else:
                stack.append(" ".join(fields[1:-1]) or fields[0])
    flush()
    counts = own if mode == "--self" else anywhere
    for name, n in counts.most_common(top):
        print(f"{100 * n / max(samples, 1):6.2f}%  {name}")
    print(f"samples {samples}")


if __name__ == "__main__":
    main()

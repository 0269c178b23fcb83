#!/usr/bin/env python3
"""Write a large *sparse* TF checkpoint and safetensors file for bench/checkpoint.sh.

The TF index is a real table in TensorFlow's layout (prefix-compressed keys, restart points,
4 KiB data blocks, index block, footer with the table magic) whose BundleEntryProtos place
N tensors of 4 MiB each in a data shard of N * 4 MiB; the shard is a sparse file (truncate),
so a 10 GiB checkpoint costs no disk. Usage: make_big_checkpoint.py DIR N_TENSORS
"""
import json
import os
import struct
import sys

MAGIC = 0xDB4775248B80FB57


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_TABLE = _crc_table()


def masked_crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def trailer(contents):
    """Compression type 0 (none) and the masked CRC32C of contents + type, as LevelDB does."""
    return b"\0" + struct.pack("<I", masked_crc32c(contents + b"\0"))


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field_varint(n, v):
    return varint(n << 3) + varint(v)


def field_bytes(n, b):
    return varint((n << 3) | 2) + varint(len(b)) + b


def block(entries):
    out, restarts, last = bytearray(), [], b""
    for i, (k, v) in enumerate(entries):
        if i % 16 == 0:
            restarts.append(len(out))
            shared = 0
        else:
            shared = 0
            while shared < min(len(k), len(last)) and k[shared] == last[shared]:
                shared += 1
        out += varint(shared) + varint(len(k) - shared) + varint(len(v)) + k[shared:] + v
        last = k
    for r in restarts or [0]:
        out += struct.pack("<I", r)
    out += struct.pack("<I", len(restarts or [0]))
    return bytes(out)


def write_table(path, entries, block_size=4096):
    f = bytearray()
    index = []

    def flush(cur):
        b = block(cur)
        handle = varint(len(f)) + varint(len(b))
        f.extend(b + trailer(b))
        index.append((cur[-1][0], handle))

    cur, size = [], 0
    for k, v in entries:
        cur.append((k, v))
        size += len(k) + len(v) + 8
        if size >= block_size:
            flush(cur)
            cur, size = [], 0
    if cur:
        flush(cur)
    meta = block([])
    meta_handle = varint(len(f)) + varint(len(meta))
    f.extend(meta + trailer(meta))
    idx = block(index)
    idx_handle = varint(len(f)) + varint(len(idx))
    f.extend(idx + trailer(idx))
    footer = (meta_handle + idx_handle).ljust(40, b"\0") + struct.pack("<Q", MAGIC)
    f.extend(footer)
    with open(path, "wb") as out:
        out.write(f)


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    os.makedirs(d, exist_ok=True)
    tensor = 1024 * 1024 * 4  # float32 [1024, 1024]
    shape = field_bytes(2, field_bytes(2, field_varint(1, 1024)) + field_bytes(2, field_varint(1, 1024)))
    header = field_varint(1, 1) + field_bytes(3, field_varint(1, 1))
    entries = [(b"", header)]
    names = sorted(f"model/block_{i:05d}/dense/kernel".encode() for i in range(n))
    for i, name in enumerate(names):
        e = field_varint(1, 1) + shape + field_varint(4, i * tensor) + field_varint(5, tensor)
        entries.append((name, e))
    prefix = os.path.join(d, "model.ckpt-1000")
    write_table(prefix + ".index", entries)
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.truncate(n * tensor)
    with open(os.path.join(d, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "model.ckpt-1000"\n')
    # A safetensors file of the same size, also sparse.
    hdr = {"__metadata__": {"format": "pt"}}
    for i, name in enumerate(names):
        hdr[name.decode()] = {"dtype": "F32", "shape": [1024, 1024],
                              "data_offsets": [i * tensor, (i + 1) * tensor]}
    h = json.dumps(hdr).encode()
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        f.truncate(8 + len(h) + n * tensor)


if __name__ == "__main__":
    main()

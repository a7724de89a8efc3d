"""Reads an offline W&B run's `.wandb` file and prints, as JSON, the history rows it logged
({"_step": k, tag: value, ...}). The file is W&B's record log: a 7-byte header (":W&B", magic
0xBEE1, version 0), then LevelDB-style records in 32 KiB blocks (CRC, length, type: full, first,
middle, last), each record a `wandb_internal_pb2.Record` the client's own protocol buffers parse."""
import glob
import json
import struct
import sys

from wandb.proto import wandb_internal_pb2

BLOCK = 32768
HEADER = 7


def records(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:4] != b":W&B":
        raise SystemExit("%s: not a W&B record log" % path)
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        body = data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind == 0 and length == 0:
            continue
        if kind == 1:
            yield body
        elif kind == 2:
            pending = body
        elif kind == 3:
            pending += body
        elif kind == 4:
            yield pending + body
            pending = b""


files = glob.glob(sys.argv[1] + "/wandb/offline-run-*/run-*.wandb")
rows = []
for path in sorted(files):
    for body in records(path):
        rec = wandb_internal_pb2.Record()
        rec.ParseFromString(body)
        if rec.WhichOneof("record_type") == "history":
            row = {}
            for item in rec.history.item:
                key = item.key or "/".join(item.nested_key)
                row[key] = json.loads(item.value_json)
            rows.append(row)
print(json.dumps({"files": len(files), "rows": rows}))

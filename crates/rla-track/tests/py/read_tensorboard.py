"""Reads a folder of TensorBoard event files with TensorBoard's own reader and prints, as JSON,
every scalar tag's (step, value) points and every text tag's strings."""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator

acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={"scalars": 0, "tensors": 0})
acc.Reload()
tags = acc.Tags()
out = {"scalars": {}, "texts": {}}
for tag in tags.get("scalars", []):
    out["scalars"][tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
for tag in tags.get("tensors", []):
    texts = []
    for e in acc.Tensors(tag):
        texts.append([e.step, [s.decode() for s in e.tensor_proto.string_val]])
    out["texts"][tag] = texts
print(json.dumps(out))

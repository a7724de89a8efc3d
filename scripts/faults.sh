#!/usr/bin/env bash
# The fault script: bad input and faults a careful user or an attacker would try, each with what
# it must give — a clear error naming what was wrong (exit status 1, no panic), or the right
# result — and what it gave. Ends with the table the README's "Reliability" section shows:
# cases tried → clear errors, right results, panics, hangs, silent wrongs. Exits non-zero if any
# case panicked, hung or was silently wrong.
#
#   scripts/faults.sh            # builds the debug binary if needed (cargo build -p rlanything)
#   RLA_BIN=target/release/rlanything scripts/faults.sh
#
# Every case runs under a time limit (a hang is a fault), in a scratch folder that is removed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ -z "${RLA_BIN:-}" ]; then
  cargo build -q -p rlanything || exit 1
  RLA_BIN=$root/target/debug/rlanything
fi
BIN=$(realpath "$RLA_BIN")
work=$(mktemp -d -t rla-faults-XXXXXX)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1

tried=0 clear=0 right=0 panics=0 hangs=0 silent=0
failures=()
LIMIT=${RLA_FAULT_LIMIT:-120}

# expect NAME ERROR-TEXT -- COMMAND...: the command must fail with status 1, without a panic,
# naming ERROR-TEXT (a substring of its output).
# expect NAME ok -- COMMAND...: the command must succeed.
# expect NAME ok:TEXT -- COMMAND...: the command must succeed and say TEXT (a result that is
# right but needs a word, such as a score of 0 for a file that cannot be read).
expect() {
  local name=$1 want=$2
  shift 3
  tried=$((tried + 1))
  local out status
  out=$(timeout "$LIMIT" "$@" 2>&1 </dev/null)
  status=$?
  local verdict
  if [ $status -eq 124 ]; then
    verdict=hang
  elif [ $status -eq 101 ] || [ $status -ge 128 ] || grep -q "panicked at" <<<"$out"; then
    verdict=panic
  elif [ "$want" = ok ]; then
    if [ $status -eq 0 ]; then verdict=right; else verdict=silent; fi
  elif [ "${want#ok:}" != "$want" ]; then
    if [ $status -eq 0 ] && grep -qF -- "${want#ok:}" <<<"$out"; then verdict=right; else verdict=silent; fi
  elif [ $status -eq 0 ]; then
    verdict=silent
  elif grep -qF -- "$want" <<<"$out"; then
    verdict=clear
  else
    verdict=unclear
  fi
  local said
  said=$(grep -m1 -E "^error|Error|error:|WARN" <<<"$out" | sed 's/^.*WARN //' | cut -c1-150)
  [ -z "$said" ] && said=$(tail -n1 <<<"$out" | cut -c1-150)
  case $verdict in
    clear) clear=$((clear + 1)) ;;
    right) right=$((right + 1)) ;;
    panic) panics=$((panics + 1)); failures+=("$name: panic (status $status)") ;;
    hang) hangs=$((hangs + 1)); failures+=("$name: no answer in ${LIMIT}s") ;;
    silent) silent=$((silent + 1)); failures+=("$name: status $status, expected ${want}") ;;
    unclear) silent=$((silent + 1)); failures+=("$name: did not name \"$want\": $said") ;;
  esac
  printf '%-8s %-58s %s\n' "$verdict" "$name" "$said"
}

py() { python3 - "$@"; }

echo "== fixtures"
printf 'go to the fridge 1 open close take apple from in on put cabinet 2 look\n' >corpus.txt
cat >tiny.toml <<'EOF'
arch = "qwen3"
hidden_size = 32
intermediate_size = 64
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1
max_position_embeddings = 64
EOF
"$BIN" lm init --config tiny.toml --tokenizer-corpus corpus.txt --out model >/dev/null || exit 1
# a config edited to values no model can take
edit_config() { # folder key value
  cp -r model "$1"
  py "$1/config.json" "$2" "$3" <<'EOF'
import json, sys
p, k, v = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
c = json.load(open(p)); c[k] = v; json.dump(c, open(p, "w"))
EOF
}
shape_config() { # file key value
  sed "s/^$2 = .*/$2 = $3/" tiny.toml >"$1"
}

echo "== the model: shapes, values, weights, context"
shape_config huge-hidden.toml hidden_size 4611686018427387904
expect "hidden_size = 2^62" "overflows" -- "$BIN" lm init --config huge-hidden.toml --tokenizer-corpus corpus.txt --out m1
shape_config big-hidden.toml hidden_size 1000000000
expect "hidden_size = 10^9" "memory" -- "$BIN" lm init --config big-hidden.toml --tokenizer-corpus corpus.txt --out m2
shape_config many-layers.toml num_hidden_layers 1000000000
expect "num_hidden_layers = 10^9" "memory" -- "$BIN" lm init --config many-layers.toml --tokenizer-corpus corpus.txt --out m3
edit_config model-eps rms_norm_eps -1
expect "rms_norm_eps = -1" "rms_norm_eps" -- "$BIN" lm generate --model model-eps --prompt "go to"
edit_config model-theta rope_theta -1
expect "rope_theta = -1" "rope_theta" -- "$BIN" lm generate --model model-theta --prompt "go to"
cp -r model model-nan
py model-nan/model.safetensors <<'EOF'
import json, struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
name, t = next((k, v) for k, v in h.items() if k != "__metadata__")
start = 8 + n + t["data_offsets"][0]
b[start:start + 4] = struct.pack("<f", float("nan"))
open(p, "wb").write(b)
EOF
expect "weights holding NaN: lm generate" "NaN" -- "$BIN" lm generate --model model-nan --prompt "go to"
expect "weights holding NaN: eval" "NaN" -- "$BIN" eval --model model-nan --n 1
expect "weights holding NaN: serve" "NaN" -- "$BIN" serve --model model-nan --port 0
# LoRA adapters are checked like weights: NaN, r = 0, a scale that overflows every output
make_adapter() { # folder r alpha fill (a number, or nan)
  mkdir -p "$1"
  py "$1" "$2" "$3" "$4" model/config.json <<'EOF'
import json, struct, sys
d, r, alpha, fill, cfg = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
c = json.load(open(cfg))
hidden, heads = c["hidden_size"], c["num_attention_heads"]
out = c.get("head_dim") or hidden // heads
out *= heads
tensors, data = {}, b""
for l in range(c["num_hidden_layers"]):
    p = f"base_model.model.model.layers.{l}.self_attn.q_proj"
    for name, shape in ((f"{p}.lora_A.weight", [r, hidden]), (f"{p}.lora_B.weight", [out, r])):
        n = shape[0] * shape[1]
        tensors[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * n]}
        data += struct.pack(f"<{n}f", *([fill] * n))
h = json.dumps(tensors).encode()
h += b" " * (-len(h) % 8)
open(f"{d}/adapter_model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
json.dump({"peft_type": "LORA", "r": r, "lora_alpha": alpha, "target_modules": ["q_proj"]},
          open(f"{d}/adapter_config.json", "w"))
EOF
}
for a in "nan 4 8 nan" "r0 0 8 0.01" "huge 4 1e38 0.01" "fine 4 8 0.01"; do
  set -- $a
  cp -r model "model-adapter-$1" && make_adapter "model-adapter-$1" "$2" "$3" "$4"
  make_adapter "adapter-$1" "$2" "$3" "$4"
done
expect "an adapter holding NaN: lm generate" "NaN" -- "$BIN" lm generate --model model-adapter-nan --prompt "go to"
expect "an adapter with r = 0: lm generate" "r: 0" -- "$BIN" lm generate --model model-adapter-r0 --prompt "go to"
expect "an adapter with lora_alpha = 1e38: lm generate" "changes a weight by" -- "$BIN" lm generate --model model-adapter-huge --prompt "go to"
expect "an adapter holding NaN: serve --adapter" "NaN" -- "$BIN" serve --model model --adapter adapter-nan --port 0
expect "a sound adapter: lm generate" ok -- "$BIN" lm generate --model model-adapter-fine --prompt "go to" --max-tokens 4
# files read whole are read only if regular, and only so far
cp -r model model-zero && rm model-zero/config.json && ln -s /dev/zero model-zero/config.json
expect "config.json a symlink to /dev/zero: lm generate" "not a regular file" -- "$BIN" lm generate --model model-zero --prompt "go to"
mkdir -p adapter-zero && ln -s /dev/zero adapter-zero/adapter_config.json && cp adapter-fine/adapter_model.safetensors adapter-zero/
expect "adapter_config.json a symlink to /dev/zero: serve --adapter" "not a regular file" -- "$BIN" serve --model model --adapter adapter-zero --port 0
cp -r model model-shard-zero && rm model-shard-zero/model.safetensors && ln -s /dev/zero model-shard-zero/shard.safetensors
printf '{"weight_map": {"lm_head.weight": "shard.safetensors"}}' >model-shard-zero/model.safetensors.index.json
expect "a weight shard a symlink to /dev/zero: lm generate" "not a regular file" -- "$BIN" lm generate --model model-shard-zero --prompt "go to"
mkdir -p hub/models--o--zero/snapshots/abc && cp model/config.json model/tokenizer.json hub/models--o--zero/snapshots/abc/
ln -s /dev/zero hub/models--o--zero/snapshots/abc/model.safetensors
expect "a hub snapshot's weights a symlink to /dev/zero: lm generate" "not a regular file" -- env HF_HUB_CACHE="$PWD/hub" "$BIN" lm generate --model o/zero@abc --prompt "go to"
py align0.gguf <<'EOF'
import struct, sys
k = b"general.alignment"
open(sys.argv[1], "wb").write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(k)) + k
                              + struct.pack("<II", 4, 0))
EOF
expect "a GGUF with general.alignment = 0 (candle divides by it)" "GGUF header" -- "$BIN" lm convert --gguf align0.gguf --out conv
expect "lm generate --max-tokens 99999999" "context" -- "$BIN" lm generate --model model --prompt "go to" --max-tokens 99999999
expect "lm generate within the context" ok -- "$BIN" lm generate --model model --prompt "go to" --max-tokens 8
# --out never deletes what it did not make: a folder of models, a folder of notes, a file
mkdir -p models/household notes && cp -r model models/household/policy && echo keep >notes/todo.txt
echo "not a gguf" >x.gguf
expect "lm init --out a folder of models" "is not a checkpoint" -- "$BIN" lm init --config tiny.toml --tokenizer-corpus corpus.txt --out models
expect "lm init --out a folder of notes --force" "is not a checkpoint" -- "$BIN" lm init --config tiny.toml --tokenizer-corpus corpus.txt --out notes --force
expect "lm init --out a file --force" "is a file" -- "$BIN" lm init --config tiny.toml --tokenizer-corpus corpus.txt --out notes/todo.txt --force
expect "lm convert --out a folder of models --force" "is not a checkpoint" -- "$BIN" lm convert --gguf x.gguf --out models --force
tried=$((tried + 1))
if [ -f models/household/policy/config.json ] && [ "$(cat notes/todo.txt)" = keep ]; then
  right=$((right + 1)); printf '%-8s %-58s %s\n' right "the folders --out refused" "kept, every file in place"
else
  silent=$((silent + 1)); failures+=("--out deleted a folder it did not make")
  printf '%-8s %-58s %s\n' silent "the folders --out refused" "deleted"
fi
expect "lm init --out a checkpoint --force" ok -- "$BIN" lm init --config tiny.toml --tokenizer-corpus corpus.txt --out models/household/policy --force
cp -r model model-jinja
py model-jinja <<'EOF'
import json, sys, os
d = sys.argv[1]
p = os.path.join(d, "tokenizer_config.json")
c = json.load(open(p)); t = c.pop("chat_template", None); json.dump(c, open(p, "w"))
open(os.path.join(d, "chat_template.jinja"), "w").write(t or "")
EOF

echo "== the server"
"$BIN" serve --model model-jinja --name tiny --port 0 --body-timeout-secs 2 >serve.log 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  addr=$(grep -oE "http://[0-9.]+:[0-9]+" serve.log | head -n1)
  [ -n "$addr" ] && break
  sleep 0.1
done
post() { # path body-file → "status body"
  python3 - "$addr$1" "$2" <<'PY'
import sys, urllib.request, urllib.error
url, body = sys.argv[1], open(sys.argv[2], "rb").read()
req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=100) as r:
        status, text = r.status, r.read()
except urllib.error.HTTPError as e:
    status, text = e.code, e.read()
except (ConnectionError, urllib.error.URLError) as e:
    # a server that answers 413 before reading the whole body may close the connection
    status, text = 0, str(e).encode()
print(status, text[:300].decode(errors="replace"))
PY
}
http_case() { # name path body-file expected-status expected-text
  tried=$((tried + 1))
  local r status
  r=$(addr=$addr timeout "$LIMIT" bash -c "$(declare -f post); post $2 $3" 2>&1)
  status=${r%% *}
  local verdict=unclear
  if ! kill -0 "$server_pid" 2>/dev/null; then
    verdict=panic
  elif [ "$status" = "$4" ] && grep -qF -- "$5" <<<"$r"; then
    if [ "$4" = 200 ]; then verdict=right; else verdict=clear; fi
  elif [ "$status" = 200 ]; then
    verdict=silent
  fi
  case $verdict in
    clear) clear=$((clear + 1)) ;;
    right) right=$((right + 1)) ;;
    panic) panics=$((panics + 1)); failures+=("$1: the server died") ;;
    *) silent=$((silent + 1)); failures+=("$1: $r") ;;
  esac
  printf '%-8s %-58s %s\n' "$verdict" "$1" "$(cut -c1-150 <<<"$r")"
}
if [ -z "$addr" ]; then
  echo "the server did not start: $(cat serve.log)"
  exit 1
fi
py <<'EOF'
import json
big = "go " * 350_000
json.dump({"model": "tiny", "prompt": big, "max_tokens": 1}, open("big.json", "w"))
json.dump({"model": "tiny", "prompt": "go " * 70, "max_tokens": 1}, open("long.json", "w"))
json.dump({"model": "tiny", "prompt": "go to", "max_tokens": 100}, open("max.json", "w"))
json.dump({"model": "tiny", "messages": [{"role": "user", "content": "go to"}], "max_tokens": 4}, open("chat.json", "w"))
json.dump({"model": "tiny", "prompt": "go to", "max_tokens": 4}, open("ok.json", "w"))
open("huge.json", "w").write('{"model": "tiny", "prompt": "' + "go " * (20 << 20) + '"}')
EOF
py "$work" <<'EOF'
import json, sys
w = sys.argv[1]
for name in ("nan", "huge", "zero"):
    json.dump({"lora_name": name, "lora_path": f"{w}/adapter-{name}"}, open(f"lora-{name}.json", "w"))
json.dump({"model": "tiny", "prompt": "go", "echo": True, "logprobs": 0, "max_tokens": 0}, open("echo1.json", "w"))
json.dump({"model": "tiny", "prompt": "go to", "guided_choice": ["冰箱", "go to"], "max_tokens": 4}, open("unk.json", "w"))
EOF
cat >stall.py <<'EOF'
# four clients declare a body over 1 KiB and never send it; a fifth request must be answered
import json, socket, sys, urllib.request
addr = sys.argv[1]
host, port = addr.split("//")[1].split(":")
held = []
for _ in range(4):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
    held.append(s)
body = json.dumps({"model": "tiny", "prompt": "go to", "max_tokens": 2}).encode()
req = urllib.request.Request(addr + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=60) as r:
    print(r.status, "answered beside four stalled clients")
EOF
http_case "/v1/load_lora_adapter: an adapter holding NaN" /v1/load_lora_adapter lora-nan.json 400 "NaN"
http_case "/v1/load_lora_adapter: lora_alpha = 1e38" /v1/load_lora_adapter lora-huge.json 400 "changes a weight by"
http_case "/v1/load_lora_adapter: adapter_config.json is /dev/zero" /v1/load_lora_adapter lora-zero.json 400 "not a regular file"
http_case "echo of a one-token prompt" /v1/completions echo1.json 200 "text_completion"
http_case "a guided choice the vocabulary cannot write" /v1/completions unk.json 400 "guided_choice"
expect "four clients that never send their declared body" "ok:200 answered" -- python3 stall.py "$addr"
cat >silent.py <<'EOF'
# a burst of connections that send nothing; another request must be answered, and each silent
# connection closed by the server
import json, socket, sys, urllib.request
addr = sys.argv[1]
host, port = addr.split("//")[1].split(":")
held = [socket.create_connection((host, int(port))) for _ in range(8)]
body = json.dumps({"model": "tiny", "prompt": "go to", "max_tokens": 2}).encode()
req = urllib.request.Request(addr + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=60) as r:
    status = r.status
for s in held:
    s.settimeout(60)
    if s.recv(16) != b"":
        sys.exit("error: a silent connection was answered")
print(status, "answered; the 8 silent connections closed")
EOF
expect "a burst of 8 silent connections" "ok:200 answered" -- python3 silent.py "$addr"
http_case "a 1 MB prompt (350k tokens)" /v1/completions big.json 400 "context"
http_case "a prompt longer than the context" /v1/completions long.json 400 "context"
http_case "max_tokens past the context" /v1/completions max.json 400 "max_tokens"
http_case "a 60 MB body" /v1/completions huge.json 413 "bytes"
http_case "chat with the template in chat_template.jinja" /v1/chat/completions chat.json 200 "chat.completion"
http_case "the server still answers" /v1/completions ok.json 200 "text_completion"
kill "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null
server_pid=""
expect "serve --host 0.0.0.0 without a key" "--api-key-env" -- "$BIN" serve --model model --host 0.0.0.0 --port 0
expect "desktop serve-real --host 0.0.0.0 without a key" "--api-key-env" -- "$BIN" desktop serve-real --host 0.0.0.0 --port 0

echo "== the sandbox: a program dies with the process that started it"
printf 'import time\nwhile True:\n    time.sleep(0.05)\n' >loop.py
printf '{"input": "", "output": "x"}\n' >tests.jsonl
if [ "$(id -u)" = 0 ]; then
  # as root, programs run as a user of their own, who must be able to reach their folder
  mkdir -p private/tmp && chmod 700 private
  expect "a sandbox under a folder its programs cannot enter" "cannot enter" -- \
    env TMPDIR="$work/private/tmp" "$BIN" code exec --program loop.py --tests tests.jsonl --wall-secs 1
fi
# programs run as a user of their own: the scratch folder must be open to them
chmod 755 "$work"
mkdir -p sbtmp
for sig in INT KILL; do
  tried=$((tried + 1))
  TMPDIR=$work/sbtmp "$BIN" code exec --program loop.py --tests tests.jsonl --wall-secs 60 --cpu-secs 60 >exec.log 2>&1 &
  pid=$!
  under() {
    for p in /proc/[0-9]*; do
      c=$(readlink "$p/cwd" 2>/dev/null) && [[ $c == "$work/sbtmp"* ]] && echo "${p#/proc/}"
    done
  }
  for _ in $(seq 100); do [ -n "$(under)" ] && break; sleep 0.1; done
  running=$(under)
  kill -s "$sig" "$pid"
  wait "$pid" 2>/dev/null
  sleep 1
  left=$(under)
  if [ -z "$running" ]; then
    silent=$((silent + 1)); failures+=("code exec: the program never ran: $(cat exec.log)")
    printf '%-8s %-58s %s\n' silent "code exec ended by SIG$sig" "the program never ran"
  elif [ -n "$left" ]; then
    silent=$((silent + 1)); failures+=("code exec ended by SIG$sig: processes live on: $left")
    printf '%-8s %-58s %s\n' silent "code exec ended by SIG$sig" "processes live on: $left"
    kill -9 $left 2>/dev/null
  else
    right=$((right + 1))
    printf '%-8s %-58s %s\n' right "code exec ended by SIG$sig" "no process outlives it"
  fi
done
TMPDIR=$work/sbtmp "$BIN" code exec --program loop.py --tests tests.jsonl --wall-secs 0.3 >/dev/null 2>&1
tried=$((tried + 1))
if [ -z "$(ls -A sbtmp)" ]; then
  right=$((right + 1)); printf '%-8s %-58s %s\n' right "the folder a SIGKILL left" "removed by the next sandbox"
else
  silent=$((silent + 1)); failures+=("sandbox folders left: $(ls sbtmp)")
  printf '%-8s %-58s %s\n' silent "the folder a SIGKILL left" "$(ls sbtmp)"
fi

# a descriptor the caller left open (`exec 7<>secret`) does not reach the program
printf 'hunter2' >secret.txt && chmod 600 secret.txt
cat >fd7.py <<'PY'
import os
try:
    os.lseek(7, 0, 0)
    print(os.read(7, 100).decode())
    os.write(7, b"pwned")
except OSError:
    print("closed")
PY
printf '{"input": "", "output": "closed\\n"}\n' >closed.jsonl
exec 7<>secret.txt
expect "a program reading fd 7 its caller left open" "ok:1 passed, 0 failed" -- \
  env TMPDIR="$work/sbtmp" "$BIN" code exec --program fd7.py --tests closed.jsonl
exec 7>&-
tried=$((tried + 1))
if [ "$(cat secret.txt)" = hunter2 ]; then
  right=$((right + 1)); printf '%-8s %-58s %s\n' right "the file behind fd 7" "unchanged"
else
  silent=$((silent + 1)); failures+=("the file behind fd 7 was written")
  printf '%-8s %-58s %s\n' silent "the file behind fd 7" "written"
fi
# a unix socket anyone may connect to, outside the program's folder (as Xvfb's is)
python3 - "$work/X0" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(4); s.settimeout(30)
try:
    s.accept()
except OSError:
    pass
PY
listener=$!
for _ in $(seq 50); do [ -S "$work/X0" ] && break; sleep 0.1; done
cat >unix.py <<PY
import socket
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect("$work/X0")
    print("connected")
except OSError:
    print("refused")
PY
printf '{"input": "", "output": "refused\\n"}\n' >refused.jsonl
expect "a program connecting to a unix socket outside" "ok:1 passed, 0 failed" -- \
  env TMPDIR="$work/sbtmp" "$BIN" code exec --program unix.py --tests refused.jsonl
kill "$listener" 2>/dev/null
wait "$listener" 2>/dev/null
expect "code isolation says unix_sockets_denied" 'ok:"unix_sockets_denied": true' -- "$BIN" code isolation

echo "== problem files and completions"
py <<'EOF'
import gzip, json
with gzip.open("bomb.json.gz", "wb", 9) as f:  # 300 MB of `{},` in a gzip of about 300 KB
    f.write(b"[")
    for _ in range(1000):
        f.write(b"{}," * 100_000)
    f.write(b"{}]")
with gzip.open("many-records.json.gz", "wb", 9) as f:
    f.write(b"[" + b'{"question": ""},' * 1_500_000 + b'{"question": ""}]')
tests = [{"input": str(i), "output": str(i)} for i in range(100_000)]
json.dump({"id": "huge", "statement": "s", "tests": tests}, open("many-tests.jsonl", "w"))
json.dump([{"question": "q"}], open("untested.json", "w"))
json.dump({"id": "one", "statement": "Print 1.", "tests": [{"input": "", "output": "1"}]}, open("one.jsonl", "w"))
def problem(i):
    return json.dumps({"task_id": f"T/{i}", "prompt": f"def f{i}():\n",
                       "canonical_solution": f"    return {i}\n",
                       "test": f"def check(c):\n    assert c() == {i}\n",
                       "entry_point": f"f{i}"}).encode() + b"\n"
open("he2.jsonl.gz", "wb").write(gzip.compress(problem(0)) + gzip.compress(problem(1)))
open("nine.jsonl", "w").write((json.dumps({"task_id": "T/0", "completion": "    return 0\n"}) + "\n") * 9)
EOF
: >empty.jsonl
ln -s /dev/zero zero-problems.json
mkfifo fifo-problems.json
printf 'setting = "coding"\n[coding]\neval_problems = { in_domain = "one.jsonl" }\n' >coding-one.toml
printf 'setting = "coding"\n[coding]\neval_problems = { ood = "zero-problems.json" }\n' >coding-zero.toml
printf 'setting = "coding"\n[coding]\neval_problems = { ood = "fifo-problems.json" }\n' >coding-fifo.toml
expect "a 300 KB gzip of 100 million {}: code eval" "record 1: neither the reference's format" -- "$BIN" code eval --model model --problems bomb.json.gz
expect "a gzip of 1.5 million records: code eval" "more than 1000000 records" -- "$BIN" code eval --model model --problems many-records.json.gz
expect "one problem of 100,000 stdio tests: code eval" "more than the 1000 a problem may have" -- "$BIN" code eval --model model --problems many-tests.jsonl
expect "code eval --limit 0" "--limit 0" -- "$BIN" code eval --model model --problems one.jsonl --limit 0
expect "a problem file of no problem with a test: code eval" "no problem with a test" -- "$BIN" code eval --model model --problems untested.json
expect "a problem file a symlink to /dev/zero: code eval" "a device, not a regular file" -- "$BIN" code eval --model model --problems zero-problems.json
expect "coding.eval_problems a symlink to /dev/zero: train" "a device, not a regular file" -- "$BIN" train --quiet --config coding-zero.toml --run coding-zero
expect "coding.eval_problems a FIFO: train" "a FIFO, not a regular file" -- "$BIN" train --quiet --config coding-fifo.toml --run coding-fifo
expect "eval --n 5 past a one-problem file" "holds 1 tasks" -- "$BIN" eval --config coding-one.toml --model model --n 5
expect "a HumanEval file of two gzip members: code humaneval" "ok:(2 of 2 problems)" -- "$BIN" code humaneval --data he2.jsonl.gz
expect "an empty completions file: code humaneval" "holds no completion" -- "$BIN" code humaneval --data he2.jsonl.gz --completions empty.jsonl
expect "completions naming one problem nine times: code humaneval" "named more than once" -- "$BIN" code humaneval --data he2.jsonl.gz --completions nine.jsonl

expect "code exec --wall-secs 1e20" "at most 86400" -- "$BIN" code exec --program loop.py --tests tests.jsonl --wall-secs 1e20

echo "== the checker: a wrong program ends early or answers yes to every comparison"
printf 'assert square(3) == 9\nassert square(-2) == 4\n' >asserts.py
printf 'def square(x):\n    return x * x\n' >honest.py
expect "an honest program passes its asserts" "ok:2 passed, 0 failed" -- "$BIN" code exec --program honest.py --tests asserts.py
# a trick passes nothing: code exec must say so (status 1, every test failed)
tricks=0
trick() { # name program
  tricks=$((tricks + 1))
  printf '%b' "$2" >"trick-$tricks.py"
  expect "a wrong program with $1" "0 passed, 2 failed" -- "$BIN" code exec --program "trick-$tricks.py" --tests asserts.py
}
trick "sys.exit(0) at the end" 'import sys\ndef square(x):\n    return x + 1\nsys.exit(0)\n'
trick "raise SystemExit" 'def square(x):\n    return x + 1\nraise SystemExit\n'
trick "os._exit(0)" 'import os\ndef square(x):\n    os._exit(0)\n'
trick "os.execv /bin/true" 'import os\ndef square(x):\n    os.execv("/bin/true", ["true"])\n'
trick "an atexit hook" 'import atexit, os\natexit.register(lambda: os._exit(0))\ndef square(x):\n    return x + 1\n'
trick "an excepthook" 'import sys, os\nsys.excepthook = lambda *a: os._exit(0)\ndef square(x):\n    return x + 1\n'
trick "a settrace hook" 'import sys, os\ndef t(f, e, a):\n    if e == "exception":\n        os._exit(0)\n    return t\nsys.settrace(t)\ndef square(x):\n    return x + 1\n'
trick "a thread that exits" 'import threading, os\nthreading.Thread(target=lambda: os._exit(0)).start()\ndef square(x):\n    return x + 1\n'
trick "an always-equal value" 'class E:\n    def __eq__(self, o):\n        return True\ndef square(x):\n    return E()\n'
trick "an int equal to everything" 'class E(int):\n    def __eq__(self, o):\n        return True\ndef square(x):\n    return E(0)\n'
trick "the asserts read from its files" 'import glob, re\ndef square(x):\n    for f in glob.glob("/tmp/**/*.py", recursive=True) + glob.glob("*"):\n        try:\n            m = re.findall(r"== (-?\\d+)", open(f).read())\n        except Exception:\n            continue\n        if m:\n            return int(m[0])\n    return x + 1\n'
trick "a monkeypatched AssertionError" 'import builtins\nbuiltins.AssertionError = type("Q", (BaseException,), {})\ndef square(x):\n    return x + 1\n'
trick "a forged report" 'print("{\"pass\": true, \"why\": \"\", \"rla_check\": 1}")\ndef square(x):\n    return x + 1\n'

echo "== the household: game files"
game=$root/tests/fixtures/alfworld-traces/00-pick_and_place_simple-kitchen
mkdir -p deep empty-domain
cp "$game/game.tw-pddl" deep/ && cp "$game/game.tw-pddl" empty-domain/
py deep/game.tw-pddl empty-domain/game.tw-pddl <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
g["pddl_problem"] = "(define (problem p) (:goal " + "(and " * 50000 + ")" * 50000 + "))"
json.dump(g, open(sys.argv[1], "w"))
g = json.load(open(sys.argv[2]))
g["pddl_domain"] = ""
json.dump(g, open(sys.argv[2], "w"))
EOF
expect "a PDDL problem nested 50,000 deep: env solve" "nested more than" -- "$BIN" env solve deep
expect "a game with an empty pddl_domain: env solve" "pddl_domain" -- "$BIN" env solve empty-domain
expect "a game file of ALFWorld's: env solve" ok -- "$BIN" env solve "$game"
mkdir -p loop-games && ln -s . loop-games/here && ln -s / loop-games/root
expect "eval --games on symlinks to . and /" "holds no game folder" -- "$BIN" eval --model model --games loop-games
mkdir -p bad-games/t/trial_1 && cp "$game/game.tw-pddl" "$game/traj_data.json" bad-games/t/trial_1/
sed -i 's/"object_target": "Plate"/"object_target": "Mug"/' bad-games/t/trial_1/traj_data.json
expect "eval --games on a traj_data.json training refuses" "traj_data.json disagrees with the game" -- "$BIN" eval --model model --games bad-games
mkdir -p zero-game && ln -s /dev/zero zero-game/game.tw-pddl
expect "game.tw-pddl a symlink to /dev/zero: env solve" "a device" -- "$BIN" env solve zero-game

echo "== the desktop: workbooks, screenshots"
"$BIN" desktop export --split in-domain --n 1 --out tasks >/dev/null
task=$(ls tasks/*.json | head -n1)
start=$(ls "${task%.json}"/start.xlsx)
xlsx_edit() { # out python-expression-on-sheet-xml
  py "$start" "$1" "$2" <<'EOF'
import sys, zipfile
src, out, expr = sys.argv[1:]
zin = zipfile.ZipFile(src)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for i in zin.infolist():
        b = zin.read(i.filename)
        if i.filename == "xl/worksheets/sheet1.xml":
            s = b.decode()
            s = eval(expr)
            b = s.encode()
        z.writestr(i.filename, b)
EOF
}
xlsx_edit far.xlsx 's.replace("</sheetData>", "<row r=\"1048576\"><c r=\"XFD1048576\"><v>1</v></c></row></sheetData>")'
xlsx_edit badref.xlsx 's.replace("</sheetData>", "<row r=\"2\"><c r=\"ZZZZZZZZZZZZ" + "9" * 40 + "\"><v>1</v></c></row></sheetData>")'
xlsx_edit bomb.xlsx 's.replace("</sheetData>", " " * (400 << 20) + "</sheetData>")'
expect "a workbook with a value at XFD1048576 (scores 0, as OSWorld)" "ok:A1:XFD1048576" -- "$BIN" desktop evaluate --task "$task" --result far.xlsx
expect "a cell reference ZZZZZZZZZZZZ999… (scores 0)" "ok:is not a cell" -- "$BIN" desktop evaluate --task "$task" --result badref.xlsx
expect "an xlsx whose sheet unpacks to 400 MB (scores 0)" "ok:unpacks to more than" -- "$BIN" desktop evaluate --task "$task" --result bomb.xlsx
expect "the task's own start workbook" ok -- "$BIN" desktop evaluate --task "$task" --result "$start"
py "$start" strings.xlsx <<'EOF'
import re, sys, zipfile
src, out = sys.argv[1:]
zin = zipfile.ZipFile(src)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for i in zin.infolist():
        b = zin.read(i.filename)
        if i.filename == "xl/sharedStrings.xml":
            b = re.sub(rb'uniqueCount="\d+"', b'uniqueCount="18446744073709551615"', b)
        z.writestr(i.filename, b)
EOF
expect "shared strings with uniqueCount 2^64-1 (scores 0)" "ok:claims more strings" -- "$BIN" desktop evaluate --task "$task" --result strings.xlsx
mkfifo fifo.xlsx
expect "desktop evaluate --result a FIFO (scores 0)" "ok:is a FIFO" -- "$BIN" desktop evaluate --task "$task" --result fifo.xlsx
ln -s /dev/zero zero-task.json
expect "a task file that is a symlink to /dev/zero" "not a regular file" -- "$BIN" desktop evaluate --task zero-task.json --result "$start"
# a formula of 60,000 terms (its tree as deep): refused as longer than Excel's 8192 characters
mkdir -p deep-task && cp "$task" deep-task/ && cp -r "${task%.json}" deep-task/
deep_task=deep-task/$(basename "$task")
py "$start" "${deep_task%.json}/start.xlsx" <<'EOF'
import sys, zipfile
src, out = sys.argv[1:]
zin = zipfile.ZipFile(src)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for i in zin.infolist():
        b = zin.read(i.filename)
        if i.filename == "xl/worksheets/sheet1.xml":
            f = "+".join(["B2"] * 60000)
            b = b.replace(b"</sheetData>", b'<row r="900"><c r="A900"><f>' + f.encode() + b"</f></c></row></sheetData>")
        z.writestr(i.filename, b)
EOF
expect "a 60,000-term formula: desktop screenshot" ok -- "$BIN" desktop screenshot "$deep_task" --out deep.png
expect "a 60,000-term formula: desktop play" "ok:score" -- bash -c "printf 'tree\nscore\n\n' | \"\$0\" desktop play \"\$1\"" "$BIN" "$deep_task"
# a running total 400 rows long (H10 = 1, H11 = H10+1, …): LibreOffice computes H409 = 400
mkdir -p total-task && cp "$task" total-task/ && cp -r "${task%.json}" total-task/
total_task=total-task/$(basename "$task")
py "$start" "${total_task%.json}/start.xlsx" <<'EOF'
import sys, zipfile
src, out = sys.argv[1:]
zin = zipfile.ZipFile(src)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for i in zin.infolist():
        b = zin.read(i.filename)
        if i.filename == "xl/worksheets/sheet1.xml":
            rows = '<row r="10"><c r="H10"><v>1</v></c></row>' + "".join(
                f'<row r="{r}"><c r="H{r}"><f>H{r - 1}+1</f></c></row>' for r in range(11, 410))
            b = b.replace(b"</sheetData>", rows.encode() + b"</sheetData>")
        z.writestr(i.filename, b)
EOF
printf 'pyautogui.click(60, 68)\npyautogui.write("H409\\n")\ntree\n\n' >to-h409.txt
expect "a 400-row running total: desktop play" "ok:"$'H409\t400' -- bash -c "\"\$0\" desktop play \"\$1\" <to-h409.txt" "$BIN" "$total_task"
mkdir -p linked-tasks && cp -r tasks/* linked-tasks/
ln -s / linked-tasks/everything && ln -s "$PWD/linked-tasks" linked-tasks/again
ln -s "$PWD/linked-tasks/$(basename "$task")" linked-tasks/zz-again.json
printf 'setting = "desktop"\n[desktop]\neval_tasks = { in_domain = "linked-tasks" }\n' >linked-tasks.toml
expect "a task folder linking to /, to itself and to its task: eval" "holds 1 tasks" -- "$BIN" eval --config linked-tasks.toml --model model --n 2
expect "desktop screenshot --size 0x0" "each side" -- "$BIN" desktop screenshot "$task" --out s.png --size 0x0
expect "desktop screenshot --size 4294967295x4294967295" "each side" -- "$BIN" desktop screenshot "$task" --out s.png --size 4294967295x4294967295
expect "desktop screenshot --size 100000x100000" "each side" -- "$BIN" desktop screenshot "$task" --out s.png --size 100000x100000
expect "desktop screenshot --screen 100000x100000" "8192" -- "$BIN" desktop screenshot "$task" --out s.png --screen 100000x100000
far_play() {
  # the Name Box (at 60, 68 on a 1920x1080 screen) jumps to the last cell; typing there is refused
  printf 'pyautogui.click(60, 68)\npyautogui.write("XFD1048576\\n")\npyautogui.write("7\\n")\ntree\nscore\n\n' |
    "$BIN" desktop play "$task"
}
tried=$((tried + 1))
out=$(export -f far_play; export BIN task; timeout "$LIMIT" bash -c far_play 2>&1)
status=$?
if [ $status -eq 0 ] && grep -q "XFD1048576 lies too far out" <<<"$out"; then
  right=$((right + 1)); printf '%-8s %-58s %s\n' right "desktop play writing XFD1048576" "refused on the desktop; the episode goes on"
elif [ $status -eq 124 ]; then
  hangs=$((hangs + 1)); failures+=("desktop play writing XFD1048576: no answer")
  printf '%-8s %-58s\n' hang "desktop play writing XFD1048576"
else
  panics=$((panics + 1)); failures+=("desktop play writing XFD1048576: status $status")
  printf '%-8s %-58s %s\n' panic "desktop play writing XFD1048576" "status $status"
fi

echo "== the real desktop's server: conversions, its script"
# the server's own check of `libreoffice --convert-to …`, on a session folder beside a host file
# convert.py SERVER ARGV-AS-JSON: the command the server would run, or why it refuses it
# (SERVER: the entry script, which imports its modules from its own folder)
server_py=$root/crates/rla-desktop/server/desktop_server.py
cat >convert.py <<'PY'
import importlib.util, json, os, sys, types
spec = importlib.util.spec_from_file_location("ds", sys.argv[1])
ds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ds)
root = os.path.realpath("session")
s = types.SimpleNamespace(root=root, home=f"{root}/home", files=f"{root}/files")
for d in (s.home, s.files):
    os.makedirs(d, exist_ok=True)
open(f"{s.files}/t.csv", "w").write("a,b\n")
try:
    argv = ds.checked_conversion(s, json.loads(sys.argv[2]))
except ds.Refused as e:
    sys.exit(f"error: {e}")
out = argv[argv.index("--outdir") + 1]
print("runs", " ".join(argv[4:]), "(output in the session's", "files)" if out == s.files else "home)")
PY
expect "soffice --convert-to txt --outdir . /host/file" "no such file" -- python3 convert.py "$server_py" "[\"soffice\", \"--convert-to\", \"txt\", \"--outdir\", \".\", \"$work/secret.txt\"]"
expect "soffice --convert-to pth: (a .pth in site-packages)" "convert here only to" -- python3 convert.py "$server_py" '["soffice", "--convert-to", "pth:Text", "--outdir", "/usr/lib/python3/dist-packages", "/home/user/t.csv"]'
expect "soffice -env:… --convert-to csv" "is not passed" -- python3 convert.py "$server_py" '["soffice", "-env:UserInstallation=file:///tmp/x", "--convert-to", "csv", "/home/user/t.csv"]'
expect "soffice --convert-to xlsx --outdir /anywhere" "ok:output in the session's files" -- python3 convert.py "$server_py" '["soffice", "--convert-to", "xlsx", "--outdir", "/anywhere", "/home/user/t.csv"]'
# an action runs at most 120 s (OSWorld's limit); /setup/reset restores pyautogui's PAUSE; a JSON
# list as /file's form is a 400 (with a stand-in for pyautogui: no display needed)
cat >actions.py <<'PY'
import importlib.util, sys, threading, time, types
pg = types.ModuleType("pyautogui")
pg.FAILSAFE, pg.PAUSE, pg.time = True, 0.0, time
pg.platformModule = types.SimpleNamespace(_mouseDown=lambda *a: None, _mouseUp=lambda *a: None)
pg.write = lambda *a, **k: None
pg.moveTo = lambda *a, **k: pg.time.sleep(pg.PAUSE)
sys.modules["pyautogui"] = pg
spec = importlib.util.spec_from_file_location("ds", sys.argv[1])
ds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ds)
a = ds.server_actions.Actions_singleton = ds.Actions()
code = sys.argv[2].replace("\\n", "\n")
got = {}
t = threading.Thread(target=lambda: got.update(a.run(code, False)), daemon=True)
t.start()
t.join(30)
if t.is_alive():
    sys.exit("error: the action still runs")
if sys.argv[3] == "reset":
    class H:
        def json_body(self): return {}
        def reply(self, code, body): pass
    ds.r_reset(H(), types.SimpleNamespace(close_office=lambda: None, restore_profile=lambda: None,
                                          uploaded=[], width=100, height=100))
    print("PAUSE after /setup/reset:", pg.PAUSE)
else:
    print(got["status"], got["error"])
PY
expect "an action time.sleep(100000)" "ok:past its 120 s" -- python3 actions.py "$server_py" 'import time\ntime.sleep(100000)' run
expect "pyautogui.PAUSE = 3, then /setup/reset" "ok:PAUSE after /setup/reset: 0.0" -- python3 actions.py "$server_py" 'import pyautogui\npyautogui.PAUSE = 3' reset
cat >fileform.py <<'PY'
import importlib.util, io, json, sys, types
spec = importlib.util.spec_from_file_location("ds", sys.argv[1])
ds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ds)
h = types.SimpleNamespace(raw_body=b'["file_path"]', headers={"Content-Type": "application/json"})
try:
    ds.Handler.form_body(types.SimpleNamespace(body=lambda: h.raw_body, headers=h.headers))
except ds.BadRequest as e:
    sys.exit(f"error: 400 {e}")
print("read as a form")
PY
expect "a JSON list as /file's form" "JSON object" -- python3 fileform.py "$server_py"
# serve-real runs the script it carries, from a folder of its own, never a file in $TMPDIR
mkdir -p shared-tmp && chmod 1777 shared-tmp
printf 'print("planted")\n' >shared-tmp/rlanything-desktop-server-0000000000000000.py
cat >fake-python <<'SH'
#!/bin/sh
[ "$1" = -c ] && exit 0
d=$(dirname "$1")
if [ "$d" = "$TMPDIR" ] || ! grep -q "A real desktop for the GUI setting" "$1"; then
  echo "error: ran $1, a script in the shared temporary folder"; exit 1
fi
echo "ran its own script from a folder of mode $(stat -c %a "$d")"
SH
chmod 755 fake-python
expect "desktop serve-real beside a script planted in \$TMPDIR" "ok:of mode 700" -- \
  env TMPDIR="$work/shared-tmp" "$BIN" desktop serve-real --port 0 --python "$work/fake-python"

echo "== runs: configs, resume"
cat >run.toml <<'EOF'
seed = 4
iterations = 1
pool_size = 2
tasks_per_iteration = 1
rollouts_per_task = 2
judge_samples = 1
update_epochs = 1
[household]
train_step_limit = 3
eval_step_limit = 3
history_window = 1
prompt_style = "unlisted"
constrain_actions = true
[policy]
micro_batch = 4
max_new_tokens = 8
[policy.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1
[reward]
micro_batch = 4
max_new_tokens = 8
[reward.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1
[pretrain]
tasks = 2
policy_steps = 1
reward_steps = 1
batch = 4
[eval]
in_domain = 2
ood = 1
every = 1
EOF
sed 's/^in_domain = 2/in_domain = 100000/' run.toml >big-eval.toml
expect "[eval] in_domain = 100000" "holds 140 tasks" -- "$BIN" train --quiet --config big-eval.toml --run big-eval
expect "eval --n 100000" "holds 140 tasks" -- "$BIN" eval --model model --n 100000
expect "eval --n 0" "--n 0" -- "$BIN" eval --model model --n 0
sed 's/^tasks = 2$/tasks = 4611686018427387904/' run.toml >count-tasks.toml
for key in judge_tasks dagger_tasks; do
  sed "s/^\[pretrain\]$/[pretrain]\n$key = 4611686018427387904/" run.toml >"count-$key.toml"
done
expect "pretrain.tasks = 2^62" "at most 1048576" -- "$BIN" train --quiet --config count-tasks.toml --run count-tasks
expect "pretrain.judge_tasks = 2^62" "at most 1048576" -- "$BIN" train --quiet --config count-judge_tasks.toml --run count-judge
expect "pretrain.dagger_tasks = 2^62" "at most 1048576" -- "$BIN" train --quiet --config count-dagger_tasks.toml --run count-dagger
expect "--set policy.max_new_tokens=1e9" "policy.max_new_tokens = 1000000000: at most" -- "$BIN" train --quiet --config run.toml --run big-tokens --set policy.max_new_tokens=1e9
expect "--set update_epochs=1e9" "update_epochs = 1000000000: at most" -- "$BIN" train --quiet --config run.toml --run big-epochs --set update_epochs=1e9
expect "--set household.train_step_limit=1e12" "household.train_step_limit = 1000000000000: at most" -- "$BIN" train --quiet --config run.toml --run big-steps --set household.train_step_limit=1e12
expect "--set a value holding a line break" "line break" -- "$BIN" train --quiet --config run.toml --run two-lines --set $'policy.lr=1e-4\nlambda=0.5'
expect "--seed 18446744073709551615" "--seed 18446744073709551615: at most" -- "$BIN" train --quiet --config run.toml --run big-seed --seed 18446744073709551615
expect "policy_band.low alone (the paper's high stands)" "must not exceed high = 0.875" -- "$BIN" train --quiet --config run.toml --run band --set policy_band.low=0.9
expect "ablate --out a file" "--out notes/todo.txt: is a file" -- "$BIN" ablate --config run.toml --out notes/todo.txt
expect "a short household run" ok -- "$BIN" train --quiet --config run.toml --run run
cp -r run run-edited
sed -i 's/"completed":1,/"completed":99,/' run-edited/checkpoint/state.json
expect "a state.json claiming 99 completed iterations" "says 99 iteration(s) completed" -- "$BIN" train --quiet --resume run-edited
rm -f run/checkpoint/state.json
expect "train --resume without checkpoint/state.json" "no checkpoint/state.json" -- "$BIN" train --quiet --resume run
expect "train --resume of a folder never started" "holds no config.toml" -- "$BIN" train --quiet --resume never
# a kill during the warm start: the config is written first, so --resume alone continues
"$BIN" train --quiet --config run.toml --run killed >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -e killed/config.toml ] && break; sleep 0.05; done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
expect "train --resume after a kill in the warm start" ok -- "$BIN" train --quiet --resume killed
# the torch learner with an interpreter that cannot run it
printf '[policy.learner]\nbackend = "torch"\npython = "/nonexistent/python3"\n' | cat run.toml - >torch-missing.toml
expect "[policy.learner] python that does not exist" "could not be started" -- "$BIN" train --quiet --config torch-missing.toml --run torch-missing
python3 -m venv --without-pip bare-venv
printf '[policy.learner]\nbackend = "torch"\npython = "%s"\n' "$PWD/bare-venv/bin/python" | cat run.toml - >torch-bare.toml
expect "[policy.learner] python without torch" "No module named" -- "$BIN" train --quiet --config torch-bare.toml --run torch-bare

# a worker that trickles its reply a byte at a time: the call's deadline is the whole call's
cat >trickle.py <<'PY'
import json, os, socket, struct, sys, time
port = [a for a in sys.argv if a.startswith("--connect=")][0].split(":")[-1]
s = socket.create_connection(("127.0.0.1", int(port)))
def message(h):
    h = json.dumps(h).encode()
    return b"RLAW" + struct.pack("<IQ", len(h), 0) + h
s.sendall(message({"v": 1, "op": "hello", "token": os.environ["RLA_WORKER_TOKEN"], "world": 1}))
call = s.recv(1 << 16)
(n,) = struct.unpack("<I", call[4:8])
for b in message({"v": 1, "id": json.loads(call[16:16 + n])["id"], "ok": True, "pad": "x" * 40}):
    s.sendall(bytes([b]))
    time.sleep(0.2)
PY
printf '#!/bin/sh\nexec python3 %s "$@"\n' "$PWD/trickle.py" >trickle && chmod 755 trickle
printf '[policy.learner]\nbackend = "torch"\npython = "%s"\ntimeout_s = 2\n' "$PWD/trickle" | cat run.toml - >torch-trickle.toml
expect "[policy.learner] a worker trickling its reply" "did not answer init within 2 s" -- "$BIN" train --quiet --config torch-trickle.toml --run torch-trickle

echo
echo "| cases tried | clear errors | right results | panics | hangs | silent wrongs |"
echo "|---|---|---|---|---|---|"
echo "| $tried | $clear | $right | $panics | $hangs | $silent |"
if [ ${#failures[@]} -gt 0 ]; then
  echo
  echo "faults:"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi

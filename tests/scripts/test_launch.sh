#!/usr/bin/env bash
# pinbench under a launcher, on loopback with the host backend: mpirun (OpenMPI) and a
# torchrun-like environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) with the tcp transport.
#   test_launch.sh PINBENCH WORK_DIR
# Checks: one merged result with every rank; different overrides on two ranks are refused with
# exit 2 before anything runs; a malformed launcher environment is exit 2; a rank killed or
# stopped mid-run ends the launch non-zero within a bounded time, never a hang.
# Exit 77 (ctest: skipped) when mpirun is missing.
set -uo pipefail
pinbench=$1 work=$2
fail() { echo "test_launch: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2

# A short collective case and a short transfer case: seconds, not minutes.
quick=(--set sampling.min_samples=3 --set sampling.max_samples=5 --set sampling.min_time=0s
       --set sampling.warmup=1)

# ---- torchrun's environment, tcp transport (no MPI needed) -------------------------------
port=$((20000 + RANDOM % 20000))
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout 120 "$pinbench" run builtin:collective-all-reduce --backend host "${quick[@]}" \
    --set bytes=64KiB --out tcp.json -q >"tcp$r.out" 2>"tcp$r.err" &
done
wait -n; rc1=$?; wait -n; rc2=$?
((rc1 == 0 && rc2 == 0)) || { cat tcp*.err >&2; fail "torchrun-style launch exited $rc1/$rc2"; }
python3 - tcp.json <<'PY' || fail "torchrun-style result"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["ranks"]) == 2, r.get("ranks")
cases = r["scenarios"][0]["cases"]
assert sorted(c["rank"] for c in cases) == [0, 1], [c["id"] for c in cases]
for c in cases:
    assert c["status"] == "ok", c
    assert c["info"]["verified"] is True, c["info"]
    assert c["metrics"]["busbw"]["summary"]["median"] > 0
PY

# Every wait of the first meeting is bounded by --rank-timeout and ends with exit 3 naming the
# missing rank: rank 0 whose partner never starts, and a rank 1 whose rank 0 never answers
# (a silent listener on MASTER_PORT + 1 accepts the connection and says nothing).
tcp_env=(WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1)
port=$((20000 + RANDOM % 20000))
t0=$SECONDS
env "${tcp_env[@]}" RANK=0 LOCAL_RANK=0 MASTER_PORT=$port timeout 60 "$pinbench" run \
  builtin:collective-all-reduce --backend host --rank-timeout 3 -q >alone.out 2>alone.err
rc=$? took=$((SECONDS - t0))
((rc == 3)) || { cat alone.err >&2; fail "rank 0 without its partner: exit $rc, expected 3"; }
((took <= 3 + 5)) || fail "rank 0 without its partner: took ${took} s, over --rank-timeout 3 + 5 s"
grep -q "rank 1 did not connect" alone.err || fail "the missing rank is not named: $(cat alone.err)"
port=$((20000 + RANDOM % 20000))
python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4); c=[]
while True: c.append(s.accept()[0])' $((port + 1)) &
silent=$!
sleep 0.5
t0=$SECONDS
env "${tcp_env[@]}" RANK=1 LOCAL_RANK=1 MASTER_PORT=$port timeout 60 "$pinbench" run \
  builtin:collective-all-reduce --backend host --rank-timeout 3 -q >silent.out 2>silent.err
rc=$? took=$((SECONDS - t0))
kill $silent 2>/dev/null; wait $silent 2>/dev/null
((rc == 3)) || { cat silent.err >&2; fail "rank 1 with a silent rank 0: exit $rc, expected 3"; }
((took <= 3 + 5)) || fail "rank 1 with a silent rank 0: took ${took} s, over --rank-timeout 3 + 5 s"
grep -q "rank 0" silent.err || fail "rank 0 is not named: $(cat silent.err)"

# A rank lost mid-run (killed): rank 0 writes the cases completed so far, names the lost rank in
# the result and exits 3; the launch ends within --rank-timeout.
port=$((20000 + RANDOM % 20000))
lost_args=(run builtin:transfer-size --backend host --rank-timeout 5 "${quick[@]}" --out lost.json)
env "${tcp_env[@]}" RANK=0 LOCAL_RANK=0 MASTER_PORT=$port timeout 120 "$pinbench" "${lost_args[@]}" \
  >lost0.out 2>lost0.err &
lead=$!
# env execs pinbench: $! is pinbench itself, the process to kill.
env "${tcp_env[@]}" RANK=1 LOCAL_RANK=1 MASTER_PORT=$port "$pinbench" "${lost_args[@]}" \
  >lost1.out 2>lost1.err &
other=$!
# Once rank 0 has logged two finished cases, rank 1 dies.
for _ in $(seq 600); do (( $(grep -c '^pinbench: \[' lost0.err) >= 2 )) && break; sleep 0.1; done
kill -9 $other; wait $other 2>/dev/null
wait $lead; rc=$?
((rc == 3)) || { cat lost0.err >&2; fail "a lost rank: rank 0 exited $rc, expected 3"; }
python3 - lost.json <<'PY' || { cat lost0.err >&2; fail "a lost rank: the result"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["lost_rank"]["rank"] == 1, r.get("lost_rank")
cases = r["scenarios"][0]["cases"]
assert len(cases) >= 2, [c["id"] for c in cases]
assert all(c["rank"] == 0 and c["status"] == "ok" for c in cases), cases
PY
grep -q "rank 1" lost0.err || fail "a lost rank: rank 1 is not named: $(cat lost0.err)"

# Rank 0 lost: rank 1 writes what it completed, naming rank 0.
port=$((20000 + RANDOM % 20000))
rm -f lost.json
env "${tcp_env[@]}" RANK=0 LOCAL_RANK=0 MASTER_PORT=$port "$pinbench" "${lost_args[@]}" \
  >lead0.out 2>lead0.err &
lead=$!
env "${tcp_env[@]}" RANK=1 LOCAL_RANK=1 MASTER_PORT=$port timeout 120 "$pinbench" "${lost_args[@]}" \
  >lead1.out 2>lead1.err &
other=$!
for _ in $(seq 600); do (( $(grep -c '^pinbench: \[' lead0.err) >= 2 )) && break; sleep 0.1; done
kill -9 $lead; wait $lead 2>/dev/null
wait $other; rc=$?
((rc == 3)) || { cat lead1.err >&2; fail "rank 0 lost: rank 1 exited $rc, expected 3"; }
python3 - lost.json <<'PY' || { cat lead1.err >&2; fail "rank 0 lost: the result rank 1 wrote"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["lost_rank"]["rank"] == 0, r.get("lost_rank")
cases = r["scenarios"][0]["cases"]
assert cases and all(c["rank"] == 1 for c in cases), [c["id"] for c in cases]
PY

# A malformed launcher environment: exit 2, one line naming the variable.
RANK=x WORLD_SIZE=2 "$pinbench" run builtin:collective-all-reduce --backend host >/dev/null 2>bad.err
rc=$?
((rc == 2)) || fail "RANK=x: exit $rc, expected 2"
grep -q RANK bad.err || fail "RANK=x: the error does not name the variable: $(cat bad.err)"

command -v mpirun >/dev/null || { echo "test_launch: mpirun not found: mpirun cases skipped"; exit 77; }
"$pinbench" info --format json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["mpi"]["usable"] else 1)' ||
  { echo "test_launch: this build has no MPI plugin: mpirun cases skipped"; exit 77; }
mpi=(mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo)
[[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)

# ---- mpirun -np 2: one result with both ranks --------------------------------------------
timeout 180 "${mpi[@]}" -np 2 "$pinbench" run builtin:collective-all-reduce --backend host \
  "${quick[@]}" --set bytes=64KiB --out mpi.json >mpi.out 2>mpi.err
rc=$?
((rc == 0)) || { cat mpi.err >&2; fail "mpirun -np 2 exited $rc"; }
python3 - mpi.json <<'PY' || fail "mpirun result"
import json, sys
r = json.load(open(sys.argv[1]))
assert [e["rank"] for e in r["ranks"]] == [0, 1], r["ranks"]
cases = r["scenarios"][0]["cases"]
assert sorted(c["rank"] for c in cases) == [0, 1]
assert all(c["info"]["verified"] is True for c in cases)
assert all(c["info"]["ranks"] == 2 for c in cases), [c["info"] for c in cases]
PY
grep -q "2 ranks" mpi.out || fail "the table does not say 2 ranks"

# ---- different overrides on the two ranks: refused, nothing run --------------------------
timeout 120 "${mpi[@]}" -np 1 "$pinbench" run builtin:transfer-size --backend host "${quick[@]}" : \
  -np 1 "$pinbench" run builtin:transfer-size --backend host "${quick[@]}" --set memory=pageable \
  >mismatch.out 2>mismatch.err
rc=$?
((rc == 2)) || { cat mismatch.err >&2; fail "mismatched overrides: exit $rc, expected 2"; }
grep -q "other scenarios, overrides" mismatch.err || fail "mismatch not explained: $(cat mismatch.err)"

# ---- a rank killed mid-run: the launch ends non-zero, bounded -----------------------------
t0=$SECONDS
timeout 120 "${mpi[@]}" -np 1 "$pinbench" run builtin:transfer-size --backend host --rank-timeout 5 : \
  -np 1 bash -c "\"$pinbench\" run builtin:transfer-size --backend host --rank-timeout 5 & p=\$!; sleep 2; kill -9 \$p; wait \$p" \
  >killed.out 2>killed.err
rc=$?
((rc != 0 && rc != 124)) || fail "killed rank: exit $rc (0 = not noticed, 124 = hung)"
echo "test_launch: killed rank: exit $rc after $((SECONDS - t0)) s"

# ---- a rank stopped (hangs) mid-run: the others give up after --rank-timeout -------------
t0=$SECONDS
timeout 120 "${mpi[@]}" -np 1 "$pinbench" run builtin:transfer-size --backend host --rank-timeout 5 : \
  -np 1 bash -c "\"$pinbench\" run builtin:transfer-size --backend host --rank-timeout 5 & p=\$!; sleep 2; kill -STOP \$p; wait \$p" \
  >hung.out 2>hung.err
rc=$?
((rc != 0 && rc != 124)) || { cat hung.err >&2; fail "hung rank: exit $rc (124 = the launch hung)"; }
grep -q "rank" hung.err || fail "hung rank: no error naming a rank: $(cat hung.err)"
echo "test_launch: hung rank: exit $rc after $((SECONDS - t0)) s"
echo "test_launch: all passed"

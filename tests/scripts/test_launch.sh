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

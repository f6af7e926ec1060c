#!/usr/bin/env bash
# pinbench under a real Slurm: munged, slurmctld and slurmd for one node, started here with
# their configuration, state and sockets in a temporary folder, and stopped at the end by pid.
#   test_slurm.sh PINBENCH WORK_DIR [JOB_SCRIPT]
# Checks, each on the merged result rank 0 writes:
#   srun -n 2 --mpi=none   tcp on the step's first node (no PMI offered), 2 ranks
#   srun -n 2 --mpi=pmix   MPI through PMIx, 2 ranks
#   sbatch --wait          the job script of docs/clusters.md (scripts/pinbench.sbatch), 2 ranks
#   sbatch --wrap info     a batch script itself is one process, not a launch
#   a task killed mid-run  the other ends within --rank-timeout with exit 3, keeping its cases
# Exit 77 (ctest: skipped) when Slurm or munge is not installed, or this host's name does not
# resolve (the tcp transport meets on the node Slurm names).
set -uo pipefail
start=$SECONDS
pinbench=$1 work=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
job_script=${3:-$root/scripts/pinbench.sbatch}
fail() { echo "test_slurm: $*" >&2; exit 1; }
# The tasks start in another folder: the executable by its absolute path.
[[ -x $pinbench ]] || fail "$pinbench is not an executable"
pinbench=$(cd "$(dirname "$pinbench")" && pwd)/$(basename "$pinbench")
skip() { echo "test_slurm: SKIPPED: $*"; exit 77; }

for tool in munged slurmctld slurmd srun sbatch sinfo; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (apt-get install slurm-wlm munge)"
done
node=$(hostname -s)
getent hosts "$node" >/dev/null || skip "this host's name ($node) does not resolve"

rm -rf "$work" && mkdir -p "$work" || exit 2
work=$(cd "$work" && pwd)
# Sockets and state in a short path of their own (a socket's path is at most 107 bytes).
sandbox=$(mktemp -d /tmp/pinbench-slurm.XXXXXX) || exit 2
mkdir -p "$sandbox"/{state,spool,log,run}

step=""
stop_cluster() {
  local name pid
  # The steps first (a failed check may leave one running), then the daemons.
  [[ -n $step ]] && kill "$step" 2>/dev/null
  if [[ -s $sandbox/run/slurmctld.pid ]]; then
    scancel --full --quiet --user="$(id -un)" 2>/dev/null
    for _ in $(seq 50); do [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break; sleep 0.2; done
  fi
  for name in slurmd slurmctld munged; do
    pid=$(cat "$sandbox/run/$name.pid" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  # Keep the daemons' logs with the test's files, for a failure's post-mortem.
  cp -r "$sandbox/log" "$work/slurm-logs" 2>/dev/null
  rm -rf "$sandbox"
}
trap stop_cluster EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Free ports for the controller and the node daemon (a site's own Slurm may hold 6817/6818).
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')

# ---- munge: a key of our own, a daemon on our own socket --------------------------------
if command -v mungekey >/dev/null; then
  mungekey --create --keyfile="$sandbox/munge.key" || fail "mungekey failed"
else
  dd if=/dev/urandom of="$sandbox/munge.key" bs=1 count=1024 2>/dev/null
fi
chmod 400 "$sandbox/munge.key"
# --force: munged refuses a socket folder others may write to (/tmp's sticky bit).
munged --force --socket="$sandbox/run/munge.socket" --key-file="$sandbox/munge.key" \
  --pid-file="$sandbox/run/munged.pid" --log-file="$sandbox/log/munged.log" \
  --seed-file="$sandbox/state/munge.seed" || fail "munged did not start: $(cat "$sandbox/log/munged.log")"

# ---- slurmctld and slurmd for this one node -------------------------------------------------
user=$(id -un)
memory_mib=$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)
export SLURM_CONF=$sandbox/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=pinbench-test
SlurmctldHost=$node
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sandbox/run/munge.socket
StateSaveLocation=$sandbox/state
SlurmdSpoolDir=$sandbox/spool
SlurmctldPidFile=$sandbox/run/slurmctld.pid
SlurmdPidFile=$sandbox/run/slurmd.pid
SlurmctldLogFile=$sandbox/log/slurmctld.log
SlurmdLogFile=$sandbox/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
# Job ids (and so the steps' derived rendezvous ports) differ from one run of this test to the
# next, as on a real cluster.
FirstJobId=$((1000 + RANDOM % 50000))
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$memory_mib State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
slurmctld -i -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -5 "$sandbox/log/slurmctld.log")"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start: $(tail -5 "$sandbox/log/slurmd.log")"
t0=$SECONDS
until [[ $(sinfo -h -n "$node" -o %T 2>/dev/null) == idle ]]; do
  ((SECONDS - t0 < 30)) || fail "the node is not idle after 30 s: $(sinfo 2>&1; tail -5 "$sandbox/log/slurmctld.log")"
  sleep 0.2
done
echo "test_slurm: single-node Slurm up in $((SECONDS - t0)) s ($(srun --version))"

# Nothing of an outer allocation leaks into the steps started here.
while read -r name; do [[ $name == SLURM_CONF ]] || unset "$name"; done < <(compgen -e | grep -E '^(SLURM_|PMIX_|PMI_|OMPI_)')
unset PINBENCH_RENDEZVOUS PINBENCH_RENDEZVOUS_PORT PINBENCH_TRANSPORT
cd "$work" || exit 2

quick=(--backend host --set sampling.min_samples=3 --set sampling.max_samples=5
       --set sampling.min_time=0s --set sampling.warmup=1)
mpi_usable=$("$pinbench" info --format json | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["mpi"]["usable"]))')

# check_merged FILE TRANSPORT: two ranks, every case ok and verified, each rank's entry naming
# srun and the transport.
check_merged() {
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ranks = r["ranks"]
assert [e["rank"] for e in ranks] == [0, 1], ranks
for e in ranks:
    assert e["launcher"] == "srun" and e["transport"] == sys.argv[2], e
cases = r["scenarios"][0]["cases"]
assert sorted(c["rank"] for c in cases) == [0, 1], [c["id"] for c in cases]
for c in cases:
    assert c["status"] == "ok" and c["info"]["verified"] is True, c
PY
}

# ---- srun without PMI: the tcp transport ------------------------------------------------------
timeout 60 srun --mpi=none -n 2 "$pinbench" info >info-none.out 2>info-none.err ||
  fail "srun pinbench info: $(cat info-none.err)"
grep -q "transport tcp (srun's step offers no PMI" info-none.out ||
  fail "info under srun --mpi=none does not say tcp and why: $(grep transport info-none.out)"
timeout 60 srun --mpi=none -n 2 "$pinbench" run builtin:collective-all-reduce "${quick[@]}" \
  --set bytes=64KiB --out none.json -q >none.out 2>none.err
rc=$?
((rc == 0)) || { cat none.err >&2; fail "srun -n 2 --mpi=none exited $rc"; }
check_merged none.json tcp || fail "srun --mpi=none: the result"
echo "test_slurm: srun -n 2 --mpi=none: 2 ranks over tcp"

# ---- srun with PMIx: MPI -------------------------------------------------------------------------
srun --mpi=list 2>&1 | grep -qw pmix || fail "this Slurm has no pmix plugin (srun --mpi=list)"
timeout 60 srun --mpi=pmix -n 2 "$pinbench" run builtin:collective-all-reduce "${quick[@]}" \
  --set bytes=64KiB --out pmix.json -q >pmix.out 2>pmix.err
rc=$?
if ((mpi_usable)); then
  ((rc == 0)) || { cat pmix.err >&2; fail "srun -n 2 --mpi=pmix exited $rc"; }
  check_merged pmix.json mpi || fail "srun --mpi=pmix: the result"
  echo "test_slurm: srun -n 2 --mpi=pmix: 2 ranks over mpi"
else
  # A build without MPI support refuses a PMIx step on every rank alike, saying what to set.
  if ((rc != 3)) || ! grep -q "PINBENCH_TRANSPORT=tcp" pmix.err; then
    cat pmix.err >&2
    fail "srun --mpi=pmix without MPI support: exit $rc, expected 3 naming PINBENCH_TRANSPORT=tcp"
  fi
  echo "test_slurm: srun -n 2 --mpi=pmix: refused with exit 3 (this build has no MPI support)"
fi

# ---- sbatch --wait of the job script ---------------------------------------------------------------
PINBENCH=$pinbench PINBENCH_OUT=$work/batch.json \
  PINBENCH_ARGS="${quick[*]} --set bytes=64KiB -q" \
  timeout 90 sbatch --wait --ntasks=2 --output="$work/batch-%j.out" "$job_script" \
  builtin:collective-all-reduce >sbatch.out 2>sbatch.err
rc=$?
((rc == 0)) || { cat sbatch.err batch-*.out >&2; fail "sbatch --wait exited $rc"; }
check_merged batch.json tcp || { cat batch-*.out >&2; fail "sbatch: the result"; }
echo "test_slurm: sbatch --wait $(basename "$job_script"): 2 ranks ($(cat sbatch.out))"

# ---- a batch script itself is one process, not a launch of SLURM_NTASKS ---------------------
timeout 60 sbatch --wait --ntasks=2 --output="$work/batch-info.out" \
  --wrap "\"$pinbench\" info --format json >\"$work/batch-info.json\"" >/dev/null 2>sbatch-info.err ||
  fail "sbatch --wrap 'pinbench info': $(cat sbatch-info.err batch-info.out)"
python3 - batch-info.json <<'PY' || fail "a batch script is taken for a launch: $(cat batch-info.json)"
import json, sys
launch = json.load(open(sys.argv[1]))["launch"]
assert launch["launcher"] == "none" and launch["size"] == 1 and launch["transport"] == "single", launch
PY

# ---- a task killed mid-run: the other ends within --rank-timeout, exit 3, its cases kept ---------
rank_timeout=5
# shellcheck disable=SC2016  # expanded by each task's own shell
timeout 60 srun --mpi=none -n 2 bash -c 'echo $$ >"task$SLURM_PROCID.pid"; exec "$0" "$@"' \
  "$pinbench" run builtin:transfer-size "${quick[@]}" --rank-timeout "$rank_timeout" \
  --out lost.json >lost.out 2>lost.err &
step=$!
# Once both tasks have logged two finished cases, task 1 dies.
done_cases=0
for _ in $(seq 600); do
  done_cases=$(grep -c '^pinbench: \[' lost.err 2>/dev/null) || done_cases=0
  ((done_cases >= 4)) && [[ -s task1.pid ]] && break
  sleep 0.1
done
((done_cases >= 4)) || fail "a killed task: the step had logged $done_cases finished cases after 60 s: $(cat lost.err)"
kill -9 "$(cat task1.pid)" || fail "task 1 was not running: $(cat lost.err)"
killed_at=$SECONDS
wait "$step"
rc=$? took=$((SECONDS - killed_at))
step=""
((rc != 0 && rc != 124)) || fail "a killed task: srun exited $rc (0: not noticed, 124: hung)"
# The loss is seen at once (the connection closes); the bound is --rank-timeout, with room for
# srun's own teardown on a loaded machine.
((took <= rank_timeout + 10)) || fail "a killed task: the step ended ${took} s later, over --rank-timeout $rank_timeout + 10 s"
grep -q "task 0: Exited with exit code 3" lost.err ||
  { cat lost.err >&2; fail "a killed task: task 0 did not exit 3"; }
python3 - lost.json <<'PY' || { cat lost.err >&2; fail "a killed task: the result"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["lost_rank"]["rank"] == 1, r.get("lost_rank")
cases = r["scenarios"][0]["cases"]
assert len(cases) >= 2, [c["id"] for c in cases]
assert all(c["rank"] == 0 and c["status"] == "ok" for c in cases), cases
PY
echo "test_slurm: a task killed: task 0 exit 3 ${took} s later, $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["scenarios"][0]["cases"]))' lost.json) cases kept (srun exit $rc)"
echo "test_slurm: all passed in $((SECONDS - start)) s"

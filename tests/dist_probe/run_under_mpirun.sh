#!/usr/bin/env bash
# Runs tests/dist_probe/mpi_probe under mpirun with two ranks and checks how the launch ends.
#   run_under_mpirun.sh EXPECT LIMIT_S PROBE PLUGIN MODE
# EXPECT: ok    exit 0 and "mpi_probe: OK"
#         fails mpirun ends non-zero (a rank died: mpirun must end the others)
#         lost  a rank printed rank_lost_error (the others gave up on a silent rank)
# Each within LIMIT_S seconds. Exit 0 when it ended so, 1 when not, 77 when mpirun is missing.
set -u
if (($# != 5)); then
  echo "usage: run_under_mpirun.sh ok|fails|lost LIMIT_S PROBE PLUGIN MODE" >&2
  exit 2
fi
expect=$1 limit=$2 probe=$3 plugin=$4 mode=$5
command -v mpirun >/dev/null || { echo "mpirun not found: skipped"; exit 77; }

# Open MPI refuses root without --allow-run-as-root; --oversubscribe: fewer cores than ranks is
# fine for a functional check. Shared memory and loopback TCP only: the container has no fabric.
flags=(-np 2 --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo)
[[ $(id -u) == 0 ]] && flags+=(--allow-run-as-root)

start=$SECONDS
output=$(timeout -k 5 "$limit" mpirun "${flags[@]}" "$probe" "$mode" "$plugin" 2>&1)
rc=$?
took=$((SECONDS - start))
printf '%s\n--- mpirun exit %d after %d s\n' "$output" "$rc" "$took"
if ((rc == 124 || rc == 137)); then
  echo "FAIL: mpirun still ran after ${limit} s"
  exit 1
fi
case $expect in
  ok) ((rc == 0)) && grep -q '^mpi_probe: OK$' <<<"$output" && exit 0 ;;
  fails) ((rc != 0)) && exit 0 ;;
  lost) grep -q '^rank_lost_error: rank 0: no answer within 3 s in barrier' <<<"$output" && exit 0 ;;
esac
echo "FAIL: expected the launch to end '$expect'"
exit 1

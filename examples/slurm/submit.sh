#!/bin/bash
# Submit a sharded sweep on a Slurm cluster: an array of N shard tasks, then a merge job that waits for them.
#   ./submit.sh 10            (ten shards; PROJECT, ARENA, SHARDS_DIR, MERGED, ARENA_ARGS are passed through)
set -euo pipefail
N=${1:-10}
RUN_ID=${RUN_ID:-sweep-$(date -u +%Y%m%d-%H%M%S)}
export RUN_ID
array=$(sbatch --parsable --array=0-$((N - 1)) --export=ALL shard.sbatch)
sbatch --dependency=afterany:"$array" --export=ALL merge.sbatch
echo "run $RUN_ID: shards in array job $array; the merge runs when every shard has ended"
# While a shard runs, watch (and steer) it on its node, where its database is (SQLite's WAL needs the reader there):
#   srun --jobid="${array}_0" --overlap --pty arena watch "$RUN_ID" --db "$SCRATCH/shard-0.db"
#   srun --jobid="${array}_0" --overlap arena control "$RUN_ID" --db "$SCRATCH/shard-0.db" --concurrency 16
# and the copied databases as one run once they are in SHARDS_DIR: arena watch "$RUN_ID" --db "$SHARDS_DIR"

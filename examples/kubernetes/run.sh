#!/bin/sh
# Run the sharded load test on a cluster: the project as a ConfigMap, the shards' Indexed Job with a shared start
# time, then (when every shard is done) the merge Job. Needs kubectl and envsubst (gettext).
#   ./run.sh                      (RUN_ID defaults to load-<UTC time>)
set -eu
cd "$(dirname "$0")"   # the manifests and the project are read from here, whatever the caller's directory
RUN_ID=${RUN_ID:-load-$(date -u +%Y%m%d-%H%M%S)}
START_BASE=$(date -u +%Y-%m-%dT%H:%M:%SZ)   # every pod starts START_IN (90s) after this instant
export RUN_ID START_BASE
kubectl apply -f pvc.yaml
kubectl create configmap arena-project --from-file=arena.toml --from-file=cases.jsonl \
    --dry-run=client -o yaml | kubectl apply -f -
envsubst '$RUN_ID $START_BASE' < shards-job.yaml | kubectl apply -f -
# until the Job has ended either way (a failed shard ends it Failed: the merge then names what is missing)
until kubectl get job "arena-load-$RUN_ID" -o jsonpath='{.status.conditions[*].type}' | grep -qE 'Complete|Failed'
do sleep 10; done
envsubst '$RUN_ID' < merge-job.yaml | kubectl apply -f -
kubectl wait --for=condition=complete --timeout=30m "job/arena-merge-$RUN_ID"
kubectl logs "job/arena-merge-$RUN_ID"

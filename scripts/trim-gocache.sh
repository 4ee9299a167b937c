#!/usr/bin/env bash
# trim-gocache.sh: when the disk that holds Go's build cache has less than
# RIPCORD_MIN_FREE_GB (default 20) free, delete the cache's entries unused
# for the last RIPCORD_CACHE_KEEP_MIN minutes (default 180). Go marks an
# entry used by its modification time and trims only after five days; a
# day of -race builds in several worktrees grew it to 70 GB and filled the
# disk. Entries still in use are kept, so the next build stays warm.
set -euo pipefail

min_free_gb=${RIPCORD_MIN_FREE_GB:-20}
keep_min=${RIPCORD_CACHE_KEEP_MIN:-180}
cache=$(go env GOCACHE)
[ -d "$cache" ] || exit 0

free_gb() { df -P -k "$cache" | awk 'NR == 2 { print int($4 / 1048576) }'; }

before=$(free_gb)
if [ "$before" -ge "$min_free_gb" ]; then
	exit 0
fi
echo "trim-gocache: ${before} GB free (under ${min_free_gb}): removing build cache entries unused for ${keep_min} min from ${cache}"
find "$cache" -type f -mmin +"$keep_min" -delete
echo "trim-gocache: ${before} GB free before, $(free_gb) GB after"

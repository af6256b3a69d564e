#!/bin/sh
# How the bot runs, for `npm start` and the Docker image alike: the one place for its
# runtime settings, both ordinary and documented (docs/performance.md, "Memory"):
# - MALLOC_ARENA_MAX=1: glibc malloc keeps one arena instead of eight per core's worth. The
#   main thread allocates most; V8's background threads (compilers, GC) and libuv's pool free
#   what they allocate, and in an arena of their own that memory stayed resident, unusable by
#   the main thread (Node 24, RSS after a 100-job storm: 138-142 MiB with one, 141-164 with two);
# - --max-semi-space-size=4: V8's young generation stays at 4 MiB semi-spaces (its default
#   lets them grow to 16 MiB, resident for the process's life).
# Without arguments (`npm start`) it runs the bundled bot, dist/bot/main.js, bundled first when
# a source changed since (scripts/bundle.mjs, under 2 s); the Docker image names the bundle.
# `exec` replaces this shell: signals (SIGTERM) reach Node directly.
export MALLOC_ARENA_MAX=1
if [ "$#" -eq 0 ]; then
  node "$(dirname "$0")/bundle.mjs" --if-stale || exit 1
  set -- "$(dirname "$0")/../dist/bot/main.js"
fi
exec node --max-semi-space-size=4 "$@"

#!/bin/sh
# How the bot runs, for `npm start` and the Docker image alike: the one place for its
# runtime settings, both ordinary and documented (docs/performance.md, "Memory"):
# - MALLOC_ARENA_MAX=2: glibc malloc keeps two arenas instead of eight per core's worth,
#   which a single-threaded Node process never fills but keeps resident;
# - --max-semi-space-size=4: V8's young generation stays at 4 MiB semi-spaces (its default
#   lets them grow to 16 MiB, resident for the process's life).
# `exec` replaces this shell: signals (SIGTERM) reach Node directly.
export MALLOC_ARENA_MAX=2
exec node --max-semi-space-size=4 "$@"

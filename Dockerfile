# syntax=docker/dockerfile:1
# Build stage: compile TypeScript (dev dependencies and the sqlite3 native build tools live here).
FROM node:24-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build

# Runtime stage: production dependencies and compiled JS only, as a non-root user.
FROM node:24-slim AS runtime
ENV NODE_ENV=production DATA_DIR=/data PORT=3000
# glibc malloc: two arenas and a fixed 128 KiB trim threshold, as `npm start` sets them (README "Memory and V8 flags").
ENV MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072
WORKDIR /app
COPY package.json package-lock.json ./
# sqlite3 uses a prebuilt binary when one downloads, else compiles: the tools are removed in the same layer.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && npm ci --omit=dev && npm cache clean --force \
  && apt-get purge -y python3 make g++ && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
COPY --from=build /app/dist ./dist
# `npm run register` / `npm run invite` in the image run the compiled scripts through this launcher.
COPY scripts/run.mjs ./scripts/run.mjs
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The same V8 flags as `npm start` (README "Memory and V8 flags"): 4 MiB semi-spaces (V8 grows them to 16 MiB by default),
# no allocation-site pretenuring (it made each webhook's garbage survive into the old generation), and the old
# generation let grow 20 % past what a full GC leaves (V8 picks 10 %-300 % from its own speed measurements), and gc exposed
# for the heap trim (V8 12+ keeps the pages a GC empties until a memory-reducing GC).
CMD ["node", "--max-semi-space-size=4", "--no-allocation-site-pretenuring", "--heap-growing-percent=20", "--expose-gc", "dist/src/main.js"]

# syntax=docker/dockerfile:1
# Build stage: compile TypeScript and bundle the bot into dist/bot (dev dependencies and the sqlite3
# native build tools live here).
FROM node:24-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build

# Runtime stage: the bundle and production dependencies only (the native addons it leaves out), as a non-root user.
FROM node:24-slim AS runtime
ENV NODE_ENV=production DATA_DIR=/data PORT=3000
WORKDIR /app
COPY package.json package-lock.json ./
# sqlite3 uses a prebuilt binary when one downloads, else compiles: the tools are removed in the same layer.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && npm ci --omit=dev && npm cache clean --force \
  && apt-get purge -y python3 make g++ && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
COPY --from=build /app/dist ./dist
# `npm run register` / `npm run invite` in the image run the compiled scripts through this launcher;
# start.sh holds the runtime settings `npm start` uses too.
COPY scripts/run.mjs scripts/start.sh ./scripts/
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The same launcher and settings as `npm start` (scripts/start.sh).
CMD ["sh", "scripts/start.sh", "dist/bot/main.js"]

-- Takes one edit slot of a channel's bot-token budget, on Redis's clock (TIME) so instances
-- never disagree on time. A slot counts from its grant until `window` after Discord answered
-- (see channel-budget-settle.lua); progress edits leave `cap` below the limit for finals.
-- Returns 0 when granted, else how many ms to wait before asking again.
-- KEYS[1] grants not yet answered (sorted by expiry), KEYS[2] answer times within the window,
-- KEYS[3] this channel's 429 block, KEYS[4] the global 429 block
-- ARGV[1] window ms, ARGV[2] cap for this kind of edit, ARGV[3] grant id, ARGV[4] grant lifetime ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local blocked = math.max(tonumber(redis.call('get', KEYS[3]) or '0'), tonumber(redis.call('get', KEYS[4]) or '0'))
if blocked > now then return blocked - now end
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
redis.call('zremrangebyscore', KEYS[2], '-inf', now - window)
local cap = tonumber(ARGV[2])
local used = redis.call('zcard', KEYS[1]) + redis.call('zcard', KEYS[2])
if used < cap then
  redis.call('zadd', KEYS[1], now + tonumber(ARGV[4]), ARGV[3])
  redis.call('pexpire', KEYS[1], tonumber(ARGV[4]) * 2)
  return 0
end
local oldest = redis.call('zrange', KEYS[2], used - cap, used - cap, 'WITHSCORES')
if oldest[2] == nil then return window end
return math.max(1, tonumber(oldest[2]) + window - now)

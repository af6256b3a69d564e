-- Discord answered 429: nothing goes to the channel (or anywhere, for the global block) for
-- ARGV[1] ms from now (Redis's clock); a longer block already set stays.
-- KEYS[1] block key; ARGV[1] ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = now + tonumber(ARGV[1])
if untilMs > tonumber(redis.call('get', KEYS[1]) or '0') then
  redis.call('set', KEYS[1], untilMs, 'PX', tonumber(ARGV[1]) + 1000)
end
return 1

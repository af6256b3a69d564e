-- A granted channel edit came back: its grant goes; unless it was refused for a rate limit
-- (ARGV[2] = '0'), its slot counts from now (Discord's answer) for the window.
-- KEYS[1] grants, KEYS[2] answer times; ARGV[1] grant id, ARGV[2] '1' counted / '0' not, ARGV[3] window ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zrem', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  redis.call('zadd', KEYS[2], now, ARGV[1])
  redis.call('pexpire', KEYS[2], tonumber(ARGV[3]) * 2)
end
return 1

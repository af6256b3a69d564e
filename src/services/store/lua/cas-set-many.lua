-- Compare-and-set over several records at once (fair use and credits, and every kv
-- read-modify-write): nothing is written unless every key still holds the exact text the
-- caller read, so a caller paused between its read and this write cannot overwrite what
-- another instance stored meanwhile.
-- KEYS: every key read; ARGV[1..#KEYS]: the text each held ('' = absent);
-- then, per key to write: its position in KEYS, its new text ('' = delete it), its TTL in ms.
local n = #KEYS
for i = 1, n do
  local current = redis.call('get', KEYS[i])
  if current == false then current = '' end
  if current ~= ARGV[i] then return 0 end
end
for j = n + 1, #ARGV, 3 do
  local key = KEYS[tonumber(ARGV[j])]
  if ARGV[j + 1] == '' then
    redis.call('del', key)
  else
    redis.call('set', key, ARGV[j + 1], 'PX', ARGV[j + 2])
  end
end
return 1

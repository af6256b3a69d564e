-- Compare-and-set on a record's exact stored text: a record changed by anyone since it was
-- read is not overwritten (the caller reads again and merges again).
-- KEYS[1] record; ARGV[1] expected text, ARGV[2] new text, ARGV[3] TTL in ms ('' for none)
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == '' then
  redis.call('set', KEYS[1], ARGV[2])
else
  redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1

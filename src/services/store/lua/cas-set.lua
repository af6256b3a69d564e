-- Compare-and-set on a record's stored text: a record changed by anyone since it was read is
-- not overwritten (the caller reads again and merges again). The caller sends the SHA-1 of the
-- text it read, not the text: a job record is 1-3 KB, written thousands of times a second in a
-- storm, and its second copy in every call was a third of what the bot sent Redis. SHA-1 guards
-- against concurrent writers here, not against an adversary (nobody picks both texts).
-- KEYS[1] record; ARGV[1] SHA-1 (hex) of the expected text, ARGV[2] new text, ARGV[3] TTL in ms
-- ('' for none)
local current = redis.call('get', KEYS[1])
if not current or redis.sha1hex(current) ~= ARGV[1] then return 0 end
if ARGV[3] == '' then
  redis.call('set', KEYS[1], ARGV[2])
else
  redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1

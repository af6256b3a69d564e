-- Extends a lock (or a lease) only while it still holds the caller's token.
-- KEYS[1] lock; ARGV[1] token, ARGV[2] lease in ms
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0

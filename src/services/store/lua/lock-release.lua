-- Deletes a lock only while it still holds the caller's token: after a pause past its lease,
-- another holder may own it.
-- KEYS[1] lock; ARGV[1] token
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0

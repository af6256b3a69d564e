-- Takes the gateway lease when nobody holds it, with a new fencing token (INCR: every tenure
-- has a larger one). Returns the token, or 0 when another instance holds the lease.
-- KEYS[1] lease, KEYS[2] fencing counter; ARGV[1] instance id, ARGV[2] lease in ms
if redis.call('exists', KEYS[1]) == 1 then return 0 end
local token = redis.call('incr', KEYS[2])
redis.call('set', KEYS[1], ARGV[1] .. ' ' .. token, 'PX', ARGV[2])
return token

-- First caller wins: sets the key only if it is absent (SET NX PX: an expired claim is
-- absent, Redis dropped it) or holds text that is not JSON (unreadable, as SQLite's claim
-- treats it), and answers the holder's text otherwise, in one step, so a lost claim always
-- names what holds the key.
-- KEYS[1] the claim; ARGV[1] its text, ARGV[2] its TTL in ms.
-- Returns false (nil) when this caller won, else the text the key holds.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
local held = redis.call('get', KEYS[1])
if pcall(cjson.decode, held) then return held end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false

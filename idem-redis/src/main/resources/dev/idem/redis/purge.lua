-- Runs after prelude.lua.
-- KEYS[1] a key found by SCAN. Returns 1 if it was an expired record and was deleted, else 0.
if redis.call('TYPE', k).ok ~= 'hash' then
  return 0
end
local r = redis.call('HMGET', k, 'state', 'expires_at')
local expiresAt = tonumber(r[2])
if not r[1] or not expiresAt or now < expiresAt then
  return 0
end
redis.call('DEL', k)
return 1

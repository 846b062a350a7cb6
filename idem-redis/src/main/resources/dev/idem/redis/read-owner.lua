-- After prelude.lua: reads the record's state, owner and expiry; live is false for a
-- missing or expired record.
local r = redis.call('HMGET', k, 'state', 'owner', 'expires_at')
local expiresAt = tonumber(r[3])
local live = r[1] and expiresAt and now < expiresAt

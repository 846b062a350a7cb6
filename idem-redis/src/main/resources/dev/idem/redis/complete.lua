-- Runs after prelude.lua and read-owner.lua.
-- KEYS[1] record; ARGV: owner, encoded response, retention ms. Returns 1 if stored, or if already
-- completed by this owner with the same encoded response (a repetition: a lost reply, or a
-- cluster client that re-sent the command); else 0. Fencing: only a live claim of this owner is
-- completed. A repetition rewrites the state field, so that a WAIT after it covers the record.
if not live or r[2] ~= ARGV[1] then
  return 0
end
if r[1] == 'COMPLETED' then
  if redis.call('HGET', k, 'response') == ARGV[2] then
    redis.call('HSET', k, 'state', 'COMPLETED')
    return 1
  end
  return 0
end
if r[1] ~= 'IN_PROGRESS' then
  return 0
end
local newExpiresAt = now + tonumber(ARGV[3])
redis.call('HSET', k, 'state', 'COMPLETED', 'response', ARGV[2], 'completed_at', ms(now), 'expires_at', ms(newExpiresAt))
redis.call('PEXPIREAT', k, ms(newExpiresAt))
return 1

-- Runs after prelude.lua.
-- KEYS[1] record; ARGV: principal, operation, key, fingerprint hex, owner, lease ms, retention ms,
-- touch ("1" when a durability mode waits for replicas: a replay rewrites the state field, so the
-- WAIT that follows covers the record the replay read). Returns {state, fingerprint, extra}: extra
-- is 1/0 (recovery) for CLAIMED, the lease remaining in ms for IN_PROGRESS, the encoded response
-- for COMPLETED.
local lease = tonumber(ARGV[6])
local retention = tonumber(ARGV[7])
local function claimNew()
  local expiresAt = now + retention
  redis.call('DEL', k)
  redis.call('HSET', k, 'principal', ARGV[1], 'operation', ARGV[2], 'key', ARGV[3],
      'fingerprint', ARGV[4], 'state', 'IN_PROGRESS', 'owner', ARGV[5],
      'lease_until', ms(now + lease), 'expires_at', ms(expiresAt))
  redis.call('PEXPIREAT', k, ms(expiresAt))
  return {'CLAIMED', ARGV[4], 0}
end
if redis.call('EXISTS', k) == 0 then
  return claimNew()
end
local r = redis.call('HMGET', k, 'state', 'fingerprint', 'owner', 'lease_until', 'expires_at', 'response')
local state, fp, owner = r[1], r[2], r[3]
local leaseUntil, expiresAt, response = tonumber(r[4]), tonumber(r[5]), r[6]
if not fp or not expiresAt
    or (state == 'IN_PROGRESS' and (not owner or not leaseUntil))
    or (state == 'COMPLETED' and not response)
    or (state ~= 'IN_PROGRESS' and state ~= 'COMPLETED') then
  return redis.error_reply('IDEMCORRUPT the hash ' .. k .. ' is not a valid idem record')
end
if now >= expiresAt then
  return claimNew()
end
if state == 'COMPLETED' then
  if ARGV[8] == '1' then
    redis.call('HSET', k, 'state', 'COMPLETED')
  end
  return {'COMPLETED', fp, response}
end
if owner == ARGV[5] then
  redis.call('HSET', k, 'lease_until', ms(now + lease))
  return {'CLAIMED', fp, 0}
end
if now >= leaseUntil and fp == ARGV[4] then
  local newExpiresAt = math.max(expiresAt, now + retention)
  redis.call('HSET', k, 'owner', ARGV[5], 'lease_until', ms(now + lease), 'expires_at', ms(newExpiresAt))
  redis.call('PEXPIREAT', k, ms(newExpiresAt))
  return {'CLAIMED', fp, 1}
end
return {'IN_PROGRESS', fp, math.max(0, leaseUntil - now)}

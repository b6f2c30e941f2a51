-- Drops up to a batch of sessions of a pool last used at or before a cutoff, oldest first, and forgets release
-- records older than their own cutoff. Binding keys are built here from the pool's prefix: they share the pool's
-- hash tag, so they live in the pool's slot on a cluster too.
-- KEYS: idle, counts, stats, released
-- ARGV: cutoff (ms), batch size, binding key prefix, release record cutoff (ms)
-- Reply: {ids dropped, dropped keys}
local idle, counts, stats, released = pool_keys('idle', 'counts', 'stats', 'released')
local prefix = ARGV[3]

redis.call('ZREMRANGEBYSCORE', released, '-inf', ARGV[4])
local ids = redis.call('ZRANGEBYSCORE', idle, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local expired = {}
for _, id in ipairs(ids) do
  local key = prefix .. id
  expect(key, 'string')
  local bound = redis.call('GET', key)
  redis.call('ZREM', idle, id)
  if bound then
    redis.call('DEL', key)
    if redis.call('HINCRBY', counts, bound, -1) <= 0 then
      redis.call('HDEL', counts, bound)
    end
    expired[#expired + 1] = id
  end
end
if #expired > 0 then
  redis.call('HINCRBY', stats, 'expired', #expired)
end
return {expired, dropped}

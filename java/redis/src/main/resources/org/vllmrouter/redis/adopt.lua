-- Puts bindings a router made on its own (the store did not answer, or lost its data) into the store: a binding
-- the store already holds wins, and a session released after its last use here (release record) or idle past the
-- TTL is not brought back. Adopted sessions count as started.
-- KEYS: idle, counts, stats, released
-- ARGV: now (ms), ttl (ms), binding key prefix, epoch to set if the pool has none, then triples of
--       session id, worker URL, last use (ms)
-- Reply: {epoch, dropped keys, {URL each session is bound to now, '' when it is not bound}}
local idle, counts, stats, released = pool_keys('idle', 'counts', 'stats', 'released')
local now, ttl, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]

redis.call('HSETNX', stats, 'epoch', ARGV[4])
local epoch = redis.call('HGET', stats, 'epoch')

local bound_now = {}
for i = 5, #ARGV, 3 do
  local id, url, last = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local key = prefix .. id
  expect(key, 'string')
  local bound = redis.call('GET', key)
  local released_at = redis.call('ZSCORE', released, id)
  if bound then
    redis.call('ZADD', idle, 'XX', 'GT', last, id)
    bound_now[#bound_now + 1] = bound
  elseif (released_at and tonumber(released_at) >= last) or now - last >= ttl then
    bound_now[#bound_now + 1] = ''
  else
    redis.call('SET', key, url)
    redis.call('ZADD', idle, last, id)
    redis.call('HINCRBY', counts, url, 1)
    redis.call('HINCRBY', stats, 'started', 1)
    bound_now[#bound_now + 1] = url
  end
end
return {epoch, dropped, bound_now}

-- Releases one session of a pool (finish_session) and records when, so that a router reconciling a binding it
-- made on its own (the store did not answer, or lost its data) and last used before the release does not bring
-- the session back.
-- KEYS: binding, idle, counts, stats, released
-- ARGV: session id, time of the release (ms)
-- Reply: {1 if a binding was released else 0, dropped keys}
local binding, idle, counts, stats, released = pool_keys('binding', 'idle', 'counts', 'stats', 'released')
local id = ARGV[1]

redis.call('ZADD', released, 'GT', ARGV[2], id)
redis.call('ZREM', idle, id)
local bound = redis.call('GET', binding)
if not bound then
  return {0, dropped}
end
redis.call('DEL', binding)
if redis.call('HINCRBY', counts, bound, -1) <= 0 then
  redis.call('HDEL', counts, bound)
end
redis.call('HINCRBY', stats, 'released', 1)
return {1, dropped}

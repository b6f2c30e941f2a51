-- Routes one request of a session that the calling router does not hold a live binding for: keeps the binding
-- when it is live (idle less than the TTL) and its worker is a candidate, else binds the candidate with the
-- fewest sessions of this pool. The router passes the candidates in tie-break order (LeastLoaded.preferenceOrder:
-- rendezvous weight of the session id, then candidate order), so the first candidate with the fewest sessions wins
-- and no hashing happens here; the session-table contract suite checks this choice against its reference model.
-- KEYS: binding, idle, counts, stats
-- ARGV: session id, now (ms), ttl (ms), epoch to set if the pool has none, candidate URL 1 .. n
-- Reply: {outcome, url, sessions on url, epoch, dropped keys}
local binding, idle, counts, stats = pool_keys('binding', 'idle', 'counts', 'stats')
local id, now, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local FIRST = 5

redis.call('HSETNX', stats, 'epoch', ARGV[4])
local epoch = redis.call('HGET', stats, 'epoch')

local function unbind(url)
  if redis.call('HINCRBY', counts, url, -1) <= 0 then
    redis.call('HDEL', counts, url)
  end
end

local bound = redis.call('GET', binding)
local outcome
if bound then
  local last = redis.call('ZSCORE', idle, id)
  if last and now - tonumber(last) < ttl then
    for i = FIRST, #ARGV do
      if ARGV[i] == bound then
        redis.call('ZADD', idle, 'GT', now, id)
        return {'existing', bound, tonumber(redis.call('HGET', counts, bound)) or 0, epoch, dropped}
      end
    end
  end
  unbind(bound)
  redis.call('HINCRBY', stats, 'rebound', 1)
  outcome = 'rebound'
else
  redis.call('HINCRBY', stats, 'started', 1)
  outcome = 'started'
end

local loads = redis.call('HMGET', counts, unpack(ARGV, FIRST))
local best, fewest = 1, nil
for i = 1, #loads do
  local n = tonumber(loads[i]) or 0
  if fewest == nil or n < fewest then
    best, fewest = i, n
  end
end
local url = ARGV[FIRST + best - 1]
redis.call('SET', binding, url)
redis.call('ZADD', idle, now, id)
return {outcome, url, redis.call('HINCRBY', counts, url, 1), epoch, dropped}

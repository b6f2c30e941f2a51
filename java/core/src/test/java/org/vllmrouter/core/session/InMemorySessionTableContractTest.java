package org.vllmrouter.core.session;

import java.time.Duration;
import java.util.function.LongSupplier;

/** The session-table contract on the in-memory table, in exact least-recently-used order (expiry never late). */
class InMemorySessionTableContractTest extends SessionTableContract {
    @Override
    protected SessionTable newTable(Duration ttl, LongSupplier clockMillis) {
        return new InMemorySessionTable(ttl, InMemorySessionTable.DEFAULT_MAX_SESSIONS,
                () -> clockMillis.getAsLong() * 1_000_000L, Duration.ZERO);
    }

    @Override
    protected void checkStructure(SessionTable table) {
        ((InMemorySessionTable) table).checkStructure();
    }
}

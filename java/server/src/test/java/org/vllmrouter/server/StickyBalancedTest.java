package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** sticky_balanced through the router: the request's body size is the weight its session carries. */
@ExtendWith(NoLeaks.class)
class StickyBalancedTest {

    private static String turn(RouterServer router, String session, String content) throws Exception {
        HttpResponse<String> r = TestHttp.post(router.url() + "/v1/chat/completions", TestHttp.chat("m", content),
                "X-Session-ID", session);
        assertEquals(200, r.statusCode(), r.body());
        return r.headers().firstValue("x-worker-id").orElseThrow();
    }

    @Test
    void newSessionsAvoidTheWorkerHoldingALongContextAndKnownOnesStay() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("policy", "sticky_balanced");
            try (RouterServer router = Fixture.start(cfg)) {
                String heavy = turn(router, "long", "word ".repeat(20_000));
                String light = turn(router, "short-1", "hi");
                assertNotEquals(heavy, light);
                // By session count one of these two would go to the heavy worker.
                assertEquals(light, turn(router, "short-2", "hi"));
                assertEquals(light, turn(router, "short-3", "hi"));
                assertEquals(heavy, turn(router, "long", "and a short turn"), "a known session stays");
                for (String id : new String[] {"long", "short-1", "short-2", "short-3"}) {
                    assertEquals(200, TestHttp.post(router.url() + "/finish_session?session_id=" + id, "")
                            .statusCode());
                }
                assertEquals(0, router.sessionStats().activeSessions());
            }
        }
    }
}

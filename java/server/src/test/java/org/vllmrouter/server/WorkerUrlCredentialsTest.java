package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** A worker URL with credentials in it routes as any other, and nothing the router shows carries them. */
@ExtendWith(NoLeaks.class)
class WorkerUrlCredentialsTest {
    private static final String PASSWORD = "s3cret-in-url";

    @Test
    void userInfoOfAWorkerUrlIsRedactedWhereverTheUrlIsShown() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build())) {
            int port = mock.ports().get(0);
            String credentialed = "http://trainer:" + PASSWORD + "@127.0.0.1:" + port;
            String shown = "http://***@127.0.0.1:" + port;
            try (RouterServer router = Fixture.start(Fixture.base(List.of(credentialed)))) {
                HttpResponse<String> turn = TestHttp.post(router.url() + "/v1/chat/completions",
                        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}",
                        "X-Session-ID", "traj-1");
                assertEquals(200, turn.statusCode(), turn.body());

                HttpResponse<String> sessions = TestHttp.get(router.url() + "/sessions");
                assertEquals(1, TestHttp.json(sessions).get("active_by_worker").get(shown).asInt(), sessions.body());
                HttpResponse<String> state = TestHttp.get(router.url() + "/dashboard/state");
                assertEquals(200, state.statusCode(), state.body());
                assertTrue(state.body().contains("\"" + shown + "\""), state.body());
                HttpResponse<String> listed = TestHttp.get(router.url() + "/list_workers");
                assertEquals(List.of(shown), TestHttp.JSON.convertValue(TestHttp.json(listed).get("urls"), List.class));
                HttpResponse<String> metrics = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics");
                assertTrue(metrics.body().contains("worker=\"" + shown + "\""), metrics.body());

                for (HttpResponse<String> r : List.of(turn, sessions, state, listed, metrics,
                        TestHttp.get(router.url() + "/workers"), TestHttp.get(router.url() + "/get_loads"))) {
                    assertFalse(r.body().contains(PASSWORD), r.uri() + " shows the password: " + r.body());
                }
            }
        }
    }
}

package org.vllmrouter.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

class KvEventSourcesTest {

    static final String RANK = "{\"endpoint\":\"tcp://*:5557\",\"replay_endpoint\":\"tcp://*:5558\",\"topic\":\"kv\"}";

    @Test
    void readsTheMocksPerRankMap() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.kvEvents(true).kvTopic("t")).build())) {
            MockWorker w = mock.worker(0);
            String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(w.url() + "/kv_event_sources")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            assertEquals(Map.of(0, new KvEventSource(w.kvEvents().endpoint(), w.kvEvents().replayEndpoint(), "t")),
                    KvEventSources.parse(body, "127.0.0.1"));
        }
    }

    @Test
    void everyShapeVllmHasUsedGivesTheSameSources() {
        Map<Integer, KvEventSource> expected = Map.of(
                0, new KvEventSource("tcp://10.1.2.3:5557", "tcp://10.1.2.3:5558", "kv"),
                1, new KvEventSource("tcp://10.1.2.3:5559", null, ""));
        String rank1 = "{\"endpoint\":\"tcp://0.0.0.0:5559\",\"replay_endpoint\":null}";
        assertEquals(expected, KvEventSources.parse("{\"0\":" + RANK + ",\"1\":" + rank1 + "}", "10.1.2.3"));
        assertEquals(expected, KvEventSources.parse("[" + RANK + "," + rank1 + "]", "10.1.2.3"));
        assertEquals(expected, KvEventSources.parse("{\"sources\":[" + rank1.replace("{", "{\"data_parallel_rank\":1,")
                + "," + RANK.replace("{", "{\"rank\":0,") + "]}", "10.1.2.3"));
    }

    @Test
    void disabledRanksAndAnEmptyAnswerGiveNoSources() {
        assertEquals(Map.of(), KvEventSources.parse("{}", "h"));
        assertEquals(Map.of(), KvEventSources.parse("{\"0\":{\"endpoint\":\"tcp://h:1\",\"enable_kv_cache_events\":false}}", "h"));
    }

    @Test
    void wildcardHostsAreReachedAtTheWorkersHost() {
        assertEquals("tcp://[::1]:5557", KvEventSources.reachable("tcp://[::]:5557", "::1"));
        assertEquals("tcp://w1:5557", KvEventSources.reachable("tcp://*:5557", "w1"));
        assertEquals("tcp://10.0.0.5:5557", KvEventSources.reachable("tcp://10.0.0.5:5557", "w1"));
    }

    @Test
    void otherShapesFailLoudly() {
        for (String bad : new String[] {"\"tcp://h:1\"", "{\"zero\":{}}", "{\"0\":{\"topic\":\"x\"}}", "not json",
                "{\"0\":{\"endpoint\":\"ipc:///tmp/kv\"}}", "{\"0\":{\"endpoint\":\"tcp://h:1\",\"encoding\":\"json\"}}",
                "[{\"endpoint\":\"tcp://h:1\",\"rank\":0},{\"endpoint\":\"tcp://h:2\",\"rank\":0}]"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KvEventSources.parse(bad, "h"), bad);
            assertTrue(e.getMessage().startsWith("kv_event_sources"), e.getMessage());
            assertTrue(!e.getMessage().contains("\n"), "one line");
        }
    }
}

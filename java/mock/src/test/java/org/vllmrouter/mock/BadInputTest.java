package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Random garbage and wrongly typed JSON get a 400 (or a normal answer), never a crash or a hang. */
class BadInputTest {

    static final List<String> ROUTES = List.copyOf(Routes.INFERENCE);
    static final List<String> FIELDS = List.of("prompt", "messages", "text", "input_ids", "token_ids", "input",
            "tokens", "query", "documents", "max_tokens", "n", "sampling_params", "stream", "logprobs",
            "kv_transfer_params", "stream_options", "max_completion_tokens", "dimensions", "top_n");

    static MockWorkers mock;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.single());
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    @Test
    void randomBodiesNeverBreakTheWorker() throws Exception {
        long seed = new SplittableRandom().nextLong();
        SplittableRandom rnd = new SplittableRandom(seed);
        String url = mock.urls().get(0);
        for (int i = 0; i < 150; i++) {
            String route = ROUTES.get(rnd.nextInt(ROUTES.size()));
            String body = rnd.nextInt(4) == 0 ? garbage(rnd) : randomObject(rnd).toString();
            HttpResponse<String> res = Http.post(url + route, body);
            int status = res.statusCode();
            String why = "seed " + seed + ", " + route + " " + body + " -> " + status + " " + res.body();
            assertTrue(status == 200 || status == 400, why);
            if (status == 400) {
                JsonNode err = Http.json(res).get("error");
                assertEquals(400, err.get("code").asInt(), why);
            }
        }
        assertEquals(200, Http.get(url + "/health").statusCode(), "seed " + seed);
        assertEquals(0, mock.worker(0).inFlight(), "seed " + seed);
    }

    private static String garbage(SplittableRandom rnd) {
        StringBuilder sb = new StringBuilder();
        int n = rnd.nextInt(40);
        for (int i = 0; i < n; i++) {
            sb.append((char) (rnd.nextInt(2) == 0 ? rnd.nextInt(32, 127) : "{}[]\",:".charAt(rnd.nextInt(7))));
        }
        return sb.toString();
    }

    private static ObjectNode randomObject(SplittableRandom rnd) {
        ObjectNode o = Http.JSON.createObjectNode();
        int fields = rnd.nextInt(4);
        for (int i = 0; i < fields; i++) {
            String name = FIELDS.get(rnd.nextInt(FIELDS.size()));
            o.set(name, randomValue(rnd, 2));
        }
        return o;
    }

    private static JsonNode randomValue(SplittableRandom rnd, int depth) {
        int kind = rnd.nextInt(depth > 0 ? 8 : 6);
        return switch (kind) {
            case 0 -> Http.JSON.getNodeFactory().nullNode();
            case 1 -> Http.JSON.getNodeFactory().booleanNode(rnd.nextBoolean());
            case 2 -> Http.JSON.getNodeFactory().numberNode(rnd.nextInt(-3, 40));
            case 3 -> Http.JSON.getNodeFactory().numberNode(rnd.nextDouble() * 1e12);
            case 4 -> Http.JSON.getNodeFactory().textNode("w".repeat(rnd.nextInt(5)));
            case 5 -> Http.JSON.getNodeFactory().numberNode(Long.MAX_VALUE);
            case 6 -> {
                ArrayNode a = Http.JSON.createArrayNode();
                int n = rnd.nextInt(4);
                for (int i = 0; i < n; i++) {
                    a.add(randomValue(rnd, depth - 1));
                }
                yield a;
            }
            default -> {
                ObjectNode o = Http.JSON.createObjectNode();
                o.set(FIELDS.get(rnd.nextInt(FIELDS.size())), randomValue(rnd, depth - 1));
                yield o;
            }
        };
    }
}

package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.settings.RouterSettings;
import org.vllmrouter.mock.CapturedRequest;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/**
 * OpenTelemetry spans as a collector receives them: the server span continues the client's trace, each worker call
 * is a client span under it whose context the worker received, and tracing never costs a request.
 */
class TracingTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String CLIENT_SPAN = "00f067aa0ba902b7";
    private static final String CHAT = "/v1/chat/completions";

    private static MockWorkers mock;

    @BeforeAll
    static void startWorkers() {
        mock = MockWorkers.start(MockConfig.builder().count(4).build());
    }

    @AfterAll
    static void stopWorkers() {
        mock.close();
    }

    @BeforeEach
    void clear() {
        mock.workers().forEach(MockWorker::clearCaptured);
    }

    private static Map<String, Object> traced(List<String> workers, String endpoint) {
        Map<String, Object> cfg = Fixture.base(workers);
        cfg.put("enable_trace", true);
        cfg.put("otlp_traces_endpoint", endpoint);
        return cfg;
    }

    private static RouterServer start(Map<String, Object> cfg, Map<String, String> variables) throws Exception {
        return RouterServer.start(RouterSettings.of(Fixture.config(cfg), StartEnvironment.of(variables, Map.of())),
                RouterServer.Options.DEFAULTS);
    }

    private static HttpResponse<String> chat(RouterServer router, String session, String... headers)
            throws Exception {
        List<String> all = new ArrayList<>(List.of("X-Session-ID", session));
        all.addAll(List.of(headers));
        return TestHttp.post(router.url() + CHAT, TestHttp.chat("mock", "hello from " + session),
                all.toArray(String[]::new));
    }

    @Test
    void theServerSpanContinuesTheClientsTraceAndTheWorkerGetsTheClientSpansContext() throws Exception {
        List<String> workers = mock.urls().subList(0, 2);
        try (OtlpCollector collector = OtlpCollector.grpc();
             RouterServer router = start(traced(workers, collector.endpoint()), Map.of())) {
            HttpResponse<String> r = chat(router, "trace-s1",
                    "traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN + "-01", "tracestate", "vendor=abc");
            assertEquals(200, r.statusCode(), r.body());

            List<Span> spans = collector.await(s -> s.size() >= 2, WAIT);
            Span server = only(spans, Span.SpanKind.SPAN_KIND_SERVER);
            Span client = only(spans, Span.SpanKind.SPAN_KIND_CLIENT);
            assertEquals(TRACE_ID, hex(server.getTraceId()));
            assertEquals(CLIENT_SPAN, hex(server.getParentSpanId()), "the client's span is the router's parent");
            assertEquals(TRACE_ID, hex(client.getTraceId()));
            assertEquals(hex(server.getSpanId()), hex(client.getParentSpanId()), "a worker call is under the request");
            assertEquals("POST " + CHAT, server.getName());
            assertEquals(CHAT, attribute(server, "http.route"));
            assertEquals("POST", attribute(server, "http.request.method"));
            assertEquals("200", attribute(server, "http.response.status_code"));
            assertEquals("trace-s1", attribute(server, "session.id"));
            assertEquals("mock", attribute(server, "gen_ai.request.model"));
            assertEquals("sticky_least_loaded", attribute(server, "vllm_router.policy"));
            assertEquals("0", attribute(server, "vllm_router.retries"));
            assertTrue(Long.parseLong(attribute(server, "http.response.body.size")) > 0, server.toString());
            assertEquals("worker", attribute(client, "vllm_router.stage"));
            assertEquals("200", attribute(client, "http.response.status_code"));
            String worker = attribute(server, "vllm_router.worker");
            assertEquals(worker + CHAT, attribute(client, "url.full"));
            assertEquals(List.of("vllm-router"), collector.serviceNames().stream().distinct().toList());

            CapturedRequest received = capturedChat(workers);
            assertEquals("00-" + TRACE_ID + "-" + hex(client.getSpanId()) + "-01", received.header("traceparent"),
                    "the worker's request carries the client span's context");
            assertEquals("vendor=abc", received.header("tracestate"));
        }
    }

    @Test
    void anHttpProtobufCollectorGetsTheSameSpansAndAMalformedTraceparentStartsANewTrace() throws Exception {
        try (OtlpCollector collector = OtlpCollector.http();
             RouterServer router = start(traced(mock.urls().subList(0, 2), null),
                     Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint(),
                             "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", "OTEL_SERVICE_NAME", "router-a"))) {
            HttpResponse<String> r = chat(router, "trace-s2", "traceparent", "00-not-a-trace-context-01");
            assertEquals(200, r.statusCode(), r.body());

            List<Span> spans = collector.await(s -> s.size() >= 2, WAIT);
            Span server = only(spans, Span.SpanKind.SPAN_KIND_SERVER);
            assertTrue(server.getParentSpanId().isEmpty(), "a malformed traceparent is no parent");
            assertEquals(hex(server.getTraceId()), hex(only(spans, Span.SpanKind.SPAN_KIND_CLIENT).getTraceId()));
            assertEquals(List.of("router-a"), collector.serviceNames().stream().distinct().toList());
        }
    }

    @Test
    void pdStagesAreClientSpansOfTheRequestsSpan() throws Exception {
        Map<String, Object> cfg = traced(List.of(), null);
        cfg.put("vllm_pd_disaggregation", true);
        cfg.put("prefill_urls", List.of(java.util.Arrays.asList(mock.urls().get(0), null)));
        cfg.put("decode_urls", List.of(mock.urls().get(1)));
        try (OtlpCollector collector = OtlpCollector.grpc()) {
            cfg.put("otlp_traces_endpoint", collector.endpoint());
            try (RouterServer router = start(cfg, Map.of())) {
                assertEquals(200, chat(router, "trace-pd").statusCode());
                List<Span> spans = collector.await(s -> s.size() >= 3, WAIT);
                Span server = only(spans, Span.SpanKind.SPAN_KIND_SERVER);
                List<Span> calls = spans.stream().filter(s -> s.getKind() == Span.SpanKind.SPAN_KIND_CLIENT).toList();
                assertEquals(List.of("prefill", "decode"),
                        calls.stream().map(s -> attribute(s, "vllm_router.stage")).sorted().toList().reversed());
                for (Span call : calls) {
                    assertEquals(hex(server.getSpanId()), hex(call.getParentSpanId()));
                }
                String decodeSpan = hex(calls.stream().filter(s -> attribute(s, "vllm_router.stage").equals("decode"))
                        .findFirst().orElseThrow().getSpanId());
                CapturedRequest decoded = mock.worker(1).captured(CHAT).get(0);
                assertTrue(decoded.header("traceparent").contains(decodeSpan), decoded.headers().toString());
            }
        }
    }

    @Test
    void finishSessionEndsTheTrajectoryWithItsTotals() throws Exception {
        try (OtlpCollector collector = OtlpCollector.grpc();
             RouterServer router = start(traced(mock.urls().subList(0, 2), collector.endpoint()), Map.of())) {
            chat(router, "trace-traj");
            chat(router, "trace-traj");
            assertEquals(200, TestHttp.post(router.url() + "/finish_session?session_id=trace-traj", "").statusCode());

            List<Span> spans = collector.await(s -> s.stream().anyMatch(TracingTest::finishedSession), WAIT);
            Span finish = spans.stream().filter(TracingTest::finishedSession).findFirst().orElseThrow();
            Span.Event event = finish.getEventsList().get(0);
            assertEquals("2", attribute(event.getAttributesList(), "vllm_router.session.turns"));
            assertEquals("trace-traj", attribute(finish, "session.id"));
            long turns = spans.stream().filter(s -> s.getKind() == Span.SpanKind.SPAN_KIND_SERVER
                    && "trace-traj".equals(attribute(s, "session.id")) && CHAT.equals(attribute(s, "http.route")))
                    .count();
            assertEquals(2, turns, "each turn carries the session id");
        }
    }

    @Test
    void aDeadCollectorCostsNoRequest() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        try (RouterServer router = start(traced(mock.urls().subList(0, 2), "127.0.0.1:" + closedPort), Map.of())) {
            for (int i = 0; i < 20; i++) {
                assertEquals(200, chat(router, "dead-" + i).statusCode());
            }
        }
    }

    @Test
    void samplingRatioZeroFollowsOnlyASampledClientAndExcludedPathsAreNeverTraced() throws Exception {
        try (OtlpCollector collector = OtlpCollector.grpc()) {
            Map<String, Object> cfg = traced(mock.urls().subList(0, 2), collector.endpoint());
            cfg.put("otel_sampling_ratio", 0.0);
            try (RouterServer router = start(cfg, Map.of())) {
                assertEquals(200, TestHttp.get(router.url() + "/health",
                        "traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN + "-01").statusCode());
                for (int i = 0; i < 5; i++) {
                    assertEquals(200, chat(router, "unsampled-" + i).statusCode());
                }
                assertEquals(200, chat(router, "sampled",
                        "traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN + "-01").statusCode());
                List<Span> spans = collector.await(s -> s.size() >= 2, WAIT);
                Thread.sleep(1500);
                spans = collector.spans();
                assertEquals(2, spans.size(), "only the sampled client's request: " + spans);
                assertTrue(spans.stream().allMatch(s -> hex(s.getTraceId()).equals(TRACE_ID)));
                assertTrue(spans.stream().noneMatch(s -> "/health".equals(attribute(s, "url.path"))));
            }
        }
    }

    @Test
    void withTracingOffTraceHeadersGoToTheWorkerVerbatim() throws Exception {
        List<String> workers = mock.urls().subList(0, 2);
        try (RouterServer router = Fixture.start(Fixture.base(workers))) {
            String traceparent = "00-" + TRACE_ID + "-" + CLIENT_SPAN + "-01";
            assertEquals(200, chat(router, "off", "traceparent", traceparent, "tracestate", "a=1,b=2",
                    "baggage", "user=alice").statusCode());
            CapturedRequest received = capturedChat(workers);
            assertEquals(traceparent, received.header("traceparent"));
            assertEquals("a=1,b=2", received.header("tracestate"));
            assertEquals("user=alice", received.header("baggage"));
        }
    }

    private static boolean finishedSession(Span s) {
        return s.getEventsList().stream().anyMatch(e -> e.getName().equals("session.finished"));
    }

    private static CapturedRequest capturedChat(List<String> workers) {
        List<CapturedRequest> all = new ArrayList<>();
        for (int i = 0; i < workers.size(); i++) {
            all.addAll(mock.worker(i).captured(CHAT));
        }
        assertEquals(1, all.size(), "one request reached a worker");
        return all.get(0);
    }

    private static Span only(List<Span> spans, Span.SpanKind kind) {
        List<Span> of = spans.stream().filter(s -> s.getKind() == kind).toList();
        assertEquals(1, of.size(), kind + " spans: " + spans);
        return of.get(0);
    }

    private static String attribute(Span span, String key) {
        return attribute(span.getAttributesList(), key);
    }

    private static String attribute(List<KeyValue> attributes, String key) {
        for (KeyValue kv : attributes) {
            if (kv.getKey().equals(key)) {
                var v = kv.getValue();
                return switch (v.getValueCase()) {
                    case INT_VALUE -> Long.toString(v.getIntValue());
                    case BOOL_VALUE -> Boolean.toString(v.getBoolValue());
                    case DOUBLE_VALUE -> Double.toString(v.getDoubleValue());
                    default -> v.getStringValue();
                };
            }
        }
        return null;
    }

    private static String hex(ByteString bytes) {
        return HexFormat.of().formatHex(bytes.toByteArray());
    }
}

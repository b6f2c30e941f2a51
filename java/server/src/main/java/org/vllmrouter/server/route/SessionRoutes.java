package org.vllmrouter.server.route;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.Trajectory;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.http.Json;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.trace.RequestSpan;

/**
 * {@code POST /finish_session} and {@code GET /sessions}: releasing and counting sticky sessions, and
 * {@code GET /sessions?session_id=<id>}, one tracked session's trajectory.
 */
public final class SessionRoutes {
    private static final ObjectWriter ANSWER_WRITER = new ObjectMapper().writer();

    private final WorkerRegistry workers;
    private final PolicyRegistry policies;

    SessionRoutes(WorkerRegistry workers, PolicyRegistry policies) {
        this.workers = workers;
        this.policies = policies;
    }

    /** Releases the session in every policy instance; an unknown id is not an error. */
    void finishSession(Reply reply, FullHttpRequest request, RequestPath path) {
        reply.send(finishSession(reply, path));
    }

    private FullHttpResponse finishSession(Reply reply, RequestPath path) {
        String id;
        try {
            id = path.param("session_id");
        } catch (RequestPath.InvalidPathException e) {
            return badRequest(reply, e.getMessage());
        }
        if (id == null || id.isEmpty()) {
            return badRequest(reply, "Missing required query parameter 'session_id'");
        }
        String problem = problemWith(id);
        if (problem != null) {
            return badRequest(reply, problem);
        }
        traceFinish(reply.span(), id);
        policies.finishSession(id);
        return Responses.json(reply.alloc(), HttpResponseStatus.OK, Json.object(g -> {
            g.writeStringField("status", "ok");
            g.writeStringField("session_id", id);
        }));
    }

    /** The counters, or with {@code session_id} that session's trajectory (404 when no policy tracks it). */
    void sessions(Reply reply, FullHttpRequest request, RequestPath path) {
        String id;
        try {
            id = path.param("session_id");
        } catch (RequestPath.InvalidPathException e) {
            reply.send(badRequest(reply, e.getMessage()));
            return;
        }
        if (id == null) {
            reply.json(HttpResponseStatus.OK, sessionsJson(policies, workers));
            return;
        }
        String problem = id.isEmpty() ? "Invalid session id in query parameter 'session_id': it is empty"
                : problemWith(id);
        if (problem != null) {
            reply.send(badRequest(reply, problem));
            return;
        }
        Trajectory t = policies.trajectory(id);
        if (t == null) {
            reply.jsonError(HttpResponseStatus.NOT_FOUND, "Session '" + id + "' is not tracked: never started,"
                    + " released, expired or evicted (or the policy keeps no sessions)");
            return;
        }
        reply.json(HttpResponseStatus.OK, trajectoryJson(id, t));
    }

    /**
     * The finished session's id on the request's span, and an event with its totals while they still exist, so a
     * trace backend ends the trajectory (whose turns carry the same {@code session.id}) with its summary.
     */
    private void traceFinish(RequestSpan span, String id) {
        if (span == RequestSpan.NONE) {
            return;
        }
        span.routed(null, id, null);
        Trajectory t = policies.trajectory(id);
        if (t == null) {
            span.event("session.finished", Map.of("session.id", id, "vllm_router.session.tracked", "false"));
            return;
        }
        Map<String, Object> totals = new LinkedHashMap<>();
        totals.put("session.id", id);
        totals.put("vllm_router.session.turns", (long) t.turns());
        totals.put("vllm_router.session.worker_changes", (long) t.workerChanges());
        totals.put("vllm_router.session.prompt_tokens", t.promptTokens());
        if (t.cachedTokens() >= 0) {
            totals.put("vllm_router.session.cached_tokens", t.cachedTokens());
        }
        totals.put("vllm_router.session.workers", String.join(",", t.workers().stream().map(UrlRedaction::redact)
                .toList()));
        span.event("session.finished", totals);
    }

    /** The engine's own rule for ids decides what is acceptable, exactly as for routed requests. */
    private static String problemWith(String id) {
        String problem = SessionIdExtractor.problemWith(id);
        return problem == null ? null : "Invalid session id in query parameter 'session_id': " + problem;
    }

    private static String trajectoryJson(String id, Trajectory t) {
        return Json.object(g -> {
            g.writeStringField("session_id", id);
            g.writeArrayFieldStart("workers");
            for (String url : t.workers()) {
                g.writeString(UrlRedaction.redact(url));
            }
            g.writeEndArray();
            g.writeNumberField("turns", t.turns());
            g.writeNumberField("worker_changes", t.workerChanges());
            g.writeNumberField("prompt_tokens", t.promptTokens());
            if (t.cachedTokens() < 0) {
                g.writeNullField("cached_tokens");
                g.writeNullField("cached_token_rate");
            } else {
                g.writeNumberField("cached_tokens", t.cachedTokens());
                double rate = t.cachedTokenRate();
                if (rate < 0) {
                    g.writeNullField("cached_token_rate");
                } else {
                    g.writeNumberField("cached_token_rate", Math.round(rate * 1000) / 1000.0);
                }
            }
        });
    }

    /**
     * The {@code GET /sessions} answer: the sticky-session counters summed over every policy instance, with every
     * registered worker in {@code active_by_worker} (0 when it holds no session). The in-process Python bridge
     * hands this same map to Python as a dict, so both stay alike.
     */
    public static Map<String, Object> sessionsAnswer(PolicyRegistry policies, WorkerRegistry workers) {
        SessionStats stats = policies.sessionStats();
        Map<String, Integer> byWorker = new TreeMap<>();
        for (Worker w : workers.all()) {
            byWorker.put(w.shownUrl(), 0);
        }
        stats.activeByWorker().forEach((url, n) -> byWorker.put(UrlRedaction.redact(url), n));
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("active_sessions", stats.activeSessions());
        answer.put("active_by_worker", byWorker);
        answer.put("started", stats.started());
        answer.put("released", stats.released());
        answer.put("expired", stats.expired());
        answer.put("evicted", stats.evicted());
        answer.put("rebound", stats.rebound());
        answer.put("session_store", policies.sessionStore().description());
        answer.put("degraded", policies.sessionStore().degraded());
        return answer;
    }

    static String sessionsJson(PolicyRegistry policies, WorkerRegistry workers) {
        try {
            return ANSWER_WRITER.writeValueAsString(sessionsAnswer(policies, workers));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a map of numbers, strings and booleans is always writable", e);
        }
    }

    private static FullHttpResponse badRequest(Reply reply, String message) {
        return Responses.jsonError(reply.alloc(), HttpResponseStatus.BAD_REQUEST, message);
    }
}

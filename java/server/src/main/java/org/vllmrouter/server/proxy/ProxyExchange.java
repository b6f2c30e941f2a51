package org.vllmrouter.server.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.trace.RequestSpan;
import org.vllmrouter.server.trace.WorkerCallSpan;

/**
 * One proxied request: picks a worker per attempt, forwards the body bytes untouched over a pooled connection of
 * the client's event loop, and relays the answer part by part as it arrives. Retryable statuses and transport
 * failures are retried with backoff until the response head has been relayed; after that the exchange is
 * committed. A client that leaves cancels the worker request by closing its connection (vLLM aborts the
 * generation). Every worker call goes through {@link WorkerCalls}; the worker's load is released exactly once, and
 * the client's request, the admission token and the request metrics are settled once by the exchange's
 * {@link ExchangeEnd}. Everything here runs on one event loop, so plain fields suffice.
 */
final class ProxyExchange extends RequestDeadlines.Timed implements BackendHandler.Listener, FrontendHandler.Exchange {
    private static final int MAX_STALE_CONNECTIONS = 3;

    private final Proxy proxy;
    private final Reply reply;
    private final FrontendHandler front;
    private final EventLoop loop;
    private final ProxiedRequest request;
    private final ExchangeEnd end;
    private final RequestSpan span;

    private int attempt;
    private Worker worker;
    private BackendHandler backend;
    private boolean draining;
    private boolean relaying;
    private boolean backendKeepAlive;
    private int relayedStatus;
    /**
     * Workers this request failed to reach, so a retry (and a sticky session bound to a dead worker) moves elsewhere;
     * a set of its own only from the first failure on.
     */
    private Set<Worker> unreachable = Set.of();
    /** The current connection served an earlier exchange, so the worker may have closed it while it sat idle. */
    private boolean reusedConnection;
    private int staleConnections;
    private RequestDeadlines deadlines;
    /** Reads the relayed answer's token usage; only for a request of a session whose policy keeps trajectories. */
    private UsageScanner usage;
    private Worker relayedFrom;
    /** The client span of the current attempt's worker call. */
    private WorkerCallSpan call = WorkerCallSpan.NONE;
    private long relayedBytes;
    /** The policy placed this attempt and has not yet heard that its worker began to answer. */
    private boolean answerPending;

    /** Takes over {@code reply}, which holds the client's request, and {@code request}. */
    ProxyExchange(Proxy proxy, Reply reply, ProxiedRequest request) {
        this.proxy = proxy;
        this.reply = reply;
        this.front = reply.front();
        this.loop = reply.loop();
        this.request = request;
        this.end = new ExchangeEnd(reply, request.route, request.admission, proxy.metrics);
        this.span = reply.span();
    }

    void start() {
        front.setExchange(this);
        if (!front.isActive()) {
            onClientGone();
            return;
        }
        deadlines = proxy.deadlines(loop);
        deadlines.add(this);
        if (request.routing != null) {
            span.routed(request.routing.model(), request.routing.sessionId(), request.policy.name());
        }
        attempt();
    }

    private void attempt() {
        if (end.ended()) {
            return;
        }
        attempt++;
        Worker chosen;
        try {
            chosen = choose();
        } catch (RuntimeException e) {
            respondLocally(HttpResponseStatus.INTERNAL_SERVER_ERROR, "Worker selection failed: " + e.getMessage());
            return;
        }
        if (chosen == null) {
            respondLocally(HttpResponseStatus.SERVICE_UNAVAILABLE, request.noWorkerMessage);
            return;
        }
        worker = chosen;
        span.worker(chosen.shownUrl(), attempt);
        proxy.calls.started(chosen);
        if (chosen.pause().isPaused()) {
            // Held, not failed or moved: the session stays on its worker, and the request timeout still bounds it.
            chosen.pause().whenOpen(() -> loop.execute(() -> {
                if (!end.ended() && worker == chosen) {
                    connect(chosen);
                }
            }));
        } else {
            connect(chosen);
        }
    }

    /** A pooled connection to {@code chosen} when one is idle (used at once), else a new one. */
    private void connect(Worker chosen) {
        BackendHandler idle = proxy.pools.takeIdle(loop, chosen.baseUrl());
        if (idle != null) {
            onAcquired(idle, chosen);
        } else {
            proxy.pools.connect(loop, chosen.baseUrl()).addListener((Future<BackendHandler> f) -> onConnected(f, chosen));
        }
    }

    /** The worker of this attempt: the route's own, or the policy's choice among the reachable candidates. */
    private Worker choose() {
        if (request.routing == null) {
            return request.worker;
        }
        List<Worker> candidates = proxy.workers.candidates(request.routing.model(), request.role);
        if (candidates.isEmpty()) {
            return null;
        }
        if (!unreachable.isEmpty()) {
            List<Worker> reachable = candidates.stream().filter(w -> !unreachable.contains(w)).toList();
            candidates = reachable.isEmpty() ? candidates : reachable;
        }
        Worker chosen = request.policy.select(candidates, request.routing);
        if (chosen != null) {
            proxy.calls.selected(request.policy, chosen);
            answerPending = true;
        }
        return chosen;
    }

    private void onConnected(Future<BackendHandler> connected, Worker chosen) {
        if (connected.isSuccess()) {
            onAcquired(connected.getNow(), chosen);
        } else if (!end.ended()) {
            attemptFailed(connected.cause());
        }
    }

    private void onAcquired(BackendHandler connection, Worker chosen) {
        if (end.ended() || worker != chosen) {
            WorkerPools.release(connection);
            return;
        }
        backend = connection;
        reusedConnection = connection.used;
        connection.attach(this);
        // The exchange's own header set goes out as is (no copy per attempt); the encoder is done with it before a
        // retry changes the per-worker entries.
        HttpHeaders headers = request.headers;
        FullHttpRequest client = reply.request();
        ByteBuf body = client.content();
        headers.set(HttpHeaderNames.HOST, WorkerAddress.of(chosen.baseUrl()).hostHeader());
        // Nearly always the client's own length, kept by Hop: set only when it does not fit the body (a chunked
        // request, a body the route changed), since setting it makes a string and a header entry per request.
        if (headers.getInt(HttpHeaderNames.CONTENT_LENGTH, -1) != body.readableBytes()) {
            headers.setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
        }
        if (chosen.dpRank() >= 0) {
            headers.set(Hop.DP_RANK_HEADER, chosen.dpRank());
        } else {
            headers.remove(Hop.DP_RANK_HEADER);
        }
        call.end(null);
        call = span.workerCall(request.stage, chosen.shownUrl(), client.method().name(), request.target, headers);
        FullHttpRequest toWorker = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, client.method(),
                request.target, body.retainedDuplicate(), headers, EmptyHttpHeaders.INSTANCE);
        // The void promise: a failed write reaches the exchange as the connection's failure, through
        // BackendHandler.exceptionCaught, and a promise per request (with the encoder's per-part promises behind
        // it) would be allocation on every request for nothing (docs/perf/memory.md).
        connection.channel().writeAndFlush(toWorker, connection.channel().voidPromise());
    }

    /**
     * The worker connection failed before any answer. A pooled connection the worker closed while idle is replaced
     * on the spot (the request never reached the worker, so neither the attempt nor the worker's health counts it);
     * anything else is a failed attempt.
     */
    private void connectionLost(Throwable cause) {
        Worker chosen = worker;
        if (reusedConnection && chosen != null && staleConnections < MAX_STALE_CONNECTIONS) {
            staleConnections++;
            connect(chosen);
        } else {
            attemptFailed(cause);
        }
    }

    @Override
    public void onBackendPart(HttpObject part) {
        if (end.ended()) {
            ReferenceCountUtil.release(part);
            return;
        }
        if (part instanceof HttpResponse head) {
            onHead(head);
        }
        if (part instanceof HttpContent content) {
            if (relaying) {
                if (content.content().isReadable()) {
                    answerStarted(worker);
                }
                relayedBytes += content.content().readableBytes();
                if (usage != null) {
                    usage.scan(content.content());
                }
                if (content instanceof LastHttpContent) {
                    // Settle the worker's load, the policy and the admission token before the client can see the
                    // end of the answer: a client that asks again at once must find them already up to date.
                    onBodyDone();
                    finish(relayedStatus, WorkerCalls.success(relayedStatus));
                    front.sendPart(content);
                } else {
                    front.sendPart(content);
                    if (!front.isWritable()) {
                        backend.channel().config().setAutoRead(false);
                    }
                }
            } else {
                boolean last = content instanceof LastHttpContent;
                content.release();
                if (last && draining) {
                    draining = false;
                    onBodyDone();
                    retryLater();
                }
            }
        } else if (!(part instanceof HttpResponse)) {
            ReferenceCountUtil.release(part);
        }
    }

    private void onHead(HttpResponse head) {
        int status = head.status().code();
        if (status == 100) {
            return;
        }
        backendKeepAlive = HttpUtil.isKeepAlive(head);
        call.status(status);
        if (worker != null) {
            proxy.calls.answered(worker, status);
        }
        if (RetryPolicy.retryableStatus(status) && attempt < request.retry.maxAttempts()) {
            draining = true;
            return;
        }
        if (RetryPolicy.retryableStatus(status) && attempt > 1) {
            proxy.metrics.retriesExhausted(request.route);
        }
        relaying = true;
        relayedStatus = status;
        if (keepsTrajectory()) {
            usage = new UsageScanner();
            relayedFrom = worker;
        }
        end.releaseAdmission();
        front.sendHead(relayedHead(head));
    }

    @Override
    public void onBackendReadComplete() {
        if (relaying && !end.ended()) {
            front.flush();
        }
    }

    @Override
    public void onBackendClosed(Throwable cause) {
        backend = null;
        if (end.ended()) {
            return;
        }
        if (relaying) {
            // The head is out, so the status cannot change any more: cut the client off so it sees a broken body.
            releaseWorker(false);
            front.abort();
            finish(relayedStatus, false);
        } else if (draining) {
            draining = false;
            releaseWorker(false);
            retryLater();
        } else {
            connectionLost(cause);
        }
    }

    @Override
    public void onClientGone() {
        if (end.ended()) {
            return;
        }
        // Closing the worker connection is how vLLM learns to abort the generation.
        dropBackend();
        finish(499, false);
    }

    @Override
    public void onClientWritable() {
        if (backend != null) {
            backend.channel().config().setAutoRead(true);
        }
    }

    @Override
    void deadlinePassed() {
        if (end.ended()) {
            return;
        }
        dropBackend();
        if (relaying) {
            front.abort();
            finish(relayedStatus, false);
        } else {
            respondLocally(HttpResponseStatus.GATEWAY_TIMEOUT,
                    "Request timed out after " + TimeUnit.NANOSECONDS.toSeconds(proxy.requestTimeoutNanos) + "s");
        }
    }

    /**
     * A transport failure (no head received): retry if attempts remain, else answer 500 as upstream does, or 502 with
     * the reason when TLS with the worker failed (something answers there, but not a worker the router can trust), so
     * the client sees a misconfiguration rather than a crash.
     */
    private void attemptFailed(Throwable cause) {
        endCall(cause);
        if (worker != null) {
            proxy.calls.unanswered(worker);
            if (unreachable.isEmpty()) {
                unreachable = new HashSet<>(2);
            }
            unreachable.add(worker);
        }
        releaseWorker(false);
        if (attempt < request.retry.maxAttempts()) {
            retryLater();
        } else {
            if (attempt > 1) {
                proxy.metrics.retriesExhausted(request.route);
            }
            if (cause instanceof WorkerTls.Failure) {
                respondLocally(HttpResponseStatus.BAD_GATEWAY, cause.getMessage());
            } else {
                respondLocally(HttpResponseStatus.INTERNAL_SERVER_ERROR, "Request failed: " + describe(cause));
            }
        }
    }

    private void retryLater() {
        releaseWorker(false);
        long delay = request.retry.backoffNanos(attempt);
        proxy.metrics.retry(request.route, attempt, delay / 1e9);
        loop.schedule(this::attempt, delay, TimeUnit.NANOSECONDS);
    }

    /** The worker finished sending its response: its connection goes back to the pool if it can be reused. */
    private void onBodyDone() {
        BackendHandler connection = backend;
        backend = null;
        if (connection != null) {
            connection.detach();
            connection.channel().config().setAutoRead(true);
            if (backendKeepAlive) {
                WorkerPools.release(connection);
            } else {
                connection.channel().close();
            }
        }
        releaseWorker(relaying && WorkerCalls.success(relayedStatus));
    }

    private void dropBackend() {
        BackendHandler connection = backend;
        backend = null;
        draining = false;
        if (connection != null) {
            connection.detach();
            connection.channel().close();
        }
    }

    private void releaseWorker(boolean success) {
        endCall(null);
        Worker w = worker;
        if (w != null) {
            worker = null;
            answerStarted(w);
            proxy.calls.ended(w, request.policy, success);
        }
    }

    /** Tells the policy, once per attempt it placed, that {@code w} began to answer (or the call ended first). */
    private void answerStarted(Worker w) {
        if (answerPending) {
            answerPending = false;
            request.policy.answerStarted(w, request.routing);
        }
    }

    private void endCall(Throwable failure) {
        WorkerCallSpan ended = call;
        call = WorkerCallSpan.NONE;
        ended.end(failure);
    }

    /** Settles the exchange before the answer is written, for the same reason as the relayed last part. */
    private void respondLocally(HttpResponseStatus status, String message) {
        dropBackend();
        finish(status.code(), false);
        reply.send(Responses.text(reply.alloc(), status, message));
    }

    private void finish(int status, boolean success) {
        if (end.ended()) {
            return;
        }
        if (deadlines != null) {
            deadlines.remove(this);
        }
        releaseWorker(success);
        FullHttpRequest client = reply.request();
        span.bytes(client == null ? 0 : client.content().readableBytes(), relayedBytes);
        if (keepsTrajectory()) {
            turnEnded();
        }
        end.end(status, success);
        if (request.completion != null) {
            request.completion.completed(status, success);
        }
    }

    /** A turn of the request's session ended: its trajectory, and its worker's cached-token totals, hear of it. */
    private void turnEnded() {
        long prompt = usage == null ? -1 : usage.promptTokens();
        long cached = usage == null ? -1 : usage.cachedTokens();
        request.policy.turnEnded(request.routing, prompt, cached);
        if (prompt >= 0 && cached >= 0 && relayedFrom != null) {
            proxy.metrics.tokensReported(relayedFrom.shownUrl(), prompt, cached);
        }
    }

    private boolean keepsTrajectory() {
        return request.routing != null && request.routing.sessionId() != null && request.policy.keepsSessions();
    }

    /**
     * The worker's response head made the client's: HTTP/1.1, minus hop-by-hop headers, re-framed chunked when the
     * worker gave no length. It is changed in place rather than copied (a header set fewer per response): the
     * exchange owns the decoded head, and the decoder took its framing from it before handing it over.
     */
    private static HttpResponse relayedHead(HttpResponse head) {
        head.setProtocolVersion(HttpVersion.HTTP_1_1);
        HttpHeaders h = head.headers();
        for (CharSequence name : Hop.RESPONSE_HOP_HEADERS) {
            h.remove(name);
        }
        int code = head.status().code();
        boolean bodiless = code == 204 || code == 304 || code < 200;
        if (!bodiless && !h.contains(HttpHeaderNames.CONTENT_LENGTH)) {
            h.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        }
        return head;
    }

    private static String describe(Throwable cause) {
        if (cause == null) {
            return "connection closed";
        }
        String message = cause.getMessage();
        return message == null ? cause.getClass().getSimpleName() : message;
    }
}

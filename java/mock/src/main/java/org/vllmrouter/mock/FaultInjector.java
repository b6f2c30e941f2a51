package org.vllmrouter.mock;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Applies the fault knobs before a request reaches the API: API-key check (every route but
 * {@code /health} and the capture route), then, for inference routes only, crash, hang,
 * forced status, fail-first-N and random failures. A request that passes is handed on.
 */
@ChannelHandler.Sharable
final class FaultInjector extends ChannelInboundHandlerAdapter {

    private final MockWorker worker;

    FaultInjector(MockWorker worker) {
        this.worker = worker;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest req)) {
            ctx.fireChannelRead(msg);
            return;
        }
        String path = Routes.pathOf(req.uri());
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        Knobs k = worker.knobs();
        if (!path.equals("/health") && !path.equals(Routes.CAPTURED) && !authorized(req, k.requireApiKey())) {
            req.release();
            Replies.error(ctx, keepAlive, 401, "Unauthorized", worker.id());
            return;
        }
        if (!(req.method().equals(HttpMethod.POST) && Routes.INFERENCE.contains(path))) {
            ctx.fireChannelRead(msg);
            return;
        }
        long ordinal = worker.countRequest();
        if (k.crashOnRequest()) {
            req.release();
            worker.crashNow();
            return;
        }
        if (k.hang()) {
            req.release();
            return;
        }
        int status = k.statusCode();
        if (status == 200 && ordinal <= k.failFirstN()) {
            status = 500;
        }
        if (status == 200 && k.randomFailRate() > 0 && ThreadLocalRandom.current().nextDouble() < k.randomFailRate()) {
            status = 500;
        }
        if (status != 200) {
            req.release();
            Replies.error(ctx, keepAlive, status, "mock fault: status " + status, worker.id());
            return;
        }
        ctx.fireChannelRead(msg);
    }

    /** Constant-time comparison, as a real server would do it. */
    private static boolean authorized(FullHttpRequest req, String key) {
        if (key == null) {
            return true;
        }
        String auth = req.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (auth == null || !auth.startsWith("Bearer ")) {
            return false;
        }
        return MessageDigest.isEqual(auth.substring(7).getBytes(StandardCharsets.UTF_8),
                key.getBytes(StandardCharsets.UTF_8));
    }
}

package org.vllmrouter.server;

import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.group.ChannelGroup;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.cors.CorsConfig;
import io.netty.handler.codec.http.cors.CorsConfigBuilder;
import io.netty.handler.codec.http.cors.CorsHandler;
import io.netty.handler.timeout.IdleStateHandler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.settings.ServerSettings;
import org.vllmrouter.server.http.BodyAggregator;
import org.vllmrouter.server.http.ClientReadDeadline;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.HttpCodecs;
import org.vllmrouter.server.http.InFlightRequests;
import org.vllmrouter.server.http.RequestGuard;
import org.vllmrouter.server.http.RequestIdHandler;
import org.vllmrouter.server.metrics.RouterMetrics;
import org.vllmrouter.server.trace.RequestTracer;
import org.vllmrouter.server.route.RouteTable;

/**
 * The pipeline of a connection to the router port: the client's read deadline and idle timeout, the HTTP codec,
 * request ids, the request guard, CORS, the body aggregator with the body limit, and the frontend that hands each
 * request to the route table. Every accepted connection joins {@code connections}, so a close can end them all.
 */
final class RouterChannelInitializer extends ChannelInitializer<Channel> {
    /** Connections idle this long between requests (or stalled mid-request) are closed. */
    private static final int CLIENT_IDLE_SECS = 120;
    private static final int MAX_INITIAL_LINE = 64 * 1024;
    private static final int MAX_HEADER_SIZE = 64 * 1024;

    private final ServerSettings config;
    private final RouteTable routes;
    private final InFlightRequests inFlight;
    private final RouterMetrics metrics;
    private final Duration clientReadTimeout;
    private final ChannelGroup connections;
    private final CorsConfig cors;
    private final int maxBody;
    private final RequestTracer tracer;

    RouterChannelInitializer(ServerSettings config, RouteTable routes, InFlightRequests inFlight, RouterMetrics metrics,
                             Duration clientReadTimeout, ChannelGroup connections, RequestTracer tracer) {
        this.config = config;
        this.routes = routes;
        this.inFlight = inFlight;
        this.metrics = metrics;
        this.clientReadTimeout = clientReadTimeout;
        this.connections = connections;
        this.cors = corsConfig(config.corsAllowedOrigins());
        this.maxBody = (int) Math.min(Integer.MAX_VALUE, config.maxPayloadSize());
        this.tracer = tracer;
    }

    @Override
    protected void initChannel(Channel ch) {
        connections.add(ch);
        ChannelPipeline p = ch.pipeline();
        ClientReadDeadline readDeadline = new ClientReadDeadline(clientReadTimeout);
        p.addLast(readDeadline);
        p.addLast(new IdleStateHandler(CLIENT_IDLE_SECS, 0, 0, TimeUnit.SECONDS));
        p.addLast(HttpCodecs.server(MAX_INITIAL_LINE, MAX_HEADER_SIZE, 8192));
        p.addLast(new RequestIdHandler(config.requestIdHeaders()));
        p.addLast(new RequestGuard());
        p.addLast(new CorsHandler(cors));
        p.addLast(new BodyAggregator(maxBody));
        p.addLast(new FrontendHandler(routes, inFlight, metrics, readDeadline::requestRead, tracer));
    }

    private static CorsConfig corsConfig(List<String> origins) {
        if (origins == null || origins.isEmpty()) {
            return CorsConfigBuilder.forAnyOrigin()
                    .allowedRequestMethods(HttpMethod.GET, HttpMethod.POST, HttpMethod.PUT, HttpMethod.DELETE,
                            HttpMethod.PATCH, HttpMethod.HEAD, HttpMethod.OPTIONS)
                    .allowedRequestHeaders("*")
                    .exposeHeaders("*")
                    .maxAge(3600)
                    .build();
        }
        return CorsConfigBuilder.forOrigins(origins.toArray(String[]::new))
                .allowedRequestMethods(HttpMethod.GET, HttpMethod.POST, HttpMethod.OPTIONS)
                .allowedRequestHeaders("Content-Type", "Authorization")
                .exposeHeaders(RequestIdHandler.X_REQUEST_ID.toString())
                .maxAge(3600)
                .build();
    }
}

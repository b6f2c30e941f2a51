package org.vllmrouter.server.proxy;

import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.metrics.RouterMetrics;

/**
 * What an exchange gives back exactly once, however it ends: the client's request (through its {@link Reply}), the
 * admission token, and the request's line in the metrics. The proxy's exchanges and the PD exchanges end through
 * one, on the client's event loop.
 */
public final class ExchangeEnd {
    private final Reply reply;
    private final String route;
    private final Runnable admission;
    private final RouterMetrics metrics;
    private final long startNanos = System.nanoTime();
    private boolean admissionReleased;
    private boolean ended;

    /** {@code route}: the route label of the request metrics; {@code admission} gives the admission token back. */
    public ExchangeEnd(Reply reply, String route, Runnable admission, RouterMetrics metrics) {
        this.reply = reply;
        this.route = route;
        this.admission = admission;
        this.metrics = metrics;
    }

    public boolean ended() {
        return ended;
    }

    /** When the exchange started, on {@link System#nanoTime()}'s clock. */
    public long startNanos() {
        return startNanos;
    }

    /** Gives the admission token back, once; the proxy does so as soon as the response head is out. */
    public void releaseAdmission() {
        if (!admissionReleased) {
            admissionReleased = true;
            admission.run();
        }
    }

    /** Ends the exchange with {@code status}, counted in the request metrics; a no-op once it has ended. */
    public void end(int status, boolean success) {
        if (giveBack()) {
            metrics.requestEnded(route, status, success, (System.nanoTime() - startNanos) / 1e9);
        }
    }

    /**
     * Ends the exchange without a line in the request metrics: a PD request that failed before its decode stage is
     * counted by the HTTP metrics only. A no-op once it has ended.
     */
    public void endUncounted() {
        giveBack();
    }

    /**
     * Ends this exchange by handing the client's request and the admission token on to the next one (PD's decode
     * stage, relayed by the proxy), which gives them back; returns the token's release.
     */
    public Runnable handOff() {
        ended = true;
        return admissionReleased ? () -> { } : admission;
    }

    private boolean giveBack() {
        if (ended) {
            return false;
        }
        ended = true;
        releaseAdmission();
        reply.discard();
        return true;
    }
}

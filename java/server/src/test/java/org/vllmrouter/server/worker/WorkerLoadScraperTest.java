package org.vllmrouter.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.sun.net.httpserver.HttpServer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.policy.LiveLoad;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.server.proxy.WorkerTls;

/** The scraper against a real HTTP worker whose /metrics answers, then goes quiet, then goes away. */
class WorkerLoadScraperTest {
    private static final Duration INTERVAL = Duration.ofMillis(50);

    static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("never happened: " + what);
            }
            Thread.sleep(5);
        }
    }

    @Test
    void aSampleIsGivenWhileFreshAndNoneWhenStaleOrFailingWhichIsLoggedOnce() throws Exception {
        AtomicReference<String> body = new AtomicReference<>(
                "vllm:num_requests_waiting{engine=\"0\"} 2\nvllm:num_requests_running{engine=\"0\"} 8\n");
        HttpServer worker = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        worker.createContext("/metrics", exchange -> {
            byte[] bytes = body.get().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        worker.start();
        AtomicInteger warnings = new AtomicInteger();
        Handler counter = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel() == Level.WARNING) {
                    warnings.incrementAndGet();
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger log = Logger.getLogger(WorkerLoadScraper.class.getName());
        log.addHandler(counter);
        EventLoopGroup group = Transport.resolve(StartEnvironment.current().transport()).newGroup(1, "scraper-test");
        String url = "http://127.0.0.1:" + worker.getAddress().getPort();
        WorkerRegistry workers = new WorkerRegistry();
        workers.add(Worker.builder(url).build());
        AtomicLong clock = new AtomicLong(System.nanoTime());
        ControlClient client = new ControlClient(WorkerTls.trusting(null),
                new DefaultChannelGroup(GlobalEventExecutor.INSTANCE));
        try {
            try (WorkerLoadScraper scraper = new WorkerLoadScraper(workers, client, group.next(), INTERVAL,
                    clock::get)) {
                scraper.start();
                eventually("a sample", () -> scraper.of(url) != null);
                assertEquals(new LiveLoad.Sample(2, 8, Double.NaN), scraper.of(url));
                assertNull(scraper.of("http://other:8000"));
                scraper.close();
                Thread.sleep(INTERVAL.toMillis() * 4);
                assertEquals(new LiveLoad.Sample(2, 8, Double.NaN), scraper.of(url));
                clock.addAndGet(INTERVAL.toNanos() * WorkerLoadScraper.STALE_AFTER_ROUNDS + 1);
                assertNull(scraper.of(url), "a sample older than the stale bound is not given out");
            }
            try (WorkerLoadScraper scraper = new WorkerLoadScraper(workers, client, group.next(), INTERVAL,
                    System::nanoTime)) {
                scraper.start();
                eventually("a sample", () -> scraper.of(url) != null);
                worker.stop(0);
                eventually("a failure is logged", () -> warnings.get() > 0);
                // A scrape sent just before the stop may still be answered after the first failure.
                eventually("no sample", () -> scraper.of(url) == null);
                Thread.sleep(INTERVAL.toMillis() * 4);
                int logged = warnings.get();
                Thread.sleep(INTERVAL.toMillis() * 6);
                assertEquals(logged, warnings.get(), "failing scrapes of a worker that stays down log nothing more");
                assertNull(scraper.of(url));
            }
        } finally {
            log.removeHandler(counter);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void aWorkerWithoutVllmSeriesHasNoSample() throws Exception {
        HttpServer worker = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        AtomicInteger scrapes = new AtomicInteger();
        worker.createContext("/metrics", exchange -> {
            scrapes.incrementAndGet();
            byte[] bytes = "process_cpu_seconds_total 1\n".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        worker.start();
        EventLoopGroup group = Transport.resolve(StartEnvironment.current().transport()).newGroup(1, "scraper-test");
        String url = "http://127.0.0.1:" + worker.getAddress().getPort();
        WorkerRegistry workers = new WorkerRegistry();
        workers.add(Worker.builder(url).build());
        try (WorkerLoadScraper scraper = new WorkerLoadScraper(workers, new ControlClient(WorkerTls.trusting(null),
                new DefaultChannelGroup(GlobalEventExecutor.INSTANCE)), group.next(), INTERVAL, System::nanoTime)) {
            scraper.start();
            eventually("two scrapes", () -> scrapes.get() >= 2);
            assertNull(scraper.of(url));
        } finally {
            worker.stop(0);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}

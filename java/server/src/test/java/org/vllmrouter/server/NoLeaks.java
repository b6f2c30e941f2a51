package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when Netty reports a leaked buffer. Installs a leak-detector factory that records every
 * "LEAK:" report (the surefire argLine sets PARANOID, so every buffer is tracked), and after the class forces
 * collection so leaks of this class are reported before it is declared clean.
 */
final class NoLeaks implements AfterAllCallback {
    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    static {
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                      long maxActive) {
                return new ResourceLeakDetector<>(resource, samplingInterval) {
                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        LEAKS.add("LEAK: " + resourceType + records);
                        super.reportTracedLeak(resourceType, records);
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        LEAKS.add("LEAK: " + resourceType);
                        super.reportUntracedLeak(resourceType);
                    }
                };
            }
        });
    }

    @Override
    public void afterAll(ExtensionContext context) throws InterruptedException {
        for (int round = 0; round < 3; round++) {
            System.gc();
            Thread.sleep(50);
            for (int i = 0; i < 64; i++) {
                ByteBuf a = PooledByteBufAllocator.DEFAULT.directBuffer(16);
                a.release();
                ByteBuf b = UnpooledByteBufAllocator.DEFAULT.heapBuffer(16);
                b.release();
            }
        }
        if (!LEAKS.isEmpty()) {
            List<String> found = List.copyOf(LEAKS);
            LEAKS.clear();
            fail(found.size() + " buffer leak(s) reported:\n" + String.join("\n", found));
        }
    }
}

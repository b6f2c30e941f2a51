package org.vllmrouter.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.vllmrouter.core.settings.HealthSettings;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.discovery.WorkerSink;

class DiscoveredWorkerSinkTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "http://10.0.0.7:0     | Invalid worker URL http://10.0.0.7:0: Port must be between 1 and 65535",
            "http://:8000          | Invalid worker URL http://:8000: URL must have a valid host",
            "tcp://10.0.0.7:8000   | Invalid worker URL tcp://10.0.0.7:8000: URL must start with http://, https://, or grpc://",
    })
    void aUrlNoWorkerCanAnswerOnFailsTheAddAtOnce(String url, String message) {
        WorkerRegistry workers = new WorkerRegistry();
        // A refused URL never reaches the factory, the health client or the event loop.
        DiscoveredWorkerSink sink = new DiscoveredWorkerSink(
                new HealthSettings(5, 60, "/health", 600, 1), workers, null, null, null);
        CompletableFuture<WorkerSink.Outcome> added = sink.add(url, WorkerRole.REGULAR, null);
        assertTrue(added.isDone());
        ExecutionException e = assertThrows(ExecutionException.class, added::get);
        assertInstanceOf(IllegalArgumentException.class, e.getCause());
        assertEquals(message, e.getCause().getMessage());
        assertTrue(workers.all().isEmpty());
    }
}

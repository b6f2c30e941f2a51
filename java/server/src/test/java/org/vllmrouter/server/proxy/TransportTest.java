package org.vllmrouter.server.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.channel.EventLoopGroup;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** How {@code VLLM_ROUTER_TRANSPORT} is read, and which transport a group's event loops run. */
class TransportTest {
    static Stream<Transport> runnable() {
        return Arrays.stream(Transport.values()).filter(t -> t.unavailability().isEmpty());
    }

    @Test
    void autoTakesTheFirstOfIoUringEpollAndNioThatRunsHere() {
        Transport expected = runnable().findFirst().orElseThrow();
        assertEquals(expected, Transport.resolve(null));
        assertEquals(expected, Transport.resolve(""));
        assertEquals(expected, Transport.resolve("auto"));
        assertEquals(expected, Transport.resolve(" AUTO "));
        Function<Transport, Optional<String>> everything = t -> Optional.empty();
        assertEquals(Transport.IO_URING, Transport.resolve("auto", everything));
        Function<Transport, Optional<String>> noIoUring =
                t -> t == Transport.IO_URING ? Optional.of("io_uring_setup: Operation not permitted") : Optional.empty();
        assertEquals(Transport.EPOLL, Transport.resolve("auto", noIoUring));
        assertEquals(Transport.EPOLL, Transport.resolve("epoll", everything));
        assertEquals(Transport.NIO, Transport.resolve("nio"), "the JDK's own runs everywhere");
    }

    @Test
    void aNamedTransportIsTakenWhateverItsCase() {
        runnable().forEach(t -> assertEquals(t, Transport.resolve(" " + t.label().toUpperCase() + " ")));
    }

    @Test
    void anUnknownNameIsRefusedWithTheAcceptedOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Transport.resolve("uring"));
        assertEquals("VLLM_ROUTER_TRANSPORT must be one of auto, io_uring, epoll, nio; got 'uring'", e.getMessage());
    }

    @Test
    void aNamedTransportTheMachineCannotRunIsRefusedWithTheReason() {
        Function<Transport, Optional<String>> noIoUring =
                t -> t == Transport.IO_URING ? Optional.of("io_uring_setup: Operation not permitted") : Optional.empty();
        assertEquals(Transport.EPOLL, Transport.resolve("epoll", noIoUring));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Transport.resolve("io_uring", noIoUring));
        assertEquals("VLLM_ROUTER_TRANSPORT=io_uring: this machine cannot run that transport "
                + "(io_uring_setup: Operation not permitted)", e.getMessage());
        Function<Transport, Optional<String>> onlyNio =
                t -> t == Transport.NIO ? Optional.empty() : Optional.of("not Linux");
        assertEquals(Transport.NIO, Transport.resolve(null, onlyNio));
        assertThrows(IllegalArgumentException.class, () -> Transport.resolve("epoll", onlyNio));
    }

    @Test
    void theTransportOfAGroupIsReadFromItsEventLoops() {
        runnable().forEach(t -> {
            EventLoopGroup group = t.newGroup(1, "transport-test");
            try {
                assertEquals(t, Transport.of(group));
                assertEquals(t, Transport.of(group.next()));
            } finally {
                group.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
            }
        });
    }
}

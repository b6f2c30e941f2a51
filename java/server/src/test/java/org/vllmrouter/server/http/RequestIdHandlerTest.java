package org.vllmrouter.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RequestIdHandlerTest {

    @Test
    void generatedIdsCarryTheRoutesPrefixAnd24CharactersOfTheAlphabet() {
        assertTrue(RequestIdHandler.generate("/v1/chat/completions").toString().matches("chatcmpl-[A-Za-z0-9]{24}"));
        assertTrue(RequestIdHandler.generate("/v1/completions").toString().matches("cmpl-[A-Za-z0-9]{24}"));
        assertTrue(RequestIdHandler.generate("/generate").toString().matches("gnt-[A-Za-z0-9]{24}"));
        assertTrue(RequestIdHandler.generate("/v1/models").toString().matches("req-[A-Za-z0-9]{24}"));
    }

    @Test
    void generatedIdsDifferAndUseEveryCharacterOfTheAlphabet() {
        Set<String> ids = new HashSet<>();
        Set<Character> used = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            String id = RequestIdHandler.generate("/v1/models").toString();
            ids.add(id);
            for (char c : id.substring(4).toCharArray()) {
                used.add(c);
            }
        }
        assertEquals(10_000, ids.size());
        assertEquals(62, used.size());
    }

    /** Pipelined requests get their own ids back in order: the client's where it sent one, else a generated one. */
    @Test
    void responsesCarryTheirRequestsIdsInOrder() {
        EmbeddedChannel channel = new EmbeddedChannel(new RequestIdHandler(List.of()));
        DefaultFullHttpRequest given = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/completions");
        given.headers().set("x-correlation-id", "client-chosen");
        channel.writeInbound(given);
        channel.writeInbound(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions"));
        channel.writeOutbound(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK));
        channel.writeOutbound(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK));
        FullHttpResponse first = channel.readOutbound();
        FullHttpResponse second = channel.readOutbound();
        assertEquals("client-chosen", first.headers().get(RequestIdHandler.X_REQUEST_ID));
        assertTrue(second.headers().get(RequestIdHandler.X_REQUEST_ID).matches("chatcmpl-[A-Za-z0-9]{24}"));
        first.release();
        second.release();
        channel.finishAndReleaseAll();
    }
}

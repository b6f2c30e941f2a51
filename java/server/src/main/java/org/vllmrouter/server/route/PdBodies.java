package org.vllmrouter.server.route;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;
import org.vllmrouter.server.http.AggregatedBody;
import org.vllmrouter.server.http.Json;

/**
 * The bodies of PD stages. The two-stage prefill body is rebuilt from the client's JSON; everything else the
 * workers get is the client's own bytes with new members spliced in at the front of the object.
 */
final class PdBodies {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private PdBodies() {}

    /**
     * {@code bootstrap_host/port/room} for one request, or, for a batch of n ({@code text} a list, or
     * {@code input_ids} a list of lists), n-element lists of them with a fresh room per element.
     */
    static String bootstrapFields(String host, Integer port, int batch) {
        String quotedHost = quote(host);
        String portText = port == null ? "null" : port.toString();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        if (batch < 0) {
            return "\"bootstrap_host\":" + quotedHost + ",\"bootstrap_port\":" + portText
                    + ",\"bootstrap_room\":" + random.nextLong(0, Long.MAX_VALUE);
        }
        StringBuilder hosts = new StringBuilder("[");
        StringBuilder ports = new StringBuilder("[");
        StringBuilder rooms = new StringBuilder("[");
        for (int i = 0; i < batch; i++) {
            String sep = i == 0 ? "" : ",";
            hosts.append(sep).append(quotedHost);
            ports.append(sep).append(portText);
            rooms.append(sep).append(random.nextLong(0, Long.MAX_VALUE));
        }
        return "\"bootstrap_host\":" + hosts + "],\"bootstrap_port\":" + ports + "],\"bootstrap_room\":" + rooms + "]";
    }

    /** The batch size of an SGLang generate body, or -1 for a single request. */
    static int batchSize(ByteBuf body) {
        try (JsonParser p = AggregatedBody.source(body).open(Json.FACTORY)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return -1;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (value == JsonToken.START_ARRAY && (name.equals("text") || name.equals("input_ids"))) {
                    int elements = 0;
                    boolean nested = false;
                    JsonToken element;
                    while ((element = p.nextToken()) != JsonToken.END_ARRAY && element != null) {
                        nested |= element == JsonToken.START_ARRAY;
                        p.skipChildren();
                        elements++;
                    }
                    // A flat input_ids list is one tokenised prompt; a text list is a batch of prompts.
                    return name.equals("text") || nested ? elements : -1;
                }
                p.skipChildren();
            }
        } catch (IOException e) {
            return -1;
        }
        return -1;
    }

    static ObjectNode parseObject(byte[] json) throws IOException {
        if (MAPPER.readTree(json) instanceof ObjectNode object) {
            return object;
        }
        throw new IOException("expected a JSON object");
    }

    /** The two-stage prefill body: one token, no streaming, and a request to keep the KV for decode. */
    static byte[] prefillBody(ObjectNode body, boolean samplingParams) throws IOException {
        ObjectNode limits = body;
        if (samplingParams) {
            JsonNode sp = body.get("sampling_params");
            limits = sp instanceof ObjectNode existing ? existing : body.putObject("sampling_params");
        }
        limits.put("max_tokens", 1);
        if (limits.has("max_completion_tokens")) {
            limits.put("max_completion_tokens", 1);
        }
        JsonNode min = limits.get("min_tokens");
        if (samplingParams && min == null) {
            limits.put("min_tokens", 1);
        } else if (min != null && min.isNumber() && min.asLong() > 1) {
            limits.put("min_tokens", 1);
        }
        body.put("stream", false);
        body.remove("stream_options");
        ObjectNode kv = body.putObject("kv_transfer_params");
        kv.put("do_remote_decode", true);
        kv.put("do_remote_prefill", false);
        kv.putNull("remote_engine_id");
        kv.putNull("remote_block_ids");
        kv.putNull("remote_host");
        kv.putNull("remote_port");
        return MAPPER.writeValueAsBytes(body);
    }

    /** A worker's answer as a JSON object; null when it is not one. */
    static ObjectNode answerObject(byte[] reply) {
        try {
            return parseObject(reply);
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * {@code {<fields>,<rest of the original object>}}: new members first, original bytes untouched after them. The
     * result shares the rest with {@code object} (it holds a reference of its own).
     */
    static ByteBuf splice(ByteBuf object, String fields) {
        ByteBuf rest = rest(object);
        ByteBuf head = Unpooled.wrappedBuffer(head(fields, rest));
        CompositeByteBuf out = Unpooled.compositeBuffer(2);
        out.addComponents(true, head, rest.retain());
        return out;
    }

    /** {@link #splice} as a copy, for a body sent as bytes. */
    static byte[] spliceBytes(ByteBuf object, String fields) {
        ByteBuf rest = rest(object);
        byte[] head = head(fields, rest);
        byte[] out = new byte[head.length + rest.readableBytes()];
        System.arraycopy(head, 0, out, 0, head.length);
        rest.getBytes(rest.readerIndex(), out, head.length, rest.readableBytes());
        return out;
    }

    /** What follows the object's opening brace (a view of {@code object}, no reference of its own). */
    private static ByteBuf rest(ByteBuf object) {
        int open = object.forEachByte(b -> b != '{');
        return object.slice(open + 1, object.writerIndex() - open - 1);
    }

    private static byte[] head(String fields, ByteBuf rest) {
        return ("{" + fields + (isEmptyObjectTail(rest) ? "" : ",")).getBytes(StandardCharsets.UTF_8);
    }

    private static boolean isEmptyObjectTail(ByteBuf rest) {
        int i = rest.forEachByte(b -> b == ' ' || b == '\t' || b == '\n' || b == '\r');
        return i >= 0 && rest.getByte(i) == '}';
    }

    private static String quote(String s) {
        return '"' + new String(JsonStringEncoder.getInstance().quoteAsString(s)) + '"';
    }

    /** {@code json} serialised; a parsed tree always serialises. */
    static byte[] bytes(ObjectNode json) {
        try {
            return MAPPER.writeValueAsBytes(json);
        } catch (IOException e) {
            throw new IllegalStateException("a parsed JSON tree always serialises", e);
        }
    }
}

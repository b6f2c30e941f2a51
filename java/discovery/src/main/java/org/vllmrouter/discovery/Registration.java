package org.vllmrouter.discovery;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Map;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;
import org.msgpack.value.ValueFactory;
import org.vllmrouter.core.worker.WorkerRole;

/**
 * One vLLM instance's registration message: a msgpack map {@code {type: "P"|"D", http_address, zmq_address}}, as
 * vLLM's PD connectors send it (and again as a heartbeat). {@code http_address} is {@code host:port} or a URL.
 */
record Registration(WorkerRole role, String url, String zmqAddress) {

    /** A message that is not a registration; the message says what is wrong with it. */
    static final class Invalid extends Exception {
        Invalid(String message) {
            super(message);
        }
    }

    private static final Value TYPE = ValueFactory.newString("type");
    private static final Value HTTP_ADDRESS = ValueFactory.newString("http_address");
    private static final Value ZMQ_ADDRESS = ValueFactory.newString("zmq_address");

    static Registration decode(byte[] payload) throws Invalid {
        Value message;
        try (MessageUnpacker unpacker = MessagePack.newDefaultUnpacker(payload)) {
            if (!unpacker.hasNext()) {
                throw new Invalid("empty message");
            }
            message = unpacker.unpackValue();
            if (unpacker.hasNext()) {
                throw new Invalid("trailing bytes after the msgpack map");
            }
        } catch (IOException | RuntimeException e) {
            throw new Invalid("not msgpack (" + e.getMessage() + ")");
        }
        if (!message.isMapValue()) {
            throw new Invalid("expected a msgpack map, got " + message.getValueType().name().toLowerCase(java.util.Locale.ROOT));
        }
        Map<Value, Value> fields = message.asMapValue().map();
        String type = string(fields, TYPE);
        WorkerRole role = switch (type) {
            case "P" -> WorkerRole.PREFILL;
            case "D" -> WorkerRole.DECODE;
            default -> throw new Invalid("field 'type' must be \"P\" or \"D\", got \"" + type + "\"");
        };
        return new Registration(role, url(string(fields, HTTP_ADDRESS)), string(fields, ZMQ_ADDRESS));
    }

    private static String string(Map<Value, Value> fields, Value name) throws Invalid {
        Value value = fields.get(name);
        if (value == null) {
            throw new Invalid("missing field '" + name.asStringValue().asString() + "'");
        }
        if (!value.isStringValue() || value.asStringValue().asString().isEmpty()) {
            throw new Invalid("field '" + name.asStringValue().asString() + "' must be a non-empty string, got " + value);
        }
        return value.asStringValue().asString();
    }

    private static String url(String httpAddress) throws Invalid {
        String url = httpAddress.startsWith("http://") || httpAddress.startsWith("https://")
                ? httpAddress : "http://" + httpAddress;
        try {
            URI uri = new URI(url);
            if (uri.getHost() == null || uri.getPort() < 1 || (uri.getPath() != null && !uri.getPath().isEmpty())) {
                throw new Invalid("field 'http_address' must be host:port, got \"" + httpAddress + "\"");
            }
        } catch (URISyntaxException e) {
            throw new Invalid("field 'http_address' must be host:port, got \"" + httpAddress + "\"");
        }
        return url;
    }
}

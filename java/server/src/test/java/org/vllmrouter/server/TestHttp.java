package org.vllmrouter.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** Small HTTP helpers for tests: the JDK client for ordinary calls, a raw socket for malformed ones. */
final class TestHttp {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient CLIENT = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private TestHttp() {}

    static HttpResponse<String> get(String url, String... headers) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(url)).GET(), headers);
    }

    static HttpResponse<String> post(String url, String body, String... headers) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofString(body)), headers);
    }

    static HttpResponse<String> method(String method, String url, String body, String... headers)
            throws IOException, InterruptedException {
        HttpRequest.BodyPublisher publisher = body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body);
        return send(HttpRequest.newBuilder(URI.create(url)).method(method, publisher), headers);
    }

    static HttpResponse<String> send(HttpRequest.Builder builder, String... headers) throws IOException, InterruptedException {
        builder.timeout(Duration.ofSeconds(30));
        for (int i = 0; i < headers.length; i += 2) {
            builder.header(headers[i], headers[i + 1]);
        }
        return CLIENT.send(builder.build(), HttpResponse.BodyHandlers.ofString());
    }

    static JsonNode json(HttpResponse<String> response) throws IOException {
        return JSON.readTree(response.body());
    }

    static String chat(String model, String content) {
        return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}],\"max_tokens\":4}";
    }

    /** Sends raw bytes and returns the first complete response (or whatever arrived before a close or timeout). */
    static String raw(int port, String request) throws IOException {
        return exchange(port, request, true);
    }

    /** Sends raw bytes and returns everything the server wrote until it closed the connection. */
    static String rawUntilClosed(int port, String request) throws IOException {
        return exchange(port, request, false);
    }

    private static String exchange(int port, String request, boolean firstResponseOnly) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            // A bound on a broken server, never a window the answer must fit in: as long as the HTTP client's timeout.
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            try {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    got.write(buffer, 0, n);
                    if (firstResponseOnly && completeResponse(got.toString(StandardCharsets.ISO_8859_1))) {
                        break;
                    }
                }
            } catch (java.net.SocketTimeoutException e) {
                // Keep whatever arrived.
            }
            return got.toString(StandardCharsets.ISO_8859_1);
        }
    }

    /** First status code in a raw response. */
    static int status(String rawResponse) {
        return Integer.parseInt(rawResponse.substring(9, 12));
    }

    private static boolean completeResponse(String text) {
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            return false;
        }
        String head = text.substring(0, end).toLowerCase(java.util.Locale.ROOT);
        int cl = head.indexOf("content-length:");
        if (cl < 0) {
            return false;
        }
        int lineEnd = head.indexOf("\r\n", cl);
        int length = Integer.parseInt(head.substring(cl + 15, lineEnd < 0 ? head.length() : lineEnd).trim());
        return text.length() >= end + 4 + length;
    }
}

package org.vllmrouter.host;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** The few router calls the launcher tests make, over plain HTTP like any client. */
final class RouterHttp {

    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private RouterHttp() {}

    /** Sends one chat turn of {@code sessionId} and returns the id of the mock worker that answered. */
    static String chatTurn(String routerUrl, String sessionId) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(routerUrl + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .header("X-Session-ID", sessionId)
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"model\":\"mock\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"))
                .build();
        HttpResponse<String> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException("chat turn answered " + response.statusCode() + ": " + response.body());
        }
        return response.headers().firstValue("X-Worker-Id").orElseThrow();
    }

    static HttpResponse<String> get(String url) throws IOException, InterruptedException {
        return CLIENT.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> post(String url) throws IOException, InterruptedException {
        return CLIENT.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}

package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.worker.Worker;

/**
 * {@code rediss://} against a redis-server that speaks TLS with a certificate this test makes (its own CA, the
 * server's certificate for 127.0.0.1). The router trusts that CA through the JVM's trust store, as a deployment
 * with a private CA would ({@code -Djavax.net.ssl.trustStore=...} in {@code VLLM_ROUTER_JVM_OPTS}).
 */
class TlsStoreTest {
    private static final String[] TRUST_PROPERTIES = {"javax.net.ssl.trustStore", "javax.net.ssl.trustStorePassword",
            "javax.net.ssl.trustStoreType"};
    private static final String[] saved = new String[TRUST_PROPERTIES.length];
    private static RedisServer redis;
    private static int tlsPort;
    private static Path dir;

    @BeforeAll
    static void startTlsRedis() throws Exception {
        dir = Files.createTempDirectory("redis-tls-");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                "-subj", "/CN=vllm-router test CA");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                "-subj", "/CN=127.0.0.1");
        Files.writeString(dir.resolve("san.cnf"), "subjectAltName=IP:127.0.0.1\n");
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.crt", "-days", "2", "-extfile", "san.cnf");
        tlsPort = RedisServer.freePort();
        redis = RedisServer.start("--tls-port", Integer.toString(tlsPort),
                "--tls-cert-file", dir.resolve("server.crt").toString(),
                "--tls-key-file", dir.resolve("server.key").toString(),
                "--tls-ca-cert-file", dir.resolve("ca.crt").toString(),
                "--tls-auth-clients", "no",
                "--requirepass", "tls-secret");
        for (int i = 0; i < TRUST_PROPERTIES.length; i++) {
            saved[i] = System.getProperty(TRUST_PROPERTIES[i]);
        }
    }

    @AfterAll
    static void stopTlsRedis() throws Exception {
        redis.close();
        restoreTrust();
    }

    private static void restoreTrust() {
        for (int i = 0; i < TRUST_PROPERTIES.length; i++) {
            if (saved[i] == null) {
                System.clearProperty(TRUST_PROPERTIES[i]);
            } else {
                System.setProperty(TRUST_PROPERTIES[i], saved[i]);
            }
        }
    }

    private static void openssl(String... args) throws Exception {
        Process p = new ProcessBuilder(java.util.stream.Stream.concat(java.util.stream.Stream.of("openssl"),
                java.util.Arrays.stream(args)).toList()).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "openssl " + String.join(" ", args) + ": " + out);
    }

    /** A PKCS12 trust store holding the test CA, named by the JVM's trust-store properties. */
    private static void trustTestCa() throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (InputStream ca = Files.newInputStream(dir.resolve("ca.crt"))) {
            trust.setCertificateEntry("test-ca", CertificateFactory.getInstance("X.509").generateCertificate(ca));
        }
        Path file = dir.resolve("trust.p12");
        try (OutputStream out = Files.newOutputStream(file)) {
            trust.store(out, "changeit".toCharArray());
        }
        System.setProperty("javax.net.ssl.trustStore", file.toString());
        System.setProperty("javax.net.ssl.trustStorePassword", "changeit");
        System.setProperty("javax.net.ssl.trustStoreType", "PKCS12");
    }

    @Test
    void rediss_sharesSessionsOverTls() throws Exception {
        trustTestCa();
        try {
            String url = "rediss://:tls-secret@127.0.0.1:" + tlsPort + "/0";
            List<Worker> workers = List.of(Worker.builder("http://w0:1").build(), Worker.builder("http://w1:1").build());
            RedisSessionStore a = RedisSessionStore.open(url, Duration.ofMinutes(5), System::currentTimeMillis);
            RedisSessionStore b = RedisSessionStore.open(url, Duration.ofMinutes(5), System::currentTimeMillis);
            try {
                Worker first = a.table("default").route("m", "over-tls", workers).worker();
                SessionTable.Assignment onB = b.table("default").route("m", "over-tls", workers);
                assertEquals(SessionTable.Outcome.EXISTING, onB.outcome());
                assertEquals(first, onB.worker());
                assertEquals("rediss://***@127.0.0.1:" + tlsPort + "/0", a.description());
                assertEquals("1", redis.cli("-a", "tls-secret", "--no-auth-warning", "EXISTS",
                        Keys.pool("default", "m").binding("over-tls")), "the session is in the TLS server");
            } finally {
                a.close();
                b.close();
            }
        } finally {
            restoreTrust();
        }
    }

    @Test
    void anUntrustedCertificateIsAOneLineStartError() {
        SessionStoreException e = assertThrows(SessionStoreException.class, () -> RedisSessionStore.open(
                "rediss://:tls-secret@127.0.0.1:" + tlsPort, Duration.ofMinutes(5), System::currentTimeMillis));
        assertTrue(e.getMessage().startsWith("Session store rediss://***@127.0.0.1:" + tlsPort + ": "), e.getMessage());
        assertTrue(e.getMessage().contains("certification path"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
}

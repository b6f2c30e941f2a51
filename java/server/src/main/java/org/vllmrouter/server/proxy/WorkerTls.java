package org.vllmrouter.server.proxy;

import io.netty.channel.Channel;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertPathValidatorException;
import java.security.cert.Certificate;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.vllmrouter.core.config.StartEnvironment;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.vllmrouter.core.config.UrlRedaction;

/**
 * TLS to workers whose URL is {@code https}: the certificate must chain to a CA the JVM trusts or one of the PEM
 * bundle that {@code SSL_CERT_FILE} names (the variable Python's ssl module, curl and OpenSSL read), and must name
 * the URL's host (endpoint identification {@code HTTPS}); ALPN offers {@code http/1.1} only, the one protocol the
 * proxy speaks. One instance serves a router's proxy, health checks and control calls alike.
 *
 * <p>The TLS context is built on first use, on a thread of its own: loading the trust stores takes a second or more
 * on a busy machine, which a router that only speaks {@code http} should not pay at start-up and an event loop must
 * not spend. A trust bundle that cannot be read fails every {@code https} connection with a message naming it,
 * never silently.
 */
public final class WorkerTls {
    /** Names a PEM bundle of CAs to trust besides the JVM's own. */
    public static final String CERT_FILE_VARIABLE = StartEnvironment.CERT_FILE_VARIABLE;

    private final Path certFile;
    private final AtomicReference<CompletableFuture<SslContext>> context = new AtomicReference<>();

    private WorkerTls(Path certFile) {
        this.certFile = certFile;
    }

    /** The JVM's trusted CAs plus the certificates of the PEM bundle {@code certFile} (none when null). */
    public static WorkerTls trusting(Path certFile) {
        return new WorkerTls(certFile);
    }

    /**
     * Makes a freshly connected channel ready to carry HTTP to the worker at {@code baseUrl}: at once for
     * {@code http}; for {@code https} once the TLS handshake has succeeded, or failed with a
     * {@link Failure} that says why. Call on the channel's event loop.
     */
    public Future<Channel> secure(Channel channel, String baseUrl) {
        WorkerAddress address = WorkerAddress.of(baseUrl);
        if (!address.tls()) {
            return channel.eventLoop().newSucceededFuture(channel);
        }
        Promise<Channel> ready = channel.eventLoop().newPromise();
        context().whenComplete((ssl, error) -> channel.eventLoop().execute(() -> {
            if (error != null) {
                channel.close();
                ready.setFailure(new Failure(
                        "TLS to worker " + UrlRedaction.redact(baseUrl) + " is not possible: " + error.getMessage(), error));
            } else {
                handshake(channel, ssl, baseUrl, address, ready);
            }
        }));
        return ready;
    }

    private static void handshake(Channel channel, SslContext ssl, String baseUrl, WorkerAddress address,
                                  Promise<Channel> ready) {
        SslHandler handler = ssl.newHandler(channel.alloc(), address.host(), address.port());
        channel.pipeline().addFirst(handler);
        handler.handshakeFuture().addListener(handshake -> {
            if (handshake.isSuccess()) {
                ready.setSuccess(channel);
            } else {
                ready.setFailure(new Failure(
                        "TLS handshake with worker " + UrlRedaction.redact(baseUrl) + " failed: " + reason(handshake.cause(), address),
                        handshake.cause()));
            }
        });
    }

    private CompletableFuture<SslContext> context() {
        CompletableFuture<SslContext> current = context.get();
        if (current != null) {
            return current;
        }
        CompletableFuture<SslContext> building = new CompletableFuture<>();
        if (!context.compareAndSet(null, building)) {
            return context.get();
        }
        Thread.ofPlatform().daemon().name("vllm-router-tls-setup").start(() -> {
            try {
                building.complete(build(certFile));
            } catch (IOException | GeneralSecurityException | RuntimeException e) {
                building.completeExceptionally(e);
            }
        });
        return building;
    }

    private static SslContext build(Path certFile) throws IOException, GeneralSecurityException {
        TrustManagerFactory trust = jvmTrust();
        if (certFile != null) {
            trust = withBundle(trust, readBundle(certFile));
        }
        return SslContextBuilder.forClient()
                .sslProvider(SslProvider.JDK)
                .trustManager(trust)
                .endpointIdentificationAlgorithm("HTTPS")
                .applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                        ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                        ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                        ApplicationProtocolNames.HTTP_1_1))
                .build();
    }

    /** Why a handshake failed, in the words a user acts on; the JSSE message when none fits. */
    private static String reason(Throwable failure, WorkerAddress address) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof CertificateExpiredException) {
                return "certificate expired";
            }
            if (t instanceof CertificateNotYetValidException) {
                return "certificate not yet valid";
            }
            if (t instanceof CertPathBuilderException || t instanceof CertPathValidatorException) {
                return "certificate not trusted";
            }
            // The JDK's host name check throws a plain CertificateException; its wording is stable across JDKs.
            String message = t.getMessage();
            if (message != null && (message.startsWith("No subject alternative") || message.startsWith("No name matching"))) {
                return "certificate does not match host " + address.host();
            }
        }
        String message = failure == null ? null : failure.getMessage();
        return message == null ? "connection closed during the handshake" : message;
    }

    private static TrustManagerFactory jvmTrust() throws GeneralSecurityException {
        TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init((KeyStore) null);
        return factory;
    }

    /** One trust store holding the JVM's CAs and the bundle's, so one verification (and host check) covers both. */
    private static TrustManagerFactory withBundle(TrustManagerFactory jvm, Collection<? extends Certificate> bundle)
            throws GeneralSecurityException, IOException {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int n = 0;
        for (TrustManager manager : jvm.getTrustManagers()) {
            if (manager instanceof X509TrustManager x509) {
                for (X509Certificate ca : x509.getAcceptedIssuers()) {
                    store.setCertificateEntry("jvm-" + n++, ca);
                }
            }
        }
        for (Certificate ca : bundle) {
            store.setCertificateEntry(CERT_FILE_VARIABLE + "-" + n++, ca);
        }
        TrustManagerFactory combined = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        combined.init(store);
        return combined;
    }

    private static Collection<? extends Certificate> readBundle(Path certFile) throws IOException {
        Collection<? extends Certificate> certificates;
        try (InputStream in = Files.newInputStream(certFile)) {
            certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
        } catch (IOException e) {
            throw new IOException(CERT_FILE_VARIABLE + "=" + certFile + " cannot be read: " + e, e);
        } catch (GeneralSecurityException e) {
            throw new IOException(CERT_FILE_VARIABLE + "=" + certFile + " is not a PEM certificate bundle: "
                    + e.getMessage(), e);
        }
        if (certificates.isEmpty()) {
            throw new IOException(CERT_FILE_VARIABLE + "=" + certFile + " holds no certificate");
        }
        return List.copyOf(certificates);
    }

    /** TLS with a worker failed: the handshake, or the trust store it needs; the message names the worker and why. */
    public static final class Failure extends SSLException {
        private static final long serialVersionUID = 1L;

        Failure(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
